package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane/events"
)

// xnic prog events: what a running program sends to user space, ring buffer
// records and perf samples, decoded by their BTF types where the object
// names them (package events). The run drains them every eventInterval in
// its own goroutine, prints each on stderr (as it printed perf samples
// before), and hands each to the followers of `xnic prog events --control
// PORT`.

func init() {
	register(&command{name: "prog events", usage: "--control PORT [--count N] [--duration D] [--json]",
		summary: "print the ring buffer records and perf samples of a running program, decoded by BTF", run: runProgEvents})
}

// eventInterval is how often a run drains its ring buffers and perf arrays.
const eventInterval = 5 * time.Millisecond

// eventBacklog bounds a follower's queue; a slow follower loses events
// (counted in the next one's Lost... as `lost`).
const eventBacklog = 4096

// eventHub drains a run's events and fans them out.
type eventHub struct {
	mu   sync.Mutex
	sink *perfSink                     // guarded by mu; its reader follows the running program
	subs map[chan *events.Event]uint64 // followers and what each lost; guarded by mu
	quit chan struct{}
	done chan struct{}
}

func newEventHub(rp *runProgram, text io.Writer, perfPcap string) (*eventHub, error) {
	sink, err := openPerfSink(rp.coll, rp.spec.Types, text, perfPcap)
	if err != nil {
		return nil, err
	}
	h := &eventHub{sink: sink, subs: map[chan *events.Event]uint64{}, quit: make(chan struct{}), done: make(chan struct{})}
	sink.tee = h.fanOut
	go h.loop()
	return h, nil
}

// loop runs in its own goroutine until close.
func (h *eventHub) loop() {
	defer close(h.done)
	t := time.NewTicker(eventInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
			h.drain()
		}
	}
}

// drain takes every waiting record now.
func (h *eventHub) drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.sink.drain(-1, time.Now()); err != nil {
		fmt.Fprintf(h.sink.text, "xnic run: events: %v\n", err)
	}
}

// fanOut hands e to every follower; called with mu held.
func (h *eventHub) fanOut(e *events.Event) {
	for c, lost := range h.subs {
		if lost > 0 {
			e2 := *e
			e2.Lost += lost
			e = &e2
		}
		select {
		case c <- e:
			h.subs[c] = 0
		default:
			h.subs[c] = lost + 1
		}
	}
}

// rebind follows the maps of a newly loaded program.
func (h *eventHub) rebind(rp *runProgram) error {
	r, err := events.NewReader(rp.coll, rp.spec.Types)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.sink.drain(-1, time.Now()) // what the old maps still hold
	h.sink.r = r
	return nil
}

func (h *eventHub) close() {
	select {
	case <-h.quit:
	default:
		close(h.quit)
	}
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		close(c)
		delete(h.subs, c)
	}
	if err := h.sink.close(); err != nil {
		fmt.Fprintf(h.sink.text, "xnic run: --perf-pcap: %v\n", err)
	}
}

// stream sends events to a follower until it hangs up or the run ends.
func (h *eventHub) stream(sc *control.StreamConn) error {
	c := make(chan *events.Event, eventBacklog)
	h.mu.Lock()
	select {
	case <-h.quit:
		h.mu.Unlock()
		return fmt.Errorf("the run is ending")
	default:
	}
	h.subs[c] = 0
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}()
	if err := sc.Begin(); err != nil {
		return nil
	}
	for {
		select {
		case e, ok := <-c:
			if !ok || sc.Send(e) != nil {
				return nil
			}
		case <-sc.Gone:
			return nil
		case <-sc.Stop:
			return nil
		}
	}
}

func runProgEvents(args []string, stdout, stderr io.Writer) error {
	var ctl string
	var count int
	var dur time.Duration
	var asJSON bool
	fs := newFlags("prog events", stderr)
	controlFlag(fs, &ctl)
	fs.IntVar(&count, "count", 0, "stop after this many events (0: until interrupted)")
	fs.DurationVar(&dur, "duration", 0, "stop after this long (0: until interrupted)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object per event")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && ctl == "" {
		ctl, pos = pos[0], nil
	}
	if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	if count < 0 || dur < 0 {
		return usageErrorf("--count and --duration take positive values")
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program's events to follow")
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	stop, cancel := interrupted()
	defer cancel()
	n := 0
	return control.Follow(path, control.Request{Cmd: control.CmdEvents}, stop, dur, func(raw json.RawMessage) error {
		var e events.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("control socket %s: %s is no event", path, raw)
		}
		if asJSON {
			if err := writeJSONLine(stdout, &e); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(stdout, e.String())
		}
		if n++; count > 0 && n >= count {
			return io.EOF
		}
		return nil
	})
}
