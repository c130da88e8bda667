package main

import (
	"fmt"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
)

// igbSupported reports whether the igb driver claims a PCI device: its own ID
// table decides.
func igbSupported(vendor, device uint16) bool {
	_, ok := igb.Lookup(vendor, device)
	return ok
}

func igbConfig(o portOptions) igb.Config {
	return igb.Config{Queues: o.Queues, RxRingSize: o.RingSize, TxRingSize: o.RingSize,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout}
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

// igbModel adapts the igb model to simModel.
type igbModel struct{ *igbsim.Model }

func (m igbModel) NICDevice() nic.Device { return m.Device() }
func (m igbModel) WireFrames() uint64    { return m.Counters().TxFrames }

var _ nic.Port = (*igb.Port)(nil)
