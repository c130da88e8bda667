package main

import (
	"fmt"
	"io"
	"strings"
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

// reportFaults prints what the injected faults did and when each ended.
func reportFaults(w io.Writer, port string, m simModel) {
	f, ok := m.(faultable)
	if !ok {
		return
	}
	for _, ev := range f.Injector().Events() {
		end := "still on at the end"
		switch {
		case ev.Spec.Kind == sim.FaultBusError || ev.Spec.Kind == sim.FaultDescError:
			end = "one descriptor"
		case ev.Reset:
			end = fmt.Sprintf("cleared by a device reset after %v", ev.End.Sub(ev.Start).Round(time.Microsecond))
		case !ev.End.IsZero():
			end = fmt.Sprintf("ended after %v", ev.End.Sub(ev.Start).Round(time.Microsecond))
		}
		fmt.Fprintf(w, "%s: fault %s: %s\n", port, ev.Spec, end)
	}
}
