package main

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// igbSupported reports whether the igb driver claims a PCI device: its own ID
// table decides.
func igbSupported(vendor, device uint16) bool {
	_, ok := igb.Lookup(vendor, device)
	return ok
}

// simAutonegDelay is how long the simulated PHY takes to bring the link up:
// short, so commands on --sim ports answer at once.
const simAutonegDelay = 20 * time.Millisecond

// simPort is what stands behind a --sim port: the model, and the far end of an
// in-memory wire attached to it (frames the port sends arrive there; frames
// sent there arrive at the port).
type simPort struct {
	IGB  *igbsim.Model
	Peer *sim.PairEnd
}

// openSimPort builds a simulated device of the named family and opens its
// driver on it.
func openSimPort(o portOptions) (*openedPort, error) {
	switch o.Sim {
	case "igb":
	default:
		return nil, usageErrorf("--sim %q: the simulated devices are: igb", o.Sim)
	}
	m, err := newSimIGB(o)
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
	op, err := openDriver(m.Device(), o)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("simulated igb: %w (model faults: %v)", err, m.Err())
	}
	op.Sim = &simPort{IGB: m, Peer: peer}
	op.closers = append(op.closers, func() error {
		if err := m.Err(); err != nil {
			m.Close()
			return fmt.Errorf("the igb model recorded faults: %w", err)
		}
		return m.Close()
	})
	if err := checkLink(op, o); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

// newSimIGB builds an 82576 model with at least o.Queues queues (4 at least),
// and o's factory MAC and name when given.
func newSimIGB(o portOptions) (*igbsim.Model, error) {
	m, err := igbsim.New(igbsim.Config{AutonegDelay: simAutonegDelay, Queues: max(o.Queues, 4), MAC: o.SimMAC, Name: o.SimName})
	if err != nil {
		return nil, fmt.Errorf("simulated igb: %w", err)
	}
	return m, nil
}

var _ nic.Port = (*igb.Port)(nil)
