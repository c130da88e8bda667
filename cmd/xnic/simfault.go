package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// --sim-fault KIND@AFTER[:FOR] (run, pktgen, demo): device faults injected
// into the first simulated port's model (sim/inject.go), AFTER from when the
// port is up.

// faultFlags collects repeated --sim-fault flags.
type faultFlags []sim.FaultSpec

func (f *faultFlags) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, " ")
}

func (f *faultFlags) Set(s string) error {
	spec, err := sim.ParseFaultSpec(s)
	if err != nil {
		return err
	}
	*f = append(*f, spec)
	return nil
}

// simFaultHelp describes --sim-fault.
const simFaultHelp = "with --sim: inject a device fault into the first port, KIND@AFTER[:FOR] (repeatable; AFTER from link up; xnic help lists the kinds)"

// faultKindsHelp lists the kinds for xnic help.
func faultKindsHelp(w io.Writer) {
	fmt.Fprintln(w, "\n--sim-fault KIND@AFTER[:FOR] (run, pktgen, demo; e.g. tx-hang@2s, link-down@1s:500ms):")
	for _, k := range sim.FaultKinds() {
		fmt.Fprintf(w, "  %-12s %s\n", k, k.Help())
	}
}

// faultable is a model with a fault injector.
type faultable interface{ Injector() *sim.Injector }

// startFaults schedules faults on the model and starts their clocks.
func startFaults(m simModel, faults []sim.FaultSpec) error {
	if len(faults) == 0 {
		return nil
	}
	f, ok := m.(faultable)
	if !ok {
		return usageErrorf("--sim-fault: this model takes no injected faults")
	}
	in := f.Injector()
	in.Schedule(faults...)
	in.Start()
	return nil
}

// reportFaults prints what the injected faults did and when each ended, and,
// given the gaps in what the port put on the wire (nil: not watched), the
// outage each caused: when the port's frames stopped and came back.
func reportFaults(w io.Writer, port string, m simModel, gaps *wireGaps) {
	f, ok := m.(faultable)
	if !ok {
		return
	}
	for _, ev := range f.Injector().Events() {
		end := "still on at the end"
		switch {
		case ev.Reset:
			end = fmt.Sprintf("cleared by a device reset after %v", ev.End.Sub(ev.Start).Round(time.Microsecond))
		case ev.Spec.Kind == sim.FaultBusError || ev.Spec.Kind == sim.FaultDescError:
			end = "one descriptor"
		case !ev.End.IsZero():
			end = fmt.Sprintf("ended after %v", ev.End.Sub(ev.Start).Round(time.Microsecond))
		}
		fmt.Fprintf(w, "%s: fault %s: %s%s\n", port, ev.Spec, end, gaps.outage(ev))
	}
}

// wireGapMin is the shortest stretch without a frame that wireGaps records:
// a port sending 100,000 frames a second in bursts of 32 leaves 0.3 ms
// between bursts, a loaded machine a few ms.
const wireGapMin = 5 * time.Millisecond

// wireGaps records the stretches of wireGapMin or more in which a simulated
// port put no frame on the wire (its link partner watches while faults are
// injected). Safe for concurrent use.
type wireGaps struct {
	mu    sync.Mutex
	last  time.Time // the last frame; zero before the first
	gaps  []wireGap
	ended time.Time // when the watch ended (close)
}

type wireGap struct{ from, to time.Time }

// saw notes a frame on the wire at now.
func (g *wireGaps) saw(now time.Time) {
	g.mu.Lock()
	if !g.last.IsZero() && now.Sub(g.last) >= wireGapMin && len(g.gaps) < 1024 {
		g.gaps = append(g.gaps, wireGap{g.last, now})
	}
	g.last = now
	g.mu.Unlock()
}

// close ends the watch (the partner stopped sending): a port silent since
// its last frame for wireGapMin or more never sent again.
func (g *wireGaps) close(now time.Time) {
	g.mu.Lock()
	if g.ended.IsZero() {
		g.ended = now
	}
	g.mu.Unlock()
}

// outage describes the longest gap in what the port sent that fault ev
// caused or prolonged: for a state fault (a hang, a stall, a link down) one
// overlapping it, from its start to its end (or to the end of the watch
// while it is on); for a one-shot fault (the next descriptor) one that began
// from just before its start (the port's last frame) to oneShotWindow after.
// "" without a watch.
func (g *wireGaps) outage(ev sim.FaultEvent) string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	hit := func(from, to time.Time) bool { // to zero: never came back
		end := ev.End
		if end.IsZero() {
			end = g.ended
		}
		return !to.Before(ev.Start) && !from.After(end)
	}
	if k := ev.Spec.Kind; k == sim.FaultBusError || k == sim.FaultDescError {
		lo, hi := ev.Start.Add(-2*wireGapMin), ev.Start.Add(oneShotWindow)
		hit = func(from, _ time.Time) bool { return !from.Before(lo) && !from.After(hi) }
	}
	if !g.ended.IsZero() && !g.last.IsZero() && g.ended.Sub(g.last) >= wireGapMin && hit(g.last, g.ended) {
		return fmt.Sprintf("; nothing on the wire from %v after it to the end", g.last.Sub(ev.Start).Round(time.Microsecond))
	}
	var best wireGap
	for _, x := range g.gaps {
		if hit(x.from, x.to) && (best.from.IsZero() || x.to.Sub(x.from) > best.to.Sub(best.from)) {
			best = x
		}
	}
	if best.from.IsZero() {
		return "; no outage on the wire"
	}
	return fmt.Sprintf("; nothing on the wire for %v, frames again %v after it", best.to.Sub(best.from).Round(time.Microsecond),
		best.to.Sub(ev.Start).Round(time.Microsecond))
}

// oneShotWindow is how soon after its start a one-shot fault (the next
// descriptor fetch or write-back) shows on a port carrying traffic.
const oneShotWindow = 100 * time.Millisecond
