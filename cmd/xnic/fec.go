package main

import (
	"fmt"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
)

func fecConfig(o portOptions) fec.Config {
	return fec.Config{Queues: o.Queues, RxRingSize: o.RingSize, TxRingSize: o.RingSize,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout}
}

// newSimFEC builds an ENET model: the i.MX8M Plus (variant "imx8mp", three
// rings) or the single-ring i.MX6 class ("imx6"), not cache coherent, as the
// SoCs are.
func newSimFEC(variant string, o portOptions) (*fecsim.Model, error) {
	cfg := fecsim.Config{AutonegDelay: simAutonegDelay, MAC: o.SimMAC, Name: o.SimName}
	if variant == "imx6" {
		cfg.Variant = fecsim.IMX6
	}
	m, err := fecsim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulated fec: %w", err)
	}
	return m, nil
}

// fecModel adapts the FEC model to simModel.
type fecModel struct{ *fecsim.Model }

func (m fecModel) NICDevice() nic.Device { return m.Device() }
func (m fecModel) WireFrames() uint64    { return m.Counters().TxFrames }

// InjectBurst delivers frames back to back; it returns how many the port took.
func (m fecModel) InjectBurst(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		if m.Inject(f) {
			n++
		}
	}
	return n
}

var _ nic.Port = (*fec.Port)(nil)
