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

// igbSimDevices are the PCI device IDs of the igb model's variants.
var igbSimDevices = map[string]uint16{"82576": 0x10C9, "i350": 0x1521, "i210": 0x1533, "i211": 0x1539}

// newSimIGB builds an igb model of the variant (82576, i350, i210, i211; ""
// is 82576) with the model's default queues (4; 2 on the I211) or o.Queues
// when more, and o's factory MAC and name when given.
func newSimIGB(variant string, o portOptions) (*igbsim.Model, error) {
	cfg := igbsim.Config{DeviceID: igbSimDevices[variant], AutonegDelay: simAutonegDelay, MAC: o.SimMAC, Name: o.SimName}
	if o.Queues > 4 {
		cfg.Queues = o.Queues
	}
	m, err := igbsim.New(cfg)
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
