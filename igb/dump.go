package igb

import (
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. It never reads clear-on-read registers: not ICR, not EICR (which clears
// on read in MSI-X mode), not the statistics. EIMS shows which vectors are armed.
type Dump = nic.RegDump

// RegValue is one register with its decoded fields.
type RegValue = nic.RegValue

// Field is one decoded field of a register.
type Field = nic.Field

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

var (
	ctrlFlags = []nic.Flag{{Mask: uint32(ctrlFD), Name: "FD"}, {Mask: uint32(ctrlGIOMasterD), Name: "GIO_MASTER_DISABLE"}, {Mask: uint32(ctrlLRST), Name: "LRST"},
		{Mask: uint32(ctrlASDE), Name: "ASDE"}, {Mask: uint32(ctrlSLU), Name: "SLU"}, {Mask: uint32(ctrlILOS), Name: "ILOS"}, {Mask: uint32(ctrlFRCSPD), Name: "FRCSPD"},
		{Mask: uint32(ctrlFRCDPX), Name: "FRCDPX"}, {Mask: uint32(ctrlRST), Name: "RST"}, {Mask: uint32(ctrlRFCE), Name: "RFCE"}, {Mask: uint32(ctrlTFCE), Name: "TFCE"},
		{Mask: uint32(ctrlVME), Name: "VME"}, {Mask: uint32(ctrlPHYRST), Name: "PHY_RST"}}
	statusFlags = []nic.Flag{{Mask: uint32(statusLU), Name: "LU"}, {Mask: uint32(statusFD), Name: "FD"}, {Mask: uint32(statusTXOFF), Name: "TXOFF"},
		{Mask: uint32(statusPHYRA), Name: "PHYRA"}, {Mask: uint32(statusGIOMaster), Name: "GIO_MASTER_ENABLE"}}
	rctlFlags = []nic.Flag{{Mask: uint32(rctlEN), Name: "EN"}, {Mask: uint32(rctlSBP), Name: "SBP"}, {Mask: uint32(rctlUPE), Name: "UPE"}, {Mask: uint32(rctlMPE), Name: "MPE"},
		{Mask: uint32(rctlLPE), Name: "LPE"}, {Mask: uint32(rctlBAM), Name: "BAM"}, {Mask: uint32(rctlVFE), Name: "VFE"}, {Mask: uint32(rctlSECRC), Name: "SECRC"}}
	tctlFlags   = []nic.Flag{{Mask: uint32(tctlEN), Name: "EN"}, {Mask: uint32(tctlPSP), Name: "PSP"}, {Mask: uint32(tctlRTLC), Name: "RTLC"}}
	gpieFlags   = []nic.Flag{{Mask: uint32(gpieNSICR), Name: "NSICR"}, {Mask: uint32(gpieMSIXMode), Name: "MSIX_MODE"}, {Mask: uint32(gpieEIAME), Name: "EIAME"}, {Mask: uint32(gpiePBA), Name: "PBA"}}
	mdicFlags   = []nic.Flag{{Mask: uint32(mdicReady), Name: "READY"}, {Mask: uint32(mdicError), Name: "ERROR"}}
	rxcsumFlags = []nic.Flag{{Mask: rxcsumIPOFLD, Name: "IPOFLD"}, {Mask: rxcsumTUOFLD, Name: "TUOFLD"}, {Mask: rxcsumPCSD, Name: "PCSD"}}
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
	d := &Dump{NameWidth: 12, OffsetDigits: 5}
	add := func(name string, off reg, decode func(uint32) []Field) uint32 {
		return d.Read(r, name, uint32(off), decode)
	}
	add("CTRL", regCTRL, func(v uint32) []Field {
		return append(nic.FlagFields(v, ctrlFlags), Field{Name: "SPEED_SEL", Value: speedName(field(v, 8, 2))})
	})
	add("STATUS", regSTATUS, func(v uint32) []Field {
		return append(nic.FlagFields(v, statusFlags),
			Field{Name: "SPEED", Value: speedName((v & uint32(statusSpeedMask)) >> 6)}, Field{Name: "FUNC_ID", Value: fmt.Sprint(field(v, 2, 2))})
	})
	add("EECD", regEECD, func(v uint32) []Field {
		return []Field{{Name: "PRES", Value: bit(v, 8)}, {Name: "AUTO_RD", Value: fmt.Sprint(b2i(v&eecdAutoRD != 0))}}
	})
	ext := add("CTRL_EXT", regCTRL_EXT, func(v uint32) []Field {
		return []Field{{Name: "DRV_LOAD", Value: fmt.Sprint(b2i(v&ctrlExtDrvLoad != 0))},
			{Name: "LINK_MODE", Value: linkModeName(v & ctrlExtLinkModeMask)}, {Name: "SDP3_DATA", Value: bit(v, 7)}}
	})
	add("MDIC", regMDIC, func(v uint32) []Field {
		return append([]Field{{Name: "DATA", Value: fmt.Sprintf("0x%04x", v&uint32(mdicDataMask))}, {Name: "REG", Value: fmt.Sprint(field(v, mdicRegShift, 5))},
			{Name: "PHY", Value: fmt.Sprint(field(v, mdicPHYShift, 5))}}, nic.FlagFields(v, mdicFlags)...)
	})
	if mode := ext & ctrlExtLinkModeMask; ext != 0xFFFFFFFF && (mode == ctrlExtLinkModeSerDes || mode == ctrlExtLinkModeKX) {
		dumpPCS(d, r) // pcs.go
	}
	add("RCTL", regRCTL, func(v uint32) []Field {
		return append(nic.FlagFields(v, rctlFlags),
			Field{Name: "LBM", Value: fmt.Sprint((v & uint32(rctlLBMMask)) >> 6)}, Field{Name: "MO", Value: fmt.Sprint((v & uint32(rctlMOMask)) >> 12)})
	})
	add("TCTL", regTCTL, func(v uint32) []Field {
		return append(nic.FlagFields(v, tctlFlags), Field{Name: "CT", Value: fmt.Sprint(field(v, tctlCTShift, 8))},
			Field{Name: "COLD", Value: fmt.Sprint(field(v, tctlCOLDShft, 10))})
	})
	add("RXCSUM", regRXCSUM, func(v uint32) []Field { return nic.FlagFields(v, rxcsumFlags) })
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
		return []Field{{Name: "MODE", Value: fmt.Sprint(v & uint32(mrqcEnableMask))}, {Name: "HASH", Value: strings.Join(h, ",")}}
	})
	lo := add("RAL0", regRAL0, nil)
	add("RAH0", regRAH0, func(v uint32) []Field {
		return []Field{{Name: "MAC", Value: macFromRA(lo, v).String()}, {Name: "AV", Value: bit(v, 31)}}
	})
	add("GPIE", regGPIE, func(v uint32) []Field { return nic.FlagFields(v, gpieFlags) })
	add("IMS", regIMS, func(v uint32) []Field { return []Field{{Name: "LSC", Value: bit(v, 2)}} })
	add("EIMS", regEIMS, nil)
	add("EIAC", regEIAC, nil)
	add("EIAM", regEIAM, nil)
	add("IVAR0", regIVAR0, ivarFields)
	add("IVAR1", regIVAR0+4, ivarFields)
	add("IVAR_MISC", regIVAR_MISC, func(v uint32) []Field {
		return []Field{{Name: "OTHER", Value: ivarEntry(v >> 8)}}
	})
	for q := 0; q < queues; q++ {
		b := rxBlock(q)
		ringFields := func(base reg) func(uint32) []Field {
			bal := r.Read32(uint32(base + qBAL))
			bah := r.Read32(uint32(base + qBAH))
			return func(v uint32) []Field {
				return []Field{{Name: "BASE", Value: fmt.Sprintf("0x%x", uint64(bah)<<32|uint64(bal))}, {Name: "DESCS", Value: fmt.Sprint(v / descSize)}}
			}
		}
		add(fmt.Sprintf("RDLEN%d", q), b+qLEN, ringFields(b))
		add(fmt.Sprintf("RDH%d", q), b+qHead, nil)
		add(fmt.Sprintf("RDT%d", q), b+qTail, nil)
		add(fmt.Sprintf("SRRCTL%d", q), b+qSRRCTL, func(v uint32) []Field {
			return []Field{{Name: "BSIZEPKT_KB", Value: fmt.Sprint(v & uint32(srrctlBSizePktMask))},
				{Name: "DESCTYPE", Value: fmt.Sprint((v & uint32(srrctlDescTypeMask)) >> 25)}, {Name: "DROP_EN", Value: fmt.Sprint(b2i(v&uint32(srrctlDropEn) != 0))}}
		})
		add(fmt.Sprintf("RXDCTL%d", q), b+qDCTL, dctlFields)
		t := txBlock(q)
		add(fmt.Sprintf("TDLEN%d", q), t+qLEN, ringFields(t))
		add(fmt.Sprintf("TDH%d", q), t+qHead, nil)
		add(fmt.Sprintf("TDT%d", q), t+qTail, nil)
		add(fmt.Sprintf("TXDCTL%d", q), t+qDCTL, dctlFields)
		add(fmt.Sprintf("EITR%d", q), regEITR(q), func(v uint32) []Field {
			return []Field{{Name: "INTERVAL", Value: fmt.Sprint(field(v, 2, 13))}}
		})
	}
	return d
}

func dctlFields(v uint32) []Field {
	return []Field{{Name: "ENABLE", Value: fmt.Sprint(b2i(v&uint32(dctlEnable) != 0))}, {Name: "PTHRESH", Value: fmt.Sprint(field(v, dctlPThreshShift, 5))},
		{Name: "HTHRESH", Value: fmt.Sprint(field(v, dctlHThreshShift, 5))}, {Name: "WTHRESH", Value: fmt.Sprint(field(v, dctlWThreshShift, 5))}}
}

func ivarEntry(b uint32) string {
	if b&ivarValid == 0 {
		return "-"
	}
	return fmt.Sprint(b & 0x1F)
}

func ivarFields(v uint32) []Field {
	return []Field{{Name: "B0", Value: ivarEntry(v)}, {Name: "B1", Value: ivarEntry(v >> 8)}, {Name: "B2", Value: ivarEntry(v >> 16)}, {Name: "B3", Value: ivarEntry(v >> 24)}}
}
