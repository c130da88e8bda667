package main

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
)

// The igb family: Intel 82576, I350, I210, I211 on PCI.
func init() {
	registerFamily(&familyDriver{
		name:  "igb",
		order: 1,
		about: "Intel 82576, I350, I210 and I211 on PCI (VFIO)",
		claimsPCI: func(vendor, device uint16) bool {
			_, ok := igb.Lookup(vendor, device)
			return ok
		},
		// The -serdes variants are fiber/SerDes ports: their link is the
		// PCS's (1000BASE-X), with no PHY on MDIO.
		simVariants:    []string{"82576", "i350", "i210", "i211", "82576-serdes", "i350-serdes", "i210-serdes"},
		pciSimVariants: []string{"82576", "i350", "i210", "i211"},
		newSim: func(variant string, o portOptions) (simModel, error) {
			m, err := newSimIGB(variant, o)
			if err != nil {
				return nil, err
			}
			return igbModel{m}, nil
		},
		open: func(dev nic.Device, o portOptions) (familyPort, error) {
			cfg := igbConfig(o)
			if o.RxMeta {
				// Timestamps on the parts with the I210's clock (I210
				// datasheet 7.8); tags stripped into the descriptor.
				cfg.VLANStrip = true
				info := dev.Info()
				if m, ok := igb.Lookup(info.Vendor, info.Device); ok && (m.MAC == igb.MACI210 || m.MAC == igb.MACI211) {
					cfg.RxTimestamp = true
				}
			}
			p, err := igb.Open(dev, cfg)
			if err != nil {
				return nil, err
			}
			return igbPort{p}, nil
		},
		dumpRegs: func(regs nic.Regs, queues int) regDump { return igb.DumpRegs(regs, queues) },
		facts:    igb.Facts(),
		// EITR's interval field, bits 14:2, in microseconds (82576 8.8.12).
		moderation: fieldModeration("EITR%d", 0x7FFC, 2),
	})
}

func igbConfig(o portOptions) igb.Config {
	rx, tx := o.rings()
	return igb.Config{Queues: o.Queues, RxRingSize: rx, TxRingSize: tx,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout,
		ITR: time.Duration(o.RxUsecs) * time.Microsecond}
}

// igbPort is the igb driver's port as the CLI shows it.
type igbPort struct{ *igb.Port }

func (p igbPort) Dump() regDump { return p.Port.Dump() }

func (p igbPort) Describe(pi *portInfo) {
	m := p.Model()
	pi.Model, pi.MaxQueues = m.Name, m.Queues
	pi.PHYID = fmt.Sprintf("0x%08x", p.PHYID())
	if p.Media() == igb.MediaSerDes {
		how := "PCS autonegotiation"
		if !p.PCSAutoneg() {
			how = "forced 1000 full"
		}
		pi.Variant = "SerDes (1000BASE-X, " + how + ")"
		pi.PHYID = "none (SerDes: the link is the PCS's)"
	}
	pi.Warnings = p.Warnings()
}

// igbSimDevices are the PCI device IDs of the igb model's variants.
var igbSimDevices = map[string]uint16{"82576": 0x10C9, "i350": 0x1521, "i210": 0x1533, "i211": 0x1539,
	"82576-serdes": 0x10E7, "i350-serdes": 0x1522, "i210-serdes": 0x1537}

// newSimIGB builds an igb model of the variant (82576, i350, i210, i211; ""
// is 82576) with the model's default queues (4; 2 on the I211) or o.Queues
// when more, and o's factory MAC and name when given.
func newSimIGB(variant string, o portOptions) (*igbsim.Model, error) {
	cfg := igbsim.Config{DeviceID: igbSimDevices[variant], AutonegDelay: simAutonegDelay, BreakLink: o.SimBreakLink, MAC: o.SimMAC, Name: o.SimName, Sched: schedFor(o)}
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
func (m igbModel) ModelCounters() any    { return m.Counters() }

var _ familyPort = igbPort{}
