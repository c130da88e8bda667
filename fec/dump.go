package fec

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. Reading FEC registers has no side effect (EIR clears on write, the MIB
// counters do not clear on read), so every register listed is safe to dump.
type Dump = nic.RegDump

// RegValue is one register with its decoded fields.
type RegValue = nic.RegValue

// Field is one decoded field.
type Field = nic.Field

// Dump.String's layout: names padded to 8 characters, offsets in three hex
// digits (the registers dumped lie below 0x1000).
const (
	dumpNameWidth    = 8
	dumpOffsetDigits = 3
)

// Dump reads the port's registers, with the RX coalescing registers of
// every ring on the ENETs that have them.
func (p *Port) Dump() *Dump {
	d := DumpRegs(p.regs, p.NumQueues())
	if p.variant.Quirks&QuirkCoalesce != 0 {
		for q := 0; q < p.variant.Queues; q++ {
			off := regRXIC0 + reg(4*q)
			d.Read(p.regs, fmt.Sprintf("RXIC%d", q), uint32(off), func(v uint32) []Field { return coalesceFields(v, p.cfg.SystemClockHz) })
		}
	}
	return d
}

// coalesceFields decodes RXICn/TXICn.
func coalesceFields(v uint32, hz uint64) []Field {
	d, _ := CoalesceSetting(v, hz)
	return []Field{{Name: "ICEN", Value: fmt.Sprint(v >> 31)}, {Name: "ICCS", Value: fmt.Sprint(v >> 30 & 1)},
		{Name: "ICFT", Value: fmt.Sprint(v & icFTMask >> icFTShift)}, {Name: "ICTT", Value: fmt.Sprint(v & icTTMask)},
		{Name: "interval", Value: d.String()}}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var (
	ecrFlags = []nic.Flag{{Mask: uint32(ecrRESET), Name: "RESET"}, {Mask: uint32(ecrETHEREN), Name: "ETHEREN"}, {Mask: uint32(ecrMAGICEN), Name: "MAGICEN"},
		{Mask: uint32(ecrSLEEP), Name: "SLEEP"}, {Mask: uint32(ecrEN1588), Name: "EN1588"}, {Mask: uint32(ecrSPEED), Name: "SPEED1000"},
		{Mask: uint32(ecrDBGEN), Name: "DBGEN"}, {Mask: uint32(ecrDBSWP), Name: "DBSWP"}}
	eirFlags = []nic.Flag{{Mask: uint32(eirHBERR), Name: "HBERR"}, {Mask: uint32(eirBABR), Name: "BABR"}, {Mask: uint32(eirBABT), Name: "BABT"},
		{Mask: uint32(eirGRA), Name: "GRA"}, {Mask: uint32(eirTXF), Name: "TXF"}, {Mask: uint32(eirTXB), Name: "TXB"}, {Mask: uint32(eirRXF), Name: "RXF"},
		{Mask: uint32(eirRXB), Name: "RXB"}, {Mask: uint32(eirMII), Name: "MII"}, {Mask: uint32(eirEBERR), Name: "EBERR"}, {Mask: uint32(eirLC), Name: "LC"},
		{Mask: uint32(eirRL), Name: "RL"}, {Mask: uint32(eirUN), Name: "UN"}, {Mask: uint32(eirPLR), Name: "PLR"}, {Mask: uint32(eirWAKEUP), Name: "WAKEUP"},
		{Mask: uint32(eirTSAV), Name: "TS_AVAIL"}, {Mask: uint32(eirTSTMR), Name: "TS_TIMER"}, {Mask: uint32(eirRXF1), Name: "RXF1"},
		{Mask: uint32(eirTXF1), Name: "TXF1"}, {Mask: uint32(eirRXF2), Name: "RXF2"}, {Mask: uint32(eirTXF2), Name: "TXF2"}}
	rcrFlags = []nic.Flag{{Mask: uint32(rcrLOOP), Name: "LOOP"}, {Mask: uint32(rcrDRT), Name: "DRT"}, {Mask: uint32(rcrMIIMODE), Name: "MII_MODE"},
		{Mask: uint32(rcrPROM), Name: "PROM"}, {Mask: uint32(rcrBCREJ), Name: "BC_REJ"}, {Mask: uint32(rcrFCE), Name: "FCE"},
		{Mask: uint32(rcrRGMII), Name: "RGMII"}, {Mask: uint32(rcrRMII), Name: "RMII"}, {Mask: uint32(rcrRMII10T), Name: "RMII_10T"}, {Mask: uint32(rcrNLC), Name: "NLC"}}
)

// DumpRegs reads and decodes the registers of a FEC with queues rings (1-3),
// for tools that have a register window but no Port. It leaves out what
// only some ENETs have (RXICn: Port.Dump has them).
func DumpRegs(r nic.Regs, queues int) *Dump {
	d := &Dump{NameWidth: dumpNameWidth, OffsetDigits: dumpOffsetDigits}
	add := func(name string, off reg, fields func(v uint32) []Field) {
		d.Read(r, name, uint32(off), func(v uint32) []Field {
			if fields == nil || v == 0xFFFFFFFF {
				return nil // no fields to decode, or no device to decode them from
			}
			return fields(v)
		})
	}
	add("ECR", regECR, func(v uint32) []Field { return nic.FlagFields(v, ecrFlags) })
	add("EIR", regEIR, func(v uint32) []Field { return nic.FlagFields(v, eirFlags) })
	add("EIMR", regEIMR, func(v uint32) []Field { return nic.FlagFields(v, eirFlags) })
	add("RCR", regRCR, func(v uint32) []Field {
		return append(nic.FlagFields(v, rcrFlags), Field{Name: "MAX_FL", Value: fmt.Sprint(v >> rcrMaxFLSft & 0x3FFF)})
	})
	add("TCR", regTCR, func(v uint32) []Field {
		return []Field{{Name: "GTS", Value: fmt.Sprint(v & 1)}, {Name: "FDEN", Value: fmt.Sprint(v >> 2 & 1)}}
	})
	add("MSCR", regMSCR, func(v uint32) []Field {
		return []Field{{Name: "MII_SPEED", Value: fmt.Sprint(v >> mscrSpeedShift & mscrSpeedMax)},
			{Name: "DIS_PRE", Value: fmt.Sprint(v >> 7 & 1)}, {Name: "HOLDTIME", Value: fmt.Sprint(v >> mscrHoldShift & mscrHoldMax)}}
	})
	add("MMFR", regMMFR, func(v uint32) []Field {
		return []Field{{Name: "OP", Value: fmt.Sprint(v >> 28 & 3)}, {Name: "PA", Value: fmt.Sprint(v >> mmfrPAShift & 0x1F)},
			{Name: "RA", Value: fmt.Sprint(v >> mmfrRAShift & 0x1F)}, {Name: "DATA", Value: fmt.Sprintf("%#04x", v&mmfrData)}}
	})
	add("MIBC", regMIBC, func(v uint32) []Field {
		return []Field{{Name: "DIS", Value: fmt.Sprint(v >> 31)}, {Name: "IDLE", Value: fmt.Sprint(v >> 30 & 1)}}
	})
	mac := func(lo, hi uint32) string {
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", lo>>24, lo>>16&0xFF, lo>>8&0xFF, lo&0xFF, hi>>24, hi>>16&0xFF)
	}
	palr, paur := r.Read32(uint32(regPALR)), r.Read32(uint32(regPAUR))
	d.Registers = append(d.Registers,
		RegValue{Name: "PALR", Offset: uint32(regPALR), Value: palr, Fields: []Field{{Name: "MAC", Value: mac(palr, paur)}}},
		RegValue{Name: "PAUR", Offset: uint32(regPAUR), Value: paur, Fields: []Field{{Name: "TYPE", Value: fmt.Sprintf("%#04x", paur&0xFFFF)}}})
	add("OPD", regOPD, nil)
	add("TFWR", regTFWR, func(v uint32) []Field {
		return []Field{{Name: "STRFWD", Value: fmt.Sprint(v >> 8 & 1)}, {Name: "TFWR", Value: fmt.Sprint(v & 0x3F)}}
	})
	add("FTRL", regFTRL, nil)
	add("RACC", regRACC, func(v uint32) []Field {
		return []Field{{Name: "PADREM", Value: fmt.Sprint(b2i(v&raccPADREM != 0))}, {Name: "IPDIS", Value: fmt.Sprint(b2i(v&raccIPDIS != 0))},
			{Name: "PRODIS", Value: fmt.Sprint(b2i(v&raccPRODIS != 0))}, {Name: "SHIFT16", Value: fmt.Sprint(b2i(v&raccSHIFT16 != 0))}}
	})
	queues = max(1, min(queues, len(rings)))
	for i := 0; i < queues; i++ {
		rr := rings[i]
		sfx := ""
		if i > 0 {
			sfx = fmt.Sprint(i)
		}
		active := func(v uint32) []Field { return []Field{{Name: "ACTIVE", Value: fmt.Sprint(b2i(v&rdarActive != 0))}} }
		add("RDSR"+sfx, rr.rdsr, nil)
		add("TDSR"+sfx, rr.tdsr, nil)
		add("MRBR"+sfx, rr.mrbr, nil)
		add("RDAR"+sfx, rr.rdar, active)
		add("TDAR"+sfx, rr.tdar, active)
	}
	return d
}
