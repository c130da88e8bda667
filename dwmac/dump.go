package dwmac

import (
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. It never reads registers whose reads have side effects: not the MMC
// counters (reset on read), not MAC_Interrupt_Status, not the channels' missed
// frame counters.
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
		fmt.Fprintf(&b, "%-22s [0x%04x] 0x%08x", r.Name, r.Offset, r.Value)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, " %s=%s", f.Name, f.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Dump reads the port's registers.
func (p *Port) Dump() *Dump {
	p.ctl.Lock() // keep MDIO sequences whole
	defer p.ctl.Unlock()
	return DumpRegs(p.regs, p.NumQueues())
}

func field(v uint32, lo, width uint) uint32 { return v >> lo & (1<<width - 1) }

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
	macCfgFlags = []flagName{{uint32(macCfgRE), "RE"}, {uint32(macCfgTE), "TE"}, {uint32(macCfgDCRS), "DCRS"},
		{uint32(macCfgLM), "LM"}, {uint32(macCfgDM), "DM"}, {uint32(macCfgFES), "FES"}, {uint32(macCfgPS), "PS"},
		{uint32(macCfgJE), "JE"}, {uint32(macCfgJD), "JD"}, {uint32(macCfgBE), "BE"}, {uint32(macCfgWD), "WD"},
		{uint32(macCfgACS), "ACS"}, {uint32(macCfgCST), "CST"}, {uint32(macCfgS2KP), "S2KP"}, {uint32(macCfgIPC), "IPC"}}
	pfFlags = []flagName{{uint32(pfPR), "PR"}, {uint32(pfHUC), "HUC"}, {uint32(pfHMC), "HMC"}, {uint32(pfDAIF), "DAIF"},
		{uint32(pfPM), "PM"}, {uint32(pfDBF), "DBF"}, {uint32(pfHPF), "HPF"}, {uint32(pfVTFE), "VTFE"},
		{uint32(pfIPFE), "IPFE"}, {uint32(pfRA), "RA"}}
	sysBusFlags = []flagName{{uint32(sysBusFB), "FB"}, {uint32(sysBusBLEN4), "BLEN4"}, {uint32(sysBusBLEN8), "BLEN8"},
		{uint32(sysBusBLEN16), "BLEN16"}, {uint32(sysBusBLEN32), "BLEN32"}, {uint32(sysBusEAME), "EAME"},
		{uint32(sysBusAAL), "AAL"}, {uint32(sysBusMB), "MB"}}
	chStatFlags = []flagName{{uint32(chStatTI), "TI"}, {uint32(chStatTPS), "TPS"}, {uint32(chStatTBU), "TBU"},
		{uint32(chStatRI), "RI"}, {uint32(chStatRBU), "RBU"}, {uint32(chStatRPS), "RPS"}, {uint32(chStatRWT), "RWT"},
		{uint32(chStatFBE), "FBE"}, {uint32(chStatCDE), "CDE"}, {uint32(chStatAIS), "AIS"}, {uint32(chStatNIS), "NIS"}}
)

// speedName decodes MAC_Configuration PS/FES.
func speedName(v uint32) string {
	switch macCfgBits(v) & macCfgSpeedMask {
	case macCfgPS:
		return "10"
	case macCfgPS | macCfgFES:
		return "100"
	case macCfgFES:
		return "2500"
	}
	return "1000"
}

// DumpRegs reads and decodes the registers of a DWC Ethernet QoS register window
// and of its first channels and MTL queues (0 to queues-1). It only reads
// registers whose reads have no side effects.
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
	add("MAC_VERSION", regMACVersion, func(v uint32) []Field {
		return []Field{{"SNPSVER", fmt.Sprintf("%d.%d0", field(v, 4, 4), field(v, 0, 4))}, {"USERVER", fmt.Sprintf("0x%02x", field(v, 8, 8))}}
	})
	f0 := add("MAC_HW_FEATURE0", regMACHWFeature0, nil)
	f1 := add("MAC_HW_FEATURE1", regMACHWFeature1, nil)
	f2 := add("MAC_HW_FEATURE2", regMACHWFeature2, nil)
	f3 := add("MAC_HW_FEATURE3", regMACHWFeature3, nil)
	hw := decodeHW(0, [4]uint32{f0, f1, f2, f3})
	d.Registers[1].Fields = []Field{{"MMC", fmt.Sprint(field(f0, 8, 1))}, {"TS", fmt.Sprint(field(f0, 12, 1))},
		{"TXCOE", fmt.Sprint(field(f0, 14, 1))}, {"RXCOE", fmt.Sprint(field(f0, 16, 1))}, {"ADDMAC", fmt.Sprint(field(f0, 18, 1))}}
	d.Registers[2].Fields = []Field{{"RXFIFO", fmt.Sprint(hw.RxFIFO)}, {"TXFIFO", fmt.Sprint(hw.TxFIFO)},
		{"ADDR64", fmt.Sprint(hw.AddrBits)}, {"HASH_BINS", fmt.Sprint(hw.HashBins)}}
	d.Registers[3].Fields = []Field{{"RXQ", fmt.Sprint(hw.RxQueues)}, {"TXQ", fmt.Sprint(hw.TxQueues)},
		{"RXCH", fmt.Sprint(hw.RxChans)}, {"TXCH", fmt.Sprint(hw.TxChans)}}
	d.Registers[4].Fields = []Field{{"TBSSEL", fmt.Sprint(field(f3, 27, 1))}, {"FPESEL", fmt.Sprint(field(f3, 26, 1))},
		{"ESTSEL", fmt.Sprint(field(f3, 16, 1))}}
	add("MAC_CONFIG", regMACConfig, func(v uint32) []Field {
		return append(flagFields(v, macCfgFlags), Field{"SPEED", speedName(v)})
	})
	add("MAC_PACKET_FILTER", regMACPktFilter, func(v uint32) []Field { return flagFields(v, pfFlags) })
	add("MAC_RXQ_CTRL0", regMACRxQCtrl0, func(v uint32) []Field {
		fs := make([]Field, 0, 8)
		for q := uint(0); q < 8; q++ {
			names := [4]string{"off", "av", "dcb", "?"}
			fs = append(fs, Field{fmt.Sprintf("Q%d", q), names[field(v, 2*q, 2)]})
		}
		return fs
	})
	add("MAC_INT_EN", regMACIntEnable, nil)
	add("MAC_1US_TIC", regMAC1usTic, func(v uint32) []Field { return []Field{{"CSR_MHZ", fmt.Sprint(v + 1)}} })
	add("MAC_DEBUG", regMACDebug, nil)
	add("MAC_MDIO_ADDRESS", regMACMDIOAddr, func(v uint32) []Field {
		return []Field{{"GB", fmt.Sprint(field(v, 0, 1))}, {"C45E", fmt.Sprint(field(v, 1, 1))}, {"GOC", fmt.Sprint(field(v, 2, 2))},
			{"CR", fmt.Sprint(field(v, mdioCRShift, 4))}, {"RDA", fmt.Sprint(field(v, mdioRegShift, 5))}, {"PA", fmt.Sprint(field(v, mdioPAShift, 5))}}
	})
	add("MAC_MDIO_DATA", regMACMDIOData, func(v uint32) []Field { return []Field{{"GD", fmt.Sprintf("0x%04x", v&mdioDataMask)}} })
	hi := add("MAC_ADDR0_HIGH", regMACAddrHigh0, nil)
	lo := add("MAC_ADDR0_LOW", regMACAddrLow0, nil)
	d.Registers[len(d.Registers)-2].Fields = []Field{{"AE", fmt.Sprint(field(hi, 31, 1))}, {"MAC", macFromRegs(hi, lo).String()}}
	add("MMC_CONTROL", regMMCControl, func(v uint32) []Field {
		return []Field{{"RESET_ON_READ", fmt.Sprint(field(v, 2, 1))}, {"FREEZE", fmt.Sprint(field(v, 3, 1))}}
	})
	add("DMA_MODE", regDMABusMode, func(v uint32) []Field {
		return []Field{{"SWR", fmt.Sprint(field(v, 0, 1))}, {"INTM", fmt.Sprint(field(v, busModeINTMShift, 2))}, {"DCHE", fmt.Sprint(field(v, 19, 1))}}
	})
	add("DMA_SYSBUS_MODE", regDMASysBusMode, func(v uint32) []Field {
		return append(flagFields(v, sysBusFlags), Field{"RD_OSR_LMT", fmt.Sprint(field(v, 16, 4))}, Field{"WR_OSR_LMT", fmt.Sprint(field(v, 24, 4))})
	})
	add("DMA_STATUS", regDMAStatus, nil)
	add("DMA_DEBUG_STATUS0", regDMADebug0, nil)
	add("MTL_OPERATION_MODE", regMTLOperationMode, nil)
	add("MTL_RXQ_DMA_MAP0", regMTLRxQDMAMap0, nil)
	for q := 0; q < queues; q++ {
		add(fmt.Sprintf("MTL_TXQ%d_OP_MODE", q), mtlQ(q, mtlQTxOpMode), func(v uint32) []Field {
			return []Field{{"TSF", fmt.Sprint(field(v, 1, 1))}, {"TXQEN", fmt.Sprint(field(v, mtlTxQEnShift, 2))},
				{"TQS_BYTES", fmt.Sprint((field(v, mtlTxTQSShift, 9) + 1) * mtlTxTQSUnit)}}
		})
		add(fmt.Sprintf("MTL_RXQ%d_OP_MODE", q), mtlQ(q, mtlQRxOpMode), func(v uint32) []Field {
			return []Field{{"RSF", fmt.Sprint(field(v, 5, 1))}, {"FEP", fmt.Sprint(field(v, 4, 1))}, {"EHFC", fmt.Sprint(field(v, 7, 1))},
				{"RQS_BYTES", fmt.Sprint((field(v, mtlRxRQSShift, 10) + 1) * mtlRxRQSUnit)}}
		})
		add(fmt.Sprintf("MTL_Q%d_INT_CTRL", q), mtlQ(q, mtlQIntCtrl), func(v uint32) []Field {
			return []Field{{"RXOVFIS", fmt.Sprint(field(v, 16, 1))}, {"RXOIE", fmt.Sprint(field(v, 24, 1))}}
		})
	}
	for ch := 0; ch < queues; ch++ {
		pre := fmt.Sprintf("DMA_CH%d_", ch)
		add(pre+"CONTROL", chReg(ch, chControl), func(v uint32) []Field {
			return []Field{{"PBLx8", fmt.Sprint(field(v, 16, 1))}, {"DSL", fmt.Sprint(field(v, chCtrlDSLShift, 3))}, {"SPH", fmt.Sprint(field(v, 24, 1))}}
		})
		add(pre+"TX_CONTROL", chReg(ch, chTxControl), func(v uint32) []Field {
			return []Field{{"ST", fmt.Sprint(field(v, 0, 1))}, {"OSP", fmt.Sprint(field(v, 4, 1))}, {"TSE", fmt.Sprint(field(v, 12, 1))},
				{"TXPBL", fmt.Sprint(field(v, chTxPBLShift, 6))}, {"EDSE", fmt.Sprint(field(v, 28, 1))}}
		})
		add(pre+"RX_CONTROL", chReg(ch, chRxControl), func(v uint32) []Field {
			return []Field{{"SR", fmt.Sprint(field(v, 0, 1))}, {"RBSZ", fmt.Sprint(field(v, chRxRBSZShift, 14))}, {"RXPBL", fmt.Sprint(field(v, chRxPBLShift, 6))}}
		})
		th := r.Read32(uint32(chReg(ch, chTxBaseHi)))
		add(pre+"TX_BASE", chReg(ch, chTxBaseLo), func(v uint32) []Field {
			return []Field{{"ADDR", fmt.Sprintf("0x%x", uint64(th)<<32|uint64(v))}}
		})
		rh := r.Read32(uint32(chReg(ch, chRxBaseHi)))
		add(pre+"RX_BASE", chReg(ch, chRxBaseLo), func(v uint32) []Field {
			return []Field{{"ADDR", fmt.Sprintf("0x%x", uint64(rh)<<32|uint64(v))}}
		})
		add(pre+"TX_TAIL", chReg(ch, chTxTail), nil)
		add(pre+"RX_TAIL", chReg(ch, chRxTail), nil)
		add(pre+"TX_RING_LEN", chReg(ch, chTxRingLen), func(v uint32) []Field { return []Field{{"DESCS", fmt.Sprint(field(v, 0, 10) + 1)}} })
		add(pre+"RX_RING_LEN", chReg(ch, chRxRingLen), func(v uint32) []Field { return []Field{{"DESCS", fmt.Sprint(field(v, 0, 10) + 1)}} })
		add(pre+"INTR_ENA", chReg(ch, chIntrEnable), func(v uint32) []Field { return flagFields(v, chStatFlags[:10]) })
		add(pre+"CUR_TX_DESC", chReg(ch, chCurTxDesc), nil)
		add(pre+"CUR_RX_DESC", chReg(ch, chCurRxDesc), nil)
		add(pre+"STATUS", chReg(ch, chStatus), func(v uint32) []Field {
			return append(flagFields(v, chStatFlags), Field{"TEB", fmt.Sprint(field(v, chStatTEBShift, 3))}, Field{"REB", fmt.Sprint(field(v, chStatREBShift, 3))})
		})
	}
	return d
}
