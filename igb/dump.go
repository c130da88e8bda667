package igb

import (
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. It never reads clear-on-read registers: not ICR, not EICR (which clears
// on read in MSI-X mode), not the statistics. EIMS shows which vectors are armed.
type Dump struct {
	Registers []RegValue `json:"registers"`
}

// RegValue is one register with its decoded fields.
type RegValue struct {
	Name   string  `json:"name"`
	Offset uint32  `json:"offset"`
	Value  uint32  `json:"value"`
	Fields []Field `json:"fields,omitempty"`
}

// Field is one decoded field of a register.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Reg returns the named register of the dump, and whether it is there.
func (d *Dump) Reg(name string) (RegValue, bool) {
	for _, r := range d.Registers {
		if r.Name == name {
			return r, true
		}
	}
	return RegValue{}, false
}

// Field returns the value of a named field, and whether it is there.
func (r RegValue) Field(name string) (string, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// String renders the dump one register per line: name, offset, value, fields.
func (d *Dump) String() string {
	var b strings.Builder
	for _, r := range d.Registers {
		fmt.Fprintf(&b, "%-12s [0x%05x] 0x%08x", r.Name, r.Offset, r.Value)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, " %s=%s", f.Name, f.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Dump reads the port's registers.
func (p *Port) Dump() *Dump { return DumpRegs(p.regs, p.NumQueues()) }

func bit(v uint32, n uint) string { return fmt.Sprint(v >> n & 1) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func field(v uint32, lo, width uint) uint32 { return v >> lo & (1<<width - 1) }

// flagName names one single-bit field by its mask.
type flagName struct {
	mask uint32
	name string
}

func flagFields(v uint32, fs []flagName) []Field {
	out := make([]Field, 0, len(fs))
	for _, f := range fs {
		b := "0"
		if v&f.mask != 0 {
			b = "1"
		}
		out = append(out, Field{f.name, b})
	}
	return out
}

var (
	ctrlFlags = []flagName{{uint32(ctrlFD), "FD"}, {uint32(ctrlGIOMasterD), "GIO_MASTER_DISABLE"}, {uint32(ctrlLRST), "LRST"},
		{uint32(ctrlASDE), "ASDE"}, {uint32(ctrlSLU), "SLU"}, {uint32(ctrlILOS), "ILOS"}, {uint32(ctrlFRCSPD), "FRCSPD"},
		{uint32(ctrlFRCDPX), "FRCDPX"}, {uint32(ctrlRST), "RST"}, {uint32(ctrlRFCE), "RFCE"}, {uint32(ctrlTFCE), "TFCE"},
		{uint32(ctrlVME), "VME"}, {uint32(ctrlPHYRST), "PHY_RST"}}
	statusFlags = []flagName{{uint32(statusLU), "LU"}, {uint32(statusFD), "FD"}, {uint32(statusTXOFF), "TXOFF"},
		{uint32(statusPHYRA), "PHYRA"}, {uint32(statusGIOMaster), "GIO_MASTER_ENABLE"}}
	rctlFlags = []flagName{{uint32(rctlEN), "EN"}, {uint32(rctlSBP), "SBP"}, {uint32(rctlUPE), "UPE"}, {uint32(rctlMPE), "MPE"},
		{uint32(rctlLPE), "LPE"}, {uint32(rctlBAM), "BAM"}, {uint32(rctlVFE), "VFE"}, {uint32(rctlSECRC), "SECRC"}}
	tctlFlags   = []flagName{{uint32(tctlEN), "EN"}, {uint32(tctlPSP), "PSP"}, {uint32(tctlRTLC), "RTLC"}}
	gpieFlags   = []flagName{{uint32(gpieNSICR), "NSICR"}, {uint32(gpieMSIXMode), "MSIX_MODE"}, {uint32(gpieEIAME), "EIAME"}, {uint32(gpiePBA), "PBA"}}
	mdicFlags   = []flagName{{uint32(mdicReady), "READY"}, {uint32(mdicError), "ERROR"}}
	rxcsumFlags = []flagName{{rxcsumIPOFLD, "IPOFLD"}, {rxcsumTUOFLD, "TUOFLD"}, {rxcsumPCSD, "PCSD"}}
)

func speedName(code uint32) string {
	switch code {
	case 0:
		return "10"
	case 1:
		return "100"
	}
	return "1000"
}

// DumpRegs reads and decodes the registers of a device's BAR 0 and of its first
// queues (queue blocks 0 to queues-1). It only reads registers whose reads have
// no side effects.
func DumpRegs(r nic.Regs, queues int) *Dump {
	d := &Dump{}
	add := func(name string, off reg, decode func(uint32) []Field) uint32 {
		v := r.Read32(uint32(off))
		rv := RegValue{Name: name, Offset: uint32(off), Value: v}
		if decode != nil {
			rv.Fields = decode(v)
		}
		d.Registers = append(d.Registers, rv)
		return v
	}
	add("CTRL", regCTRL, func(v uint32) []Field {
		return append(flagFields(v, ctrlFlags), Field{"SPEED_SEL", speedName(field(v, 8, 2))})
	})
	add("STATUS", regSTATUS, func(v uint32) []Field {
		return append(flagFields(v, statusFlags),
			Field{"SPEED", speedName((v & uint32(statusSpeedMask)) >> 6)}, Field{"FUNC_ID", fmt.Sprint(field(v, 2, 2))})
	})
	add("EECD", regEECD, func(v uint32) []Field {
		return []Field{{"PRES", bit(v, 8)}, {"AUTO_RD", fmt.Sprint(b2i(v&eecdAutoRD != 0))}}
	})
	add("CTRL_EXT", regCTRL_EXT, func(v uint32) []Field {
		return []Field{{"DRV_LOAD", fmt.Sprint(b2i(v&ctrlExtDrvLoad != 0))}}
	})
	add("MDIC", regMDIC, func(v uint32) []Field {
		return append([]Field{{"DATA", fmt.Sprintf("0x%04x", v&uint32(mdicDataMask))}, {"REG", fmt.Sprint(field(v, mdicRegShift, 5))},
			{"PHY", fmt.Sprint(field(v, mdicPHYShift, 5))}}, flagFields(v, mdicFlags)...)
	})
	add("RCTL", regRCTL, func(v uint32) []Field {
		return append(flagFields(v, rctlFlags),
			Field{"LBM", fmt.Sprint((v & uint32(rctlLBMMask)) >> 6)}, Field{"MO", fmt.Sprint((v & uint32(rctlMOMask)) >> 12)})
	})
	add("TCTL", regTCTL, func(v uint32) []Field {
		return append(flagFields(v, tctlFlags), Field{"CT", fmt.Sprint(field(v, tctlCTShift, 8))},
			Field{"COLD", fmt.Sprint(field(v, tctlCOLDShft, 10))})
	})
	add("RXCSUM", regRXCSUM, func(v uint32) []Field { return flagFields(v, rxcsumFlags) })
	add("MRQC", regMRQC, func(v uint32) []Field {
		var h []string
		for _, x := range []struct {
			b    uint32
			name string
		}{{uint32(mrqcHashIPv4), "ipv4"}, {uint32(mrqcHashIPv4TCP), "ipv4-tcp"}, {uint32(mrqcHashIPv4UDP), "ipv4-udp"},
			{uint32(mrqcHashIPv6), "ipv6"}, {uint32(mrqcHashIPv6TCP), "ipv6-tcp"}, {uint32(mrqcHashIPv6UDP), "ipv6-udp"},
			{uint32(mrqcHashIPv6Ex), "ipv6-ex"}, {uint32(mrqcHashIPv6TCPx), "ipv6-tcp-ex"}, {uint32(mrqcHashIPv6UDPx), "ipv6-udp-ex"}} {
			if v&x.b != 0 {
				h = append(h, x.name)
			}
		}
		return []Field{{"MODE", fmt.Sprint(v & uint32(mrqcEnableMask))}, {"HASH", strings.Join(h, ",")}}
	})
	lo := add("RAL0", regRAL0, nil)
	add("RAH0", regRAH0, func(v uint32) []Field {
		return []Field{{"MAC", macFromRA(lo, v).String()}, {"AV", bit(v, 31)}}
	})
	add("GPIE", regGPIE, func(v uint32) []Field { return flagFields(v, gpieFlags) })
	add("IMS", regIMS, func(v uint32) []Field { return []Field{{"LSC", bit(v, 2)}} })
	add("EIMS", regEIMS, nil)
	add("EIAC", regEIAC, nil)
	add("EIAM", regEIAM, nil)
	add("IVAR0", regIVAR0, ivarFields)
	add("IVAR1", regIVAR0+4, ivarFields)
	add("IVAR_MISC", regIVAR_MISC, func(v uint32) []Field {
		return []Field{{"OTHER", ivarEntry(v >> 8)}}
	})
	for q := 0; q < queues; q++ {
		b := rxBlock(q)
		ringFields := func(base reg) func(uint32) []Field {
			bal := r.Read32(uint32(base + qBAL))
			bah := r.Read32(uint32(base + qBAH))
			return func(v uint32) []Field {
				return []Field{{"BASE", fmt.Sprintf("0x%x", uint64(bah)<<32|uint64(bal))}, {"DESCS", fmt.Sprint(v / descSize)}}
			}
		}
		add(fmt.Sprintf("RDLEN%d", q), b+qLEN, ringFields(b))
		add(fmt.Sprintf("RDH%d", q), b+qHead, nil)
		add(fmt.Sprintf("RDT%d", q), b+qTail, nil)
		add(fmt.Sprintf("SRRCTL%d", q), b+qSRRCTL, func(v uint32) []Field {
			return []Field{{"BSIZEPKT_KB", fmt.Sprint(v & uint32(srrctlBSizePktMask))},
				{"DESCTYPE", fmt.Sprint((v & uint32(srrctlDescTypeMask)) >> 25)}, {"DROP_EN", fmt.Sprint(b2i(v&uint32(srrctlDropEn) != 0))}}
		})
		add(fmt.Sprintf("RXDCTL%d", q), b+qDCTL, dctlFields)
		t := txBlock(q)
		add(fmt.Sprintf("TDLEN%d", q), t+qLEN, ringFields(t))
		add(fmt.Sprintf("TDH%d", q), t+qHead, nil)
		add(fmt.Sprintf("TDT%d", q), t+qTail, nil)
		add(fmt.Sprintf("TXDCTL%d", q), t+qDCTL, dctlFields)
		add(fmt.Sprintf("EITR%d", q), regEITR(q), func(v uint32) []Field {
			return []Field{{"INTERVAL", fmt.Sprint(field(v, 2, 13))}}
		})
	}
	return d
}

func dctlFields(v uint32) []Field {
	return []Field{{"ENABLE", fmt.Sprint(b2i(v&uint32(dctlEnable) != 0))}, {"PTHRESH", fmt.Sprint(field(v, dctlPThreshShift, 5))},
		{"HTHRESH", fmt.Sprint(field(v, dctlHThreshShift, 5))}, {"WTHRESH", fmt.Sprint(field(v, dctlWThreshShift, 5))}}
}

func ivarEntry(b uint32) string {
	if b&ivarValid == 0 {
		return "-"
	}
	return fmt.Sprint(b & 0x1F)
}

func ivarFields(v uint32) []Field {
	return []Field{{"B0", ivarEntry(v)}, {"B1", ivarEntry(v >> 8)}, {"B2", ivarEntry(v >> 16)}, {"B3", ivarEntry(v >> 24)}}
}
