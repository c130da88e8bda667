package dwmac

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Dump is a named, decoded snapshot of the registers that describe a port's
// state. It never reads registers whose reads have side effects: not the MMC
// counters (reset on read), not MAC_Interrupt_Status, not the channels' missed
// frame counters.
type Dump = nic.RegDump

// RegValue is one register with its decoded fields.
type RegValue = nic.RegValue

// Field is one decoded field of a register.
type Field = nic.Field

// Dump.String's layout: names padded to 22 characters (DMA_CH0_TX_RING_LEN and
// the like fit), offsets in four hex digits (the register window is 64 KiB).
const (
	dumpNameWidth    = 22
	dumpOffsetDigits = 4
)

// Dump reads the port's registers, with each channel's RX watchdog as
// RIWT0, RIWT1, ... decoded at the port's clock (coalesce.go).
func (p *Port) Dump() *Dump {
	p.ctl.Lock() // keep MDIO sequences whole
	defer p.ctl.Unlock()
	d := DumpRegs(p.regs, p.NumQueues())
	for ch := 0; ch < p.NumQueues(); ch++ {
		d.Read(p.regs, fmt.Sprintf("RIWT%d", ch), uint32(chReg(ch, chRxWatchdog)), p.riwtFields)
	}
	return d
}

func field(v uint32, lo, width uint) uint32 { return v >> lo & (1<<width - 1) }

var (
	macCfgFlags = []nic.Flag{{Mask: uint32(macCfgRE), Name: "RE"}, {Mask: uint32(macCfgTE), Name: "TE"}, {Mask: uint32(macCfgDCRS), Name: "DCRS"},
		{Mask: uint32(macCfgLM), Name: "LM"}, {Mask: uint32(macCfgDM), Name: "DM"}, {Mask: uint32(macCfgFES), Name: "FES"}, {Mask: uint32(macCfgPS), Name: "PS"},
		{Mask: uint32(macCfgJE), Name: "JE"}, {Mask: uint32(macCfgJD), Name: "JD"}, {Mask: uint32(macCfgBE), Name: "BE"}, {Mask: uint32(macCfgWD), Name: "WD"},
		{Mask: uint32(macCfgACS), Name: "ACS"}, {Mask: uint32(macCfgCST), Name: "CST"}, {Mask: uint32(macCfgS2KP), Name: "S2KP"}, {Mask: uint32(macCfgIPC), Name: "IPC"}}
	pfFlags = []nic.Flag{{Mask: uint32(pfPR), Name: "PR"}, {Mask: uint32(pfHUC), Name: "HUC"}, {Mask: uint32(pfHMC), Name: "HMC"}, {Mask: uint32(pfDAIF), Name: "DAIF"},
		{Mask: uint32(pfPM), Name: "PM"}, {Mask: uint32(pfDBF), Name: "DBF"}, {Mask: uint32(pfHPF), Name: "HPF"}, {Mask: uint32(pfVTFE), Name: "VTFE"},
		{Mask: uint32(pfIPFE), Name: "IPFE"}, {Mask: uint32(pfRA), Name: "RA"}}
	sysBusFlags = []nic.Flag{{Mask: uint32(sysBusFB), Name: "FB"}, {Mask: uint32(sysBusBLEN4), Name: "BLEN4"}, {Mask: uint32(sysBusBLEN8), Name: "BLEN8"},
		{Mask: uint32(sysBusBLEN16), Name: "BLEN16"}, {Mask: uint32(sysBusBLEN32), Name: "BLEN32"}, {Mask: uint32(sysBusEAME), Name: "EAME"},
		{Mask: uint32(sysBusAAL), Name: "AAL"}, {Mask: uint32(sysBusMB), Name: "MB"}}
	chStatFlags = []nic.Flag{{Mask: uint32(chStatTI), Name: "TI"}, {Mask: uint32(chStatTPS), Name: "TPS"}, {Mask: uint32(chStatTBU), Name: "TBU"},
		{Mask: uint32(chStatRI), Name: "RI"}, {Mask: uint32(chStatRBU), Name: "RBU"}, {Mask: uint32(chStatRPS), Name: "RPS"}, {Mask: uint32(chStatRWT), Name: "RWT"},
		{Mask: uint32(chStatFBE), Name: "FBE"}, {Mask: uint32(chStatCDE), Name: "CDE"}, {Mask: uint32(chStatAIS), Name: "AIS"}, {Mask: uint32(chStatNIS), Name: "NIS"}}
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
	d := &Dump{NameWidth: dumpNameWidth, OffsetDigits: dumpOffsetDigits}
	add := func(name string, off reg, decode func(uint32) []Field) uint32 {
		return d.Read(r, name, uint32(off), decode)
	}
	add("MAC_VERSION", regMACVersion, func(v uint32) []Field {
		return []Field{{Name: "SNPSVER", Value: fmt.Sprintf("%d.%d0", field(v, 4, 4), field(v, 0, 4))}, {Name: "USERVER", Value: fmt.Sprintf("0x%02x", field(v, 8, 8))}}
	})
	f0 := add("MAC_HW_FEATURE0", regMACHWFeature0, nil)
	f1 := add("MAC_HW_FEATURE1", regMACHWFeature1, nil)
	f2 := add("MAC_HW_FEATURE2", regMACHWFeature2, nil)
	f3 := add("MAC_HW_FEATURE3", regMACHWFeature3, nil)
	hw := decodeHW(0, [4]uint32{f0, f1, f2, f3})
	d.Registers[1].Fields = []Field{{Name: "MMC", Value: fmt.Sprint(field(f0, 8, 1))}, {Name: "TS", Value: fmt.Sprint(field(f0, 12, 1))},
		{Name: "TXCOE", Value: fmt.Sprint(field(f0, 14, 1))}, {Name: "RXCOE", Value: fmt.Sprint(field(f0, 16, 1))}, {Name: "ADDMAC", Value: fmt.Sprint(field(f0, 18, 1))}}
	d.Registers[2].Fields = []Field{{Name: "RXFIFO", Value: fmt.Sprint(hw.RxFIFO)}, {Name: "TXFIFO", Value: fmt.Sprint(hw.TxFIFO)},
		{Name: "ADDR64", Value: fmt.Sprint(hw.AddrBits)}, {Name: "HASH_BINS", Value: fmt.Sprint(hw.HashBins)}}
	d.Registers[3].Fields = []Field{{Name: "RXQ", Value: fmt.Sprint(hw.RxQueues)}, {Name: "TXQ", Value: fmt.Sprint(hw.TxQueues)},
		{Name: "RXCH", Value: fmt.Sprint(hw.RxChans)}, {Name: "TXCH", Value: fmt.Sprint(hw.TxChans)}}
	d.Registers[4].Fields = []Field{{Name: "TBSSEL", Value: fmt.Sprint(field(f3, 27, 1))}, {Name: "FPESEL", Value: fmt.Sprint(field(f3, 26, 1))},
		{Name: "ESTSEL", Value: fmt.Sprint(field(f3, 16, 1))}}
	add("MAC_CONFIG", regMACConfig, func(v uint32) []Field {
		return append(nic.FlagFields(v, macCfgFlags), Field{Name: "SPEED", Value: speedName(v)})
	})
	add("MAC_PACKET_FILTER", regMACPktFilter, func(v uint32) []Field { return nic.FlagFields(v, pfFlags) })
	add("MAC_RXQ_CTRL0", regMACRxQCtrl0, func(v uint32) []Field {
		fs := make([]Field, 0, 8)
		for q := uint(0); q < 8; q++ {
			names := [4]string{"off", "av", "dcb", "?"}
			fs = append(fs, Field{Name: fmt.Sprintf("Q%d", q), Value: names[field(v, 2*q, 2)]})
		}
		return fs
	})
	add("MAC_INT_EN", regMACIntEnable, nil)
	add("MAC_1US_TIC", regMAC1usTic, func(v uint32) []Field { return []Field{{Name: "CSR_MHZ", Value: fmt.Sprint(v + 1)}} })
	add("MAC_DEBUG", regMACDebug, nil)
	add("MAC_MDIO_ADDRESS", regMACMDIOAddr, func(v uint32) []Field {
		return []Field{{Name: "GB", Value: fmt.Sprint(field(v, 0, 1))}, {Name: "C45E", Value: fmt.Sprint(field(v, 1, 1))}, {Name: "GOC", Value: fmt.Sprint(field(v, 2, 2))},
			{Name: "CR", Value: fmt.Sprint(field(v, mdioCRShift, 4))}, {Name: "RDA", Value: fmt.Sprint(field(v, mdioRegShift, 5))}, {Name: "PA", Value: fmt.Sprint(field(v, mdioPAShift, 5))}}
	})
	add("MAC_MDIO_DATA", regMACMDIOData, func(v uint32) []Field { return []Field{{Name: "GD", Value: fmt.Sprintf("0x%04x", v&mdioDataMask)}} })
	hi := add("MAC_ADDR0_HIGH", regMACAddrHigh0, nil)
	lo := add("MAC_ADDR0_LOW", regMACAddrLow0, nil)
	d.Registers[len(d.Registers)-2].Fields = []Field{{Name: "AE", Value: fmt.Sprint(field(hi, 31, 1))}, {Name: "MAC", Value: macFromRegs(hi, lo).String()}}
	add("MMC_CONTROL", regMMCControl, func(v uint32) []Field {
		return []Field{{Name: "RESET_ON_READ", Value: fmt.Sprint(field(v, 2, 1))}, {Name: "FREEZE", Value: fmt.Sprint(field(v, 3, 1))}}
	})
	add("DMA_MODE", regDMABusMode, func(v uint32) []Field {
		return []Field{{Name: "SWR", Value: fmt.Sprint(field(v, 0, 1))}, {Name: "INTM", Value: fmt.Sprint(field(v, busModeINTMShift, 2))}, {Name: "DCHE", Value: fmt.Sprint(field(v, 19, 1))}}
	})
	add("DMA_SYSBUS_MODE", regDMASysBusMode, func(v uint32) []Field {
		return append(nic.FlagFields(v, sysBusFlags), Field{Name: "RD_OSR_LMT", Value: fmt.Sprint(field(v, 16, 4))}, Field{Name: "WR_OSR_LMT", Value: fmt.Sprint(field(v, 24, 4))})
	})
	add("DMA_STATUS", regDMAStatus, nil)
	add("DMA_DEBUG_STATUS0", regDMADebug0, nil)
	add("MTL_OPERATION_MODE", regMTLOperationMode, nil)
	add("MTL_RXQ_DMA_MAP0", regMTLRxQDMAMap0, nil)
	for q := 0; q < queues; q++ {
		add(fmt.Sprintf("MTL_TXQ%d_OP_MODE", q), mtlQ(q, mtlQTxOpMode), func(v uint32) []Field {
			return []Field{{Name: "TSF", Value: fmt.Sprint(field(v, 1, 1))}, {Name: "TXQEN", Value: fmt.Sprint(field(v, mtlTxQEnShift, 2))},
				{Name: "TQS_BYTES", Value: fmt.Sprint((field(v, mtlTxTQSShift, 9) + 1) * mtlTxTQSUnit)}}
		})
		add(fmt.Sprintf("MTL_RXQ%d_OP_MODE", q), mtlQ(q, mtlQRxOpMode), func(v uint32) []Field {
			return []Field{{Name: "RSF", Value: fmt.Sprint(field(v, 5, 1))}, {Name: "FEP", Value: fmt.Sprint(field(v, 4, 1))}, {Name: "EHFC", Value: fmt.Sprint(field(v, 7, 1))},
				{Name: "RQS_BYTES", Value: fmt.Sprint((field(v, mtlRxRQSShift, 10) + 1) * mtlRxRQSUnit)}}
		})
		add(fmt.Sprintf("MTL_Q%d_INT_CTRL", q), mtlQ(q, mtlQIntCtrl), func(v uint32) []Field {
			return []Field{{Name: "RXOVFIS", Value: fmt.Sprint(field(v, 16, 1))}, {Name: "RXOIE", Value: fmt.Sprint(field(v, 24, 1))}}
		})
	}
	for ch := 0; ch < queues; ch++ {
		pre := fmt.Sprintf("DMA_CH%d_", ch)
		add(pre+"CONTROL", chReg(ch, chControl), func(v uint32) []Field {
			return []Field{{Name: "PBLx8", Value: fmt.Sprint(field(v, 16, 1))}, {Name: "DSL", Value: fmt.Sprint(field(v, chCtrlDSLShift, 3))}, {Name: "SPH", Value: fmt.Sprint(field(v, 24, 1))}}
		})
		add(pre+"TX_CONTROL", chReg(ch, chTxControl), func(v uint32) []Field {
			return []Field{{Name: "ST", Value: fmt.Sprint(field(v, 0, 1))}, {Name: "OSP", Value: fmt.Sprint(field(v, 4, 1))}, {Name: "TSE", Value: fmt.Sprint(field(v, 12, 1))},
				{Name: "TXPBL", Value: fmt.Sprint(field(v, chTxPBLShift, 6))}, {Name: "EDSE", Value: fmt.Sprint(field(v, 28, 1))}}
		})
		add(pre+"RX_CONTROL", chReg(ch, chRxControl), func(v uint32) []Field {
			return []Field{{Name: "SR", Value: fmt.Sprint(field(v, 0, 1))}, {Name: "RBSZ", Value: fmt.Sprint(field(v, chRxRBSZShift, 14))}, {Name: "RXPBL", Value: fmt.Sprint(field(v, chRxPBLShift, 6))}}
		})
		th := r.Read32(uint32(chReg(ch, chTxBaseHi)))
		add(pre+"TX_BASE", chReg(ch, chTxBaseLo), func(v uint32) []Field {
			return []Field{{Name: "ADDR", Value: fmt.Sprintf("0x%x", uint64(th)<<32|uint64(v))}}
		})
		rh := r.Read32(uint32(chReg(ch, chRxBaseHi)))
		add(pre+"RX_BASE", chReg(ch, chRxBaseLo), func(v uint32) []Field {
			return []Field{{Name: "ADDR", Value: fmt.Sprintf("0x%x", uint64(rh)<<32|uint64(v))}}
		})
		add(pre+"TX_TAIL", chReg(ch, chTxTail), nil)
		add(pre+"RX_TAIL", chReg(ch, chRxTail), nil)
		add(pre+"TX_RING_LEN", chReg(ch, chTxRingLen), func(v uint32) []Field { return []Field{{Name: "DESCS", Value: fmt.Sprint(field(v, 0, 10) + 1)}} })
		add(pre+"RX_RING_LEN", chReg(ch, chRxRingLen), func(v uint32) []Field { return []Field{{Name: "DESCS", Value: fmt.Sprint(field(v, 0, 10) + 1)}} })
		add(pre+"INTR_ENA", chReg(ch, chIntrEnable), func(v uint32) []Field { return nic.FlagFields(v, chStatFlags[:10]) })
		add(pre+"CUR_TX_DESC", chReg(ch, chCurTxDesc), nil)
		add(pre+"CUR_RX_DESC", chReg(ch, chCurRxDesc), nil)
		add(pre+"STATUS", chReg(ch, chStatus), func(v uint32) []Field {
			return append(nic.FlagFields(v, chStatFlags), Field{Name: "TEB", Value: fmt.Sprint(field(v, chStatTEBShift, 3))}, Field{Name: "REB", Value: fmt.Sprint(field(v, chStatREBShift, 3))})
		})
	}
	return d
}
