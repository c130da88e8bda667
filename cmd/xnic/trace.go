package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/xnic-dev/xnic/control"
)

// bpf_printk output of a running program: the run hands a traceHub to the
// loader as Options.Trace, and `xnic prog trace --control PORT` follows it
// through the control socket, like reading trace_pipe. The hub keeps the
// last traceBacklog lines for a follower that connects late; a follower that
// cannot keep up loses lines (counted), the program never waits for it.

func init() {
	register(&command{name: "prog trace", usage: "--control PORT [--lines N] [--duration D]",
		summary: "follow bpf_printk output of the program a running `xnic run` runs", run: runProgTrace})
}

// traceBacklog is how many recent lines a new follower gets first.
const traceBacklog = 256

// traceHub receives bpf_trace_printk lines (from any poll goroutine) and
// hands them to followers. Safe for concurrent use. Without followers a line
// costs a copy into a reused backlog slot: no allocation once the slots have
// grown; each follower gets its own copy.
type traceHub struct {
	mu      sync.Mutex
	backlog [traceBacklog][]byte // ring of recent lines; guarded by mu
	next, n int                  // next slot to write, lines held; guarded by mu
	subs    map[chan []byte]struct{}
	dropped uint64 // lines a slow follower missed; guarded by mu
}

func newTraceHub() *traceHub { return &traceHub{subs: map[chan []byte]struct{}{}} }

// Write takes one line (the helper writes one per call). It copies p: the
// caller's buffer is reused.
func (h *traceHub) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.backlog[h.next] = append(h.backlog[h.next][:0], line...)
	h.next = (h.next + 1) % traceBacklog
	h.n = min(h.n+1, traceBacklog)
	for c := range h.subs {
		select {
		case c <- append([]byte(nil), line...):
		default:
			h.dropped++
		}
	}
	return len(p), nil
}

// subscribe returns a copy of the backlog and a channel of the lines after it.
func (h *traceHub) subscribe() ([][]byte, chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan []byte, 4096)
	h.subs[c] = struct{}{}
	out := make([][]byte, 0, h.n)
	for i := range h.n {
		out = append(out, append([]byte(nil), h.backlog[(h.next-h.n+i+traceBacklog)%traceBacklog]...))
	}
	return out, c
}

func (h *traceHub) unsubscribe(c chan []byte) {
	h.mu.Lock()
	delete(h.subs, c)
	h.mu.Unlock()
}

// streamTrace sends the backlog and then each new line on sc, one JSON
// string per line, until the follower hangs up or the run ends.
func (h *traceHub) streamTrace(sc *control.StreamConn) error {
	backlog, ch := h.subscribe()
	defer h.unsubscribe(ch)
	if err := sc.Begin(); err != nil {
		return nil
	}
	for _, l := range backlog {
		if sc.Send(string(l)) != nil {
			return nil
		}
	}
	for {
		select {
		case l := <-ch:
			if sc.Send(string(l)) != nil {
				return nil
			}
		case <-sc.Gone:
			return nil
		case <-sc.Stop:
			return nil
		}
	}
}

func runProgTrace(args []string, stdout, stderr io.Writer) error {
	var ctl string
	var lines int
	var dur time.Duration
	fs := newFlags("prog trace", stderr)
	controlFlag(fs, &ctl)
	fs.IntVar(&lines, "lines", 0, "stop after this many lines (0: until interrupted)")
	fs.DurationVar(&dur, "duration", 0, "stop after this long (0: until interrupted)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program to follow")
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	stop := make(chan struct{})
	go func() {
		if _, ok := <-sig; ok {
			close(stop)
		}
	}()
	n := 0
	return control.Follow(path, control.Request{Cmd: control.CmdTrace}, stop, dur, func(raw json.RawMessage) error {
		var l string
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("control socket %s: %s is no trace line", path, raw)
		}
		fmt.Fprintln(stdout, l)
		if n++; lines > 0 && n >= lines {
			return io.EOF
		}
		return nil
	})
}
