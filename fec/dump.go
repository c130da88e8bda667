package fec

import (
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. Reading FEC registers has no side effect (EIR clears on write, the MIB
// counters do not clear on read), so every register listed is safe to dump.
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

// Field is one decoded field.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Reg returns the named register, and whether the dump has it.
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

// String renders one register per line: name, offset, value, fields.
func (d *Dump) String() string {
	var b strings.Builder
	for _, r := range d.Registers {
		fmt.Fprintf(&b, "%-8s [0x%03x] 0x%08x", r.Name, r.Offset, r.Value)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, " %s=%s", f.Name, f.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Dump reads the port's registers.
func (p *Port) Dump() *Dump { return DumpRegs(p.regs, p.NumQueues()) }

type flag struct {
	mask uint32
	name string
}

func flags(v uint32, fs []flag) []Field {
	out := make([]Field, 0, len(fs))
	for _, f := range fs {
		out = append(out, Field{f.name, fmt.Sprint(b2i(v&f.mask != 0))})
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var (
	ecrFlags = []flag{{uint32(ecrRESET), "RESET"}, {uint32(ecrETHEREN), "ETHEREN"}, {uint32(ecrMAGICEN), "MAGICEN"},
		{uint32(ecrSLEEP), "SLEEP"}, {uint32(ecrEN1588), "EN1588"}, {uint32(ecrSPEED), "SPEED1000"},
		{uint32(ecrDBGEN), "DBGEN"}, {uint32(ecrDBSWP), "DBSWP"}}
	eirFlags = []flag{{uint32(eirHBERR), "HBERR"}, {uint32(eirBABR), "BABR"}, {uint32(eirBABT), "BABT"},
		{uint32(eirGRA), "GRA"}, {uint32(eirTXF), "TXF"}, {uint32(eirTXB), "TXB"}, {uint32(eirRXF), "RXF"},
		{uint32(eirRXB), "RXB"}, {uint32(eirMII), "MII"}, {uint32(eirEBERR), "EBERR"}, {uint32(eirLC), "LC"},
		{uint32(eirRL), "RL"}, {uint32(eirUN), "UN"}, {uint32(eirPLR), "PLR"}, {uint32(eirWAKEUP), "WAKEUP"},
		{uint32(eirTSAV), "TS_AVAIL"}, {uint32(eirTSTMR), "TS_TIMER"}, {uint32(eirRXF1), "RXF1"},
		{uint32(eirTXF1), "TXF1"}, {uint32(eirRXF2), "RXF2"}, {uint32(eirTXF2), "TXF2"}}
	rcrFlags = []flag{{uint32(rcrLOOP), "LOOP"}, {uint32(rcrDRT), "DRT"}, {uint32(rcrMIIMODE), "MII_MODE"},
		{uint32(rcrPROM), "PROM"}, {uint32(rcrBCREJ), "BC_REJ"}, {uint32(rcrFCE), "FCE"},
		{uint32(rcrRGMII), "RGMII"}, {uint32(rcrRMII), "RMII"}, {uint32(rcrRMII10T), "RMII_10T"}, {uint32(rcrNLC), "NLC"}}
)

// DumpRegs reads and decodes the registers of a FEC with queues rings (1-3),
// for tools that have a register window but no Port.
func DumpRegs(r nic.Regs, queues int) *Dump {
	d := &Dump{}
	add := func(name string, off reg, fields func(v uint32) []Field) {
		v := r.Read32(uint32(off))
		rv := RegValue{Name: name, Offset: uint32(off), Value: v}
		if fields != nil && v != 0xFFFFFFFF {
			rv.Fields = fields(v)
		}
		d.Registers = append(d.Registers, rv)
	}
	add("ECR", regECR, func(v uint32) []Field { return flags(v, ecrFlags) })
	add("EIR", regEIR, func(v uint32) []Field { return flags(v, eirFlags) })
	add("EIMR", regEIMR, func(v uint32) []Field { return flags(v, eirFlags) })
	add("RCR", regRCR, func(v uint32) []Field {
		return append(flags(v, rcrFlags), Field{"MAX_FL", fmt.Sprint(v >> rcrMaxFLSft & 0x3FFF)})
	})
	add("TCR", regTCR, func(v uint32) []Field {
		return []Field{{"GTS", fmt.Sprint(v & 1)}, {"FDEN", fmt.Sprint(v >> 2 & 1)}}
	})
	add("MSCR", regMSCR, func(v uint32) []Field {
		return []Field{{"MII_SPEED", fmt.Sprint(v >> mscrSpeedShift & mscrSpeedMax)},
			{"DIS_PRE", fmt.Sprint(v >> 7 & 1)}, {"HOLDTIME", fmt.Sprint(v >> mscrHoldShift & mscrHoldMax)}}
	})
	add("MMFR", regMMFR, func(v uint32) []Field {
		return []Field{{"OP", fmt.Sprint(v >> 28 & 3)}, {"PA", fmt.Sprint(v >> mmfrPAShift & 0x1F)},
			{"RA", fmt.Sprint(v >> mmfrRAShift & 0x1F)}, {"DATA", fmt.Sprintf("%#04x", v&mmfrData)}}
	})
	add("MIBC", regMIBC, func(v uint32) []Field {
		return []Field{{"DIS", fmt.Sprint(v >> 31)}, {"IDLE", fmt.Sprint(v >> 30 & 1)}}
	})
	mac := func(lo, hi uint32) string {
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", lo>>24, lo>>16&0xFF, lo>>8&0xFF, lo&0xFF, hi>>24, hi>>16&0xFF)
	}
	palr, paur := r.Read32(uint32(regPALR)), r.Read32(uint32(regPAUR))
	d.Registers = append(d.Registers,
		RegValue{Name: "PALR", Offset: uint32(regPALR), Value: palr, Fields: []Field{{"MAC", mac(palr, paur)}}},
		RegValue{Name: "PAUR", Offset: uint32(regPAUR), Value: paur, Fields: []Field{{"TYPE", fmt.Sprintf("%#04x", paur&0xFFFF)}}})
	add("OPD", regOPD, nil)
	add("TFWR", regTFWR, func(v uint32) []Field {
		return []Field{{"STRFWD", fmt.Sprint(v >> 8 & 1)}, {"TFWR", fmt.Sprint(v & 0x3F)}}
	})
	add("FTRL", regFTRL, nil)
	add("RACC", regRACC, func(v uint32) []Field {
		return []Field{{"PADREM", fmt.Sprint(b2i(v&raccPADREM != 0))}, {"IPDIS", fmt.Sprint(b2i(v&raccIPDIS != 0))},
			{"PRODIS", fmt.Sprint(b2i(v&raccPRODIS != 0))}, {"SHIFT16", fmt.Sprint(b2i(v&raccSHIFT16 != 0))}}
	})
	queues = max(1, min(queues, len(rings)))
	for i := 0; i < queues; i++ {
		rr := rings[i]
		sfx := ""
		if i > 0 {
			sfx = fmt.Sprint(i)
		}
		active := func(v uint32) []Field { return []Field{{"ACTIVE", fmt.Sprint(b2i(v&rdarActive != 0))}} }
		add("RDSR"+sfx, rr.rdsr, nil)
		add("TDSR"+sfx, rr.tdsr, nil)
		add("MRBR"+sfx, rr.mrbr, nil)
		add("RDAR"+sfx, rr.rdar, active)
		add("TDAR"+sfx, rr.tdar, active)
	}
	return d
}
