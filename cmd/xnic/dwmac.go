package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
)

// The dwmac family: Synopsys DWC Ethernet QoS, as Intel mGbE on PCI and as the
// i.MX8M Plus EQOS platform device.
func init() {
	registerFamily(&familyDriver{
		name:  "dwmac",
		order: 2,
		about: "Synopsys DWC Ethernet QoS: Intel mGbE on PCI, the i.MX8M Plus EQOS on the platform bus",
		claimsPCI: func(vendor, device uint16) bool {
			_, ok := dwmac.Lookup(vendor, device)
			return ok
		},
		knowsCompatible: func(c string) bool {
			_, ok := dwmac.LookupCompatible(c)
			return ok
		},
		compatibles: func() []string { return []string{dwmac.CompatibleIMX8MP} },
		aliases:     map[string]string{"eqos": dwmac.CompatibleIMX8MP, "dwmac": dwmac.CompatibleIMX8MP},
		// imx8mp.dtsi ethernet@30bf0000 has a 64 KiB register window; the EQOS
		// masters 34-bit addresses.
		platformExample: "eqos@0x30bf0000",
		// IOMUXC_GPR1 takes the EQOS interface mode (dwmac-imx.c,
		// imx8mp_set_intf_mode); syscon maps the page without requesting it.
		platformGPR:    &physmem.Window{Phys: 0x30340000, Size: 0x10},
		window:         0x10000,
		dmaLimit:       1 << 34,
		simVariants:    []string{"intel", "imx8mp"},
		pciSimVariants: []string{"intel"},
		newSim: func(variant string, o portOptions) (simModel, error) {
			m, err := newSimDWMAC(variant, o)
			if err != nil {
				return nil, err
			}
			return dwmacModel{m}, nil
		},
		open: func(dev nic.Device, o portOptions) (familyPort, error) {
			cfg := dwmacConfig(o)
			if o.RxMeta {
				// Tags stripped into RDES0, every frame timestamped
				// (MAC_Timestamp_Control.TSENALL).
				cfg.VLANStrip, cfg.RxTimestamp = true, true
			}
			p, err := dwmac.Open(dev, cfg)
			if err != nil {
				return nil, err
			}
			return dwmacPort{p}, nil
		},
		dumpRegs:   func(regs nic.Regs, queues int) regDump { return dwmac.DumpRegs(regs, queues) },
		facts:      dwmac.Facts(),
		moderation: dwmacModeration(),
	})
}

// dwmacModeration is RIWTn, each channel's RX interrupt watchdog
// (dwmac/coalesce.go), at the port's system clock and core version, which
// its dump gives. Only a port opened with --rx-usecs leaves RDES3.IOC clear
// on the descriptors the watchdog then signals; on one opened without it
// every frame interrupts at once and RIWT would change nothing, so setting
// an interval there is refused, saying so. (Opening every port with the
// watchdog armed would instead delay the interrupt of every port that asked
// for none.) For --rx-usecs at open: the widest range, Intel's 200 MHz on a
// 5.x core; the driver refuses more than the port's clock holds.
func dwmacModeration() *interruptModeration {
	m := dwmacModerationAt(dwmac.IntelSystemClockHz, 0x50, 1)
	m.forPort = func(d *nic.RegDump) *interruptModeration {
		r, ok := d.Reg("RIWT0")
		if !ok {
			return m
		}
		hz, err1 := strconv.ParseUint(regField(r, "CLOCK_HZ"), 10, 64)
		ver, err2 := strconv.ParseUint(regField(r, "SNPSVER"), 0, 8)
		frames, err3 := strconv.Atoi(regField(r, "FRAMES"))
		if err := errors.Join(err1, err2, err3); err != nil || hz == 0 {
			return m
		}
		return dwmacModerationAt(hz, uint8(ver), frames)
	}
	return m
}

// dwmacModerationAt converts RIWT at a system clock of hz on a core of
// SNPSVER ver, on a port that sets IOC on every frames-th frame (0: on every
// frame, no coalescing).
func dwmacModerationAt(hz uint64, ver uint8, frames int) *interruptModeration {
	return &interruptModeration{reg: "RIWT%d", maxUsecs: int(dwmac.MaxCoalesce(hz, ver) / time.Microsecond),
		usecs: func(v uint32) int { return int(dwmac.CoalesceSetting(v, hz) / time.Microsecond) },
		with: func(v uint32, usecs int) uint32 {
			nv, err := dwmac.CoalesceValue(time.Duration(usecs)*time.Microsecond, hz, ver)
			if err != nil { // usecs is within maxUsecs: cannot happen
				return v
			}
			return nv
		},
		refuse: func(usecs int) string {
			switch {
			case frames == 0:
				return "the port was opened without RX coalescing: every RX descriptor asks for an interrupt (RDES3.IOC), " +
					"so the RX watchdog (RIWT) never runs; open it with --rx-usecs"
			case usecs == 0:
				return "the port's RX descriptors leave IOC clear, so a watchdog of 0 would leave their frames without an interrupt; " +
					"the shortest is 256 clock cycles (rx-usecs 1)"
			}
			return ""
		}}
}

// regField is the value of r's field name ("" when absent).
func regField(r nic.RegValue, name string) string {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

func dwmacConfig(o portOptions) dwmac.Config {
	rx, tx := o.rings()
	return dwmac.Config{Queues: o.Queues, RxRingSize: rx, TxRingSize: tx,
		Interrupts: o.Interrupts, Promisc: o.Promisc, LinkTimeout: o.LinkTimeout,
		RxCoalesce: time.Duration(o.RxUsecs) * time.Microsecond}
}

// dwmacPort is the dwmac driver's port as the CLI shows it.
type dwmacPort struct{ *dwmac.Port }

func (p dwmacPort) Dump() regDump { return p.Port.Dump() }

func (p dwmacPort) Describe(pi *portInfo) {
	m, hw := p.Model(), p.HW()
	pi.Model = m.Name
	pi.Variant = fmt.Sprintf("%s, DWC EQoS %s, %d-bit DMA", m.Integration, hw.VersionString(), p.AddrBits())
	pi.MaxQueues = min(m.RxQueues, m.TxQueues, hw.RxQueues, hw.TxQueues)
	pi.PHYID = fmt.Sprintf("0x%08x", p.PHYID())
	pi.Warnings = p.Warnings()
}

// newSimDWMAC builds a DWC EQoS model: an Alder Lake-S mGbE (variant "intel")
// or an i.MX8M Plus EQOS ("imx8mp", not cache coherent, as the SoC is), with
// enough DMA channels for o.Queues.
func newSimDWMAC(variant string, o portOptions) (*dwmacsim.Model, error) {
	cfg := dwmacsim.Config{AutonegDelay: simAutonegDelay, BreakLink: o.SimBreakLink, MAC: o.SimMAC, Name: o.SimName, Sched: schedFor(o)}
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
func (m dwmacModel) ModelCounters() any    { return m.Counters() }

// InjectBurst delivers frames back to back; it returns how many the port took.
func (m dwmacModel) InjectBurst(frames [][]byte) int { return injectEach(m.Inject, frames) }

var _ familyPort = dwmacPort{}
