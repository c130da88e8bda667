package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// Simulated ports: --sim KIND[:VARIANT][:N] names a model of one of the driver
// families (and how many ports, for run, pktgen and demo).

// simAutonegDelay is how long the simulated PHY takes to bring the link up:
// short, so commands on --sim ports answer at once.
const simAutonegDelay = 20 * time.Millisecond

// simBreakLink is how long the PHY of a served model (xnic serve) keeps a
// link that was up down when its autonegotiation restarts: the standard's
// minimum break_link_timer (IEEE 802.3 28.3.2, sim.BreakLinkMin), as a real
// port's PHY does. Linux's phylib polls the PHY once a second: a
// renegotiation shorter than that (from 100 to 1000 Mb/s after ethtool -s)
// would go unseen, and the MAC would stay programmed for the old speed.
// run, pktgen and demo keep 0: xnic's igb restarts autonegotiation when it
// resets the device to recover from a fault (--sim-fault), and a 1.2 s
// outage after each would outlast the recoveries those commands show (with
// it, TestRunSimFaultTxHangRecovers and TestSoakFaults see no frames back).
const simBreakLink = sim.BreakLinkMin

// simChoices describes the --sim values, for help and error messages.
func simChoices() string {
	var parts []string
	for _, f := range families {
		parts = append(parts, string(f.name)+" ("+strings.Join(f.simVariants, ", ")+")")
	}
	return strings.Join(parts, "; ")
}

// simHelp is the --sim flag's description; multi for commands that open
// several ports.
func simHelp(multi bool) string {
	if multi {
		return "simulated ports: KIND[:VARIANT][:N], N ports of a model; KIND (VARIANTs, the first the default): " +
			simChoices() + " (e.g. " + simExamples(2) + ")"
	}
	return "a simulated port: KIND[:VARIANT]; KIND (VARIANTs, the first the default): " + simChoices() +
		" (e.g. " + simExamples(1) + ")"
}

// simSpec is a parsed --sim value.
type simSpec struct {
	Fam     family
	Variant string // never empty after parseSim
	N       int    // ports, 1 unless given
}

func (s simSpec) String() string { return string(s.Fam) + ":" + s.Variant }

// parseSim reads KIND[:VARIANT][:N] (a '/' before the variant is accepted
// too): "igb", "igb:2", "fec:imx6", "dwmac/imx8mp:2". A part that names one of
// the kind's variants is the variant (igb's "82576" too); a number after it is
// N.
func parseSim(s string) (simSpec, error) {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '/' })
	if len(parts) == 0 || len(parts) > 3 {
		return simSpec{}, usageErrorf("--sim %q: want KIND[:VARIANT][:N]; the kinds and variants are: %s", s, simChoices())
	}
	for _, f := range families {
		if string(f.name) != parts[0] || f.newSim == nil {
			continue
		}
		spec := simSpec{Fam: f.name, Variant: f.simVariants[0], N: 1}
		rest := parts[1:]
		if len(rest) > 0 && slices.Contains(f.simVariants, rest[0]) {
			spec.Variant, rest = rest[0], rest[1:]
		}
		switch len(rest) {
		case 0:
			return spec, nil
		case 1:
			n, err := strconv.Atoi(rest[0])
			if err != nil {
				return simSpec{}, usageErrorf("--sim %s: no %s variant %q; the variants are: %s (and :N, a number of ports)",
					s, f.name, rest[0], strings.Join(f.simVariants, ", "))
			}
			if n < 1 || n > 16 {
				return simSpec{}, usageErrorf("--sim %s: want N from 1 to 16 ports", s)
			}
			spec.N = n
			return spec, nil
		}
		return simSpec{}, usageErrorf("--sim %q: want KIND[:VARIANT][:N]; the %s variants are: %s", s, f.name, strings.Join(f.simVariants, ", "))
	}
	return simSpec{}, usageErrorf("--sim %q: no simulated %q; the kinds and variants are: %s", s, parts[0], simChoices())
}

// simModel is what the CLI asks of a model of any family: its device, its
// wire, and the link partner's side of it (Inject, SetTransmit).
type simModel interface {
	NICDevice() nic.Device
	// Attach connects the model's wire to one end of a link.
	Attach(sim.Link)
	// Inject delivers one frame from the wire; false when the port dropped it.
	Inject(frame []byte) bool
	// InjectBurst delivers frames back to back and returns how many the port took.
	InjectBurst(frames [][]byte) int
	// SetTransmit sets what receives the frames the port puts on the wire.
	SetTransmit(func(frame []byte))
	// WireFrames counts frames the model put on the wire.
	WireFrames() uint64
	// ModelCounters are the model's own counters (its Counters()), for
	// reports.
	ModelCounters() any
	// Err reports the faults the model recorded (a driver's misuse).
	Err() error
	Close() error
}

// simPort is what stands behind a --sim port: the model, and the far end of an
// in-memory wire attached to it (frames the port sends arrive there; frames
// sent there arrive at the port) unless the port was opened detached.
type simPort struct {
	Spec  simSpec
	Model simModel
	Peer  *sim.PairEnd
}

// simAsyncHelp describes --sim-async.
const simAsyncHelp = "with --sim: the model's device side runs on its own time (DMA, MDIO and reset finish microseconds after the register write, as in the driver tests); default: inside the write, so the model keeps up with the dataplane"

// schedFor is the device side a CLI model gets: synchronous unless asked.
func schedFor(o portOptions) sim.SchedConfig { return sim.SchedConfig{Sync: !o.SimAsync} }

// newSimModel builds the model spec names.
func newSimModel(spec simSpec, o portOptions) (simModel, error) {
	if f := familyByName(spec.Fam); f != nil && f.newSim != nil {
		return f.newSim(spec.Variant, o)
	}
	return nil, usageErrorf("--sim %s: no such model; the kinds and variants are: %s", spec, simChoices())
}

// injectEach delivers frames one by one with inject, for models without a
// burst injection of their own; it returns how many the port took.
func injectEach(inject func([]byte) bool, frames [][]byte) int {
	n := 0
	for _, f := range frames {
		if inject(f) {
			n++
		}
	}
	return n
}

// openSimPort builds the simulated device o.Sim names and opens its driver on
// it.
func openSimPort(o portOptions) (*openedPort, error) {
	spec, err := parseSim(o.Sim)
	if err != nil {
		return nil, err
	}
	m, err := newSimModel(spec, o)
	if err != nil {
		return nil, err
	}
	var peer *sim.PairEnd
	if !o.SimDetached {
		var portEnd *sim.PairEnd
		portEnd, peer = sim.NewPair()
		m.Attach(portEnd)
	}
	if o.LinkTimeout == 0 {
		o.LinkTimeout = 3 * time.Second
	}
	op, err := openDriver(m.NICDevice(), spec.Fam, o)
	if err != nil {
		ferr := m.Err()
		m.Close()
		if ferr != nil {
			return nil, fmt.Errorf("simulated %s: %w (the model recorded: %v)", spec, err, ferr)
		}
		return nil, fmt.Errorf("simulated %s: %w", spec, err)
	}
	op.Sim = &simPort{Spec: spec, Model: m, Peer: peer}
	op.closers = append(op.closers, func() error {
		if err := m.Err(); err != nil {
			m.Close()
			return fmt.Errorf("the %s model recorded faults: %w", spec, err)
		}
		return m.Close()
	})
	if err := checkLink(op, o); err != nil {
		op.Close()
		return nil, err
	}
	if err := startFaults(m, o.SimFaults); err != nil { // simfault.go
		op.Close()
		return nil, err
	}
	return op, nil
}
