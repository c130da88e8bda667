package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane"
)

// xnic stats --watch: a running port's rates per RX queue, every interval,
// from the run's counters (like watching ethtool -S, or a top of the port):
// frames received and per verdict, and the drops (the device's, for want of
// a buffer or ring room, and the dataplane's).

// statsWatch are stats' --watch flags.
type statsWatch struct {
	every time.Duration
	count int
}

func (w *statsWatch) flags(fs *flag.FlagSet) {
	fs.DurationVar(&w.every, "watch", 0, "print the running port's per-queue rates and drops every D (e.g. 1s) until interrupted")
	fs.IntVar(&w.count, "count", 0, "with --watch: stop after N lines per queue (0: until interrupted)")
}

func (w *statsWatch) check() error {
	switch {
	case w.every < 0 || (w.every > 0 && w.every < 10*time.Millisecond):
		return usageErrorf("--watch %v: want 10ms or more", w.every)
	case w.count < 0:
		return usageErrorf("--count %d: want 0 or more", w.count)
	case w.count > 0 && w.every == 0:
		return usageErrorf("--count goes with --watch")
	}
	return nil
}

// watchLine is one queue's rates over one interval.
type watchLine struct {
	Time  string             `json:"time"`
	Port  string             `json:"port"`
	Queue int                `json:"queue"`
	Rates map[string]float64 `json:"rates"` // per second, by counter
	Drops float64            `json:"drops_per_s"`
}

// watchCounters are the per-queue counters a line shows, in order.
var watchCounters = []string{"rx_packets", "rx_xdp_drop", "rx_xdp_pass", "rx_xdp_tx", "rx_xdp_redirect", "rx_xdp_aborted"}

// watchDrops are the counters of frames lost rather than given a verdict.
var watchDrops = []string{"rx_xdp_pass_errors", "rx_xdp_redirect_errors", "rx_xdp_tx_errors", "no_buffer_drops", "ring_full_drops"}

func (w *statsWatch) watch(path string, asJSON bool, stdout io.Writer) error {
	stop, cancel := interrupted()
	defer cancel()
	prev, err := control.Call(path, control.Request{Cmd: control.CmdStats})
	if err != nil {
		return err
	}
	t0 := time.Now()
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for n := 0; w.count == 0 || n < w.count; n++ {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		cur, err := control.Call(path, control.Request{Cmd: control.CmdStats})
		if err != nil {
			return err
		}
		t1 := time.Now()
		for _, l := range watchLines(&prev, &cur, t1.Sub(t0), t1) {
			if asJSON {
				b, _ := json.Marshal(l)
				fmt.Fprintf(stdout, "%s\n", b)
				continue
			}
			fmt.Fprintf(stdout, "%s %s queue %d:", l.Time, l.Port, l.Queue)
			for _, c := range watchCounters {
				fmt.Fprintf(stdout, " %s %s pps", c, dataplane.Group(l.Rates[c]))
			}
			fmt.Fprintf(stdout, "; drops %s/s\n", dataplane.Group(l.Drops))
		}
		prev, t0 = cur, t1
	}
	return nil
}

// watchLines are the per-queue rates between two answers, with the device's
// drops counted on the port's first queue line.
func watchLines(prev, cur *control.Response, dt time.Duration, now time.Time) []watchLine {
	secs := dt.Seconds()
	old := map[int]map[string]uint64{}
	for _, q := range prev.Queues {
		old[q.Queue] = q.Counters
	}
	var out []watchLine
	for _, q := range cur.Queues {
		l := watchLine{Time: now.UTC().Format("15:04:05.000"), Port: cur.Port, Queue: q.Queue, Rates: map[string]float64{}}
		for name, v := range q.Counters {
			if o := old[q.Queue][name]; v >= o {
				l.Rates[name] = float64(v-o) / secs
			}
		}
		for _, d := range watchDrops {
			l.Drops += l.Rates[d]
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	if len(out) > 0 {
		hw := func(r *control.Response) uint64 { // the device's drops, as run's hw_drop_pps counts them
			total, _ := dataplane.HardwareDrops(&dataplane.PortStats{Hardware: r.Counters})
			return total
		}
		if a, b := hw(prev), hw(cur); b >= a {
			out[0].Drops += float64(b-a) / secs
		}
	}
	return out
}
