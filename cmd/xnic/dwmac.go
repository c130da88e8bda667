package main

import (
	"fmt"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
)

// dwmacSupported reports whether the dwmac driver claims a PCI device (Intel
// mGbE): its own ID table decides.
func dwmacSupported(vendor, device uint16) bool {
	_, ok := dwmac.Lookup(vendor, device)
	return ok
}

func dwmacConfig(o portOptions) dwmac.Config {
	return dwmac.Config{Queues: o.Queues, RxRingSize: o.RingSize, TxRingSize: o.RingSize,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout}
}

// newSimDWMAC builds a DWC EQoS model: an Alder Lake-S mGbE (variant "intel")
// or an i.MX8M Plus EQOS ("imx8mp", not cache coherent, as the SoC is), with
// enough DMA channels for o.Queues.
func newSimDWMAC(variant string, o portOptions) (*dwmacsim.Model, error) {
	cfg := dwmacsim.Config{AutonegDelay: simAutonegDelay, MAC: o.SimMAC, Name: o.SimName}
	if variant == "imx8mp" {
		cfg.Variant, cfg.NonCoherent = dwmacsim.IMX8MP, true
	}
	if o.Queues > 4 {
		cfg.Channels = min(o.Queues, 8)
	}
	m, err := dwmacsim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulated dwmac: %w", err)
	}
	return m, nil
}

// dwmacModel adapts the dwmac model to simModel.
type dwmacModel struct{ *dwmacsim.Model }

func (m dwmacModel) NICDevice() nic.Device { return m.Device() }
func (m dwmacModel) WireFrames() uint64    { return m.Counters().TxFrames }

// InjectBurst delivers frames back to back; it returns how many the port took.
func (m dwmacModel) InjectBurst(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		if m.Inject(f) {
			n++
		}
	}
	return n
}

var _ nic.Port = (*dwmac.Port)(nil)
