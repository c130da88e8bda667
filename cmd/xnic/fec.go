package main

import (
	"time"

	"fmt"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
)

// The fec family: NXP FEC/ENET platform devices of i.MX8M, i.MX7, i.MX6 and
// Vybrid.
func init() {
	registerFamily(&familyDriver{
		name:  "fec",
		order: 3,
		about: "NXP FEC/ENET of i.MX8M, i.MX7, i.MX6 and Vybrid on the platform bus",
		knowsCompatible: func(c string) bool {
			_, ok := fec.LookupCompatible(c)
			return ok
		},
		compatibles: func() []string {
			var cs []string
			for _, v := range fec.Variants() {
				cs = append(cs, v.Compatible)
			}
			return cs
		},
		aliases: map[string]string{"fec": "fsl,imx8mp-fec"},
		// The ENET's registers fit in 16 KiB (imx6qdl.dtsi gives
		// ethernet@2188000 0x4000; imx8mp.dtsi reserves 0x10000 at 30be0000,
		// of which the same 16 KiB hold registers); its buffer descriptors
		// carry 32-bit addresses.
		platformExample: "fec@0x30be0000",
		window:          0x4000,
		dmaLimit:        1 << 32,
		simVariants:     []string{"imx8mp", "imx6"},
		newSim: func(variant string, o portOptions) (simModel, error) {
			m, err := newSimFEC(variant, o)
			if err != nil {
				return nil, err
			}
			return fecModel{m}, nil
		},
		open: func(dev nic.Device, o portOptions) (familyPort, error) {
			cfg := fecConfig(o)
			// Every frame's 1588 timer value in the enhanced BD; the
			// VLAN tag the enhanced BD reports without asking.
			cfg.RxTimestamp = o.RxMeta
			if o.PHYAddrSet {
				cfg.PHYAddr, cfg.PHYAddrZero = o.PHYAddr, o.PHYAddr == 0
			}
			if o.MDIOWindow > 0 {
				bus, err := dev.Regs(o.MDIOWindow)
				if err != nil {
					return nil, fmt.Errorf("the MDIO bus owner's registers: %w", err)
				}
				cfg.MDIOBus = bus
			}
			p, err := fec.Open(dev, cfg)
			if err != nil {
				return nil, err
			}
			return fecPort{p}, nil
		},
		dumpRegs:   func(regs nic.Regs, queues int) regDump { return fec.DumpRegs(regs, queues) },
		facts:      fec.Facts(),
		moderation: fecModeration(),
	})
}

// fecModeration is RXICn (fec/coalesce.go): the interval in 64-cycle periods
// of the system clock, with the frame threshold kept (Linux's 200 when it
// was 0). The i.MX6 ENET has no RXIC: its dump has none, so coalesce says
// so.
func fecModeration() *interruptModeration {
	return &interruptModeration{reg: "RXIC%d", maxUsecs: int(fec.MaxCoalesce(0) / time.Microsecond),
		usecs: func(v uint32) int {
			d, _ := fec.CoalesceSetting(v, 0)
			return int(d / time.Microsecond)
		},
		with: func(v uint32, usecs int) uint32 {
			frames := int(v >> 20 & 0xFF)
			if frames == 0 {
				frames = fec.DefaultCoalesceFrames
			}
			nv, err := fec.CoalesceValue(time.Duration(usecs)*time.Microsecond, frames, 0)
			if err != nil { // usecs is within maxUsecs: cannot happen
				return v
			}
			return nv
		}}
}

func fecConfig(o portOptions) fec.Config {
	rx, tx := o.rings()
	return fec.Config{Queues: o.Queues, RxRingSize: rx, TxRingSize: tx,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout,
		RxCoalesce: time.Duration(o.RxUsecs) * time.Microsecond}
}

// fecPort is the fec driver's port as the CLI shows it.
type fecPort struct{ *fec.Port }

func (p fecPort) Dump() regDump { return p.Port.Dump() }

func (p fecPort) Describe(pi *portInfo) {
	v := p.Variant()
	pi.Model, pi.MaxQueues = v.Name+" ENET", v.Queues
	pi.Variant = v.Compatible
	pi.PHYID = fmt.Sprintf("0x%08x", p.PHYID())
	pi.Warnings = p.Warnings()
}

// newSimFEC builds an ENET model: the i.MX8M Plus (variant "imx8mp", three
// rings) or the single-ring i.MX6 class ("imx6"), not cache coherent, as the
// SoCs are.
func newSimFEC(variant string, o portOptions) (*fecsim.Model, error) {
	cfg := fecsim.Config{AutonegDelay: simAutonegDelay, BreakLink: o.SimBreakLink, MAC: o.SimMAC, Name: o.SimName, Sched: schedFor(o)}
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
func (m fecModel) ModelCounters() any    { return m.Counters() }

// InjectBurst delivers frames back to back; it returns how many the port took.
func (m fecModel) InjectBurst(frames [][]byte) int { return injectEach(m.Inject, frames) }

var _ familyPort = fecPort{}
