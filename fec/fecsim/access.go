package fecsim

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// ringRegs maps a ring register offset to its ring and kind.
type ringKind uint8

const (
	kNone ringKind = iota
	kRDSR
	kTDSR
	kMRBR
	kRDAR
	kTDAR
)

var ringRegOffsets = [3][6]reg{
	{0, regRDSR, regTDSR, regMRBR, regRDAR, regTDAR},
	{0, regRDSR1, regTDSR1, regMRBR1, regRDAR1, regTDAR1},
	{0, regRDSR2, regTDSR2, regMRBR2, regRDAR2, regTDAR2},
}

// ringReg reports which ring register off is, for the rings the variant has.
// ok is false for ring registers of rings the variant lacks.
func (m *Model) ringReg(off reg) (q int, k ringKind, ok bool) {
	for q := range ringRegOffsets {
		for k := kRDSR; k <= kTDAR; k++ {
			if ringRegOffsets[q][k] == off {
				return q, k, q < m.info.rings
			}
		}
	}
	return 0, kNone, true
}

// Read32 implements sim.Model.
func (m *Model) Read32(off uint32) uint32 {
	return m.ReadReg(func() uint32 {
		if m.inResetLocked("read32", off) {
			return 0
		}
		return m.readLocked(off)
	})
}

// Write32 implements sim.Model.
func (m *Model) Write32(off, val uint32) {
	m.WriteReg(nil, m.txT, func() uint32 {
		if m.inResetLocked("write32", off) {
			return 0
		}
		return m.writeLocked(off, val)
	})
}

// inResetLocked reports (and records as a fault) an access made while
// ECR.RESET is in progress; reading ECR to see RESET clear is the one access
// allowed. The access is refused: reads return 0, writes are lost.
func (m *Model) inResetLocked(op string, off uint32) bool {
	if !m.resetting || op == "read32" && off == regECR {
		return false
	}
	m.faults.Add(op, regName(off), uint64(off), "register access while ECR.RESET is in progress: the MAC is in reset and the access is lost; poll ECR until RESET reads 0 (Linux fec_restart waits 10 us)")
	return true
}

func (m *Model) unimplemented(op string, off uint32) {
	m.faults.Add(op, regName(off), uint64(off), "register not implemented by the %s ENET (or by the model)", m.cfg.Variant)
}

func (m *Model) readLocked(off uint32) uint32 {
	if q, k, ok := m.ringReg(off); k != kNone {
		if !ok {
			m.unimplemented("read32", off)
			return 0
		}
		r := &m.rings[q]
		switch k {
		case kRDSR:
			return r.rdsr
		case kTDSR:
			return r.tdsr
		case kMRBR:
			return r.mrbr
		case kRDAR:
			if r.rdar {
				return darActive
			}
			return 0
		case kTDAR:
			if r.tdar {
				return darActive
			}
			return 0
		}
	}
	switch off {
	case regEIR:
		return m.eir
	case regEIMR:
		return m.eimr
	case regECR:
		return m.ecr
	case regMMFR:
		return m.mmfr
	case regMSCR:
		return m.mscr
	case regMIBC:
		return m.mibc
	case regRCR:
		return m.rcr
	case regTCR:
		return m.tcr
	case regPALR:
		return m.palr
	case regPAUR:
		return m.paur
	case regOPD:
		return m.opd
	case regIAUR:
		return m.iaur
	case regIALR:
		return m.ialr
	case regGAUR:
		return m.gaur
	case regGALR:
		return m.galr
	case regTFWR:
		return m.tfwr
	case regFTRL:
		return m.ftrl
	case regTACC:
		return m.tacc
	case regRACC:
		return m.racc
	case regATCR:
		return m.atcr
	case regATVR:
		return m.atvr
	case regATOFF:
		return m.atoff
	case regATPER:
		return m.atper
	case regATCOR:
		return m.atcor
	case regATINC:
		return m.atinc
	case regATSTMP:
		return m.atstmp
	}
	if p := m.mqReg(off); p != nil {
		return *p
	}
	switch {
	case off >= regRSFL && off <= regTIPG:
		return m.fifo[(off-regRSFL)/4]
	case off >= regMIBFirst && off <= regMIBLast:
		if m.mibc&mibcCLEAR != 0 {
			return 0
		}
		return m.mib[(off-regMIBFirst)/4]
	case off >= regTCSR0 && off <= regTCLast:
		return m.tc[(off-regTCSR0)/4]
	}
	m.unimplemented("read32", off)
	return 0
}

// mqReg returns the storage of the registers only the multi-queue ENET has
// (coalescing, classification, DMA classes, QoS, EEE), or nil.
func (m *Model) mqReg(off uint32) *uint32 {
	if !m.info.coalesce {
		return nil
	}
	switch {
	case off >= regTXIC0 && off < regTXIC0+12:
		return &m.txic[(off-regTXIC0)/4]
	case off >= regRXIC0 && off < regRXIC0+12:
		return &m.rxic[(off-regRXIC0)/4]
	case off == regRCMR1 || off == regRCMR2:
		return &m.rcmr[(off-regRCMR1)/4]
	case off == regDMACFG1 || off == regDMACFG2:
		return &m.dmacfg[(off-regDMACFG1)/4]
	case off == regQOS:
		return &m.qos
	case off == regLPISLP:
		return &m.lpiSlp
	case off == regLPIWAKE:
		return &m.lpiWk
	}
	return nil
}

// writeLocked applies a register write and returns the TX rings to run
// (outside mu).
func (m *Model) writeLocked(off, val uint32) (kick uint32) {
	if q, k, ok := m.ringReg(off); k != kNone {
		if !ok {
			m.unimplemented("write32", off)
			return 0
		}
		return m.writeRingLocked(q, k, off, val)
	}
	switch off {
	case regEIR:
		m.eir &^= val
		m.updateIRQLocked()
	case regEIMR:
		m.eimr = val & eirImplemented
		m.updateIRQLocked()
	case regECR:
		m.writeECRLocked(val)
	case regMMFR:
		m.writeMMFRLocked(val)
	case regMSCR:
		m.writeMSCRLocked(val)
	case regMIBC:
		m.mibc = val&(mibcDIS|mibcCLEAR) | mibcIDLE
		if val&mibcCLEAR != 0 {
			m.mib = [nMIB]uint32{}
		}
	case regRCR:
		m.rcr = val &^ rcrGRS
	case regTCR:
		return m.writeTCRLocked(val)
	case regPALR:
		m.palr = val
	case regPAUR:
		m.paur = val&0xFFFF0000 | paurType
	case regOPD:
		m.opd = opdOpcode | val&0xFFFF
	case regIAUR:
		m.iaur = val
	case regIALR:
		m.ialr = val
	case regGAUR:
		m.gaur = val
	case regGALR:
		m.galr = val
	case regTFWR:
		m.tfwr = val & (tfwrSTRFWD | 0x3F)
	case regFTRL:
		m.ftrl = val & ftrlMask
	case regTACC:
		m.tacc = val & (tacc16 | taccIPCHK | taccPROCHK)
	case regRACC:
		m.racc = val & (raccPADREM | raccIPDIS | raccPRODIS | raccLINEDIS | racc16)
	case regATCR:
		m.writeATCRLocked(val)
	case regATVR:
		m.setTimerLocked(val)
		m.atvr = val
	case regATOFF:
		m.atoff = val
	case regATPER:
		m.atper = val
	case regATCOR:
		m.atcor = val
		m.retimeLocked()
	case regATINC:
		m.atinc = val
		m.retimeLocked()
	case regATSTMP:
		m.faults.Add("write32", "ATSTMP", uint64(off), "write to a read-only register")
	default:
		if p := m.mqReg(off); p != nil {
			if isCoalesceReg(off) {
				val &= icImplement
			}
			*p = val
			return 0
		}
		switch {
		case off >= regRSFL && off <= regTIPG:
			m.fifo[(off-regRSFL)/4] = val
		case off >= regMIBFirst && off <= regMIBLast:
			if m.mibc&mibcDIS == 0 {
				m.faults.Add("write32", regName(off), uint64(off), "MIB counter written while counting (MIBC.MIB_DIS clear): the write is lost; disable the MIB first")
				return 0
			}
			m.mib[(off-regMIBFirst)/4] = val
		case off >= regTCSR0 && off <= regTCLast:
			m.tc[(off-regTCSR0)/4] = val
		default:
			m.unimplemented("write32", off)
		}
	}
	return 0
}

// writeECRLocked applies ECR: RESET resets the MAC (every register, the rings,
// the MIB); clearing ETHEREN stops both directions at once and moves every
// ring's current BD back to RDSR/TDSR; setting it checks the MAC configuration.
func (m *Model) writeECRLocked(val uint32) {
	if val&ecrRESET != 0 {
		// Every register takes its reset value now; RESET reads set until
		// the sequence ends (resetDone), a few microseconds later.
		m.resetLocked()
		m.resetting = true
		m.ecr |= ecrRESET
		m.resetT.ArmAfter(m.sched.Between(resetMin, resetMax))
		return
	}
	was := m.ecr
	nv := ecrFixed | val&ecrWritable
	if nv&ecrETHEREN != 0 && was&ecrETHEREN == 0 && !m.checkEnableLocked(nv) {
		nv &^= ecrETHEREN // refused: the MAC stays disabled
	}
	if was&ecrETHEREN != 0 && nv&ecrETHEREN == 0 {
		m.stopLocked()
	}
	if nv&ecrETHEREN != 0 && was&ecrETHEREN == 0 {
		for i := range m.rings {
			r := &m.rings[i]
			r.rxCur, r.txCur = r.rdsr, r.tdsr
			r.rdar, r.tdar = false, false
			r.txClearing, r.txHung = false, false
		}
	}
	if was&ecrETHEREN != 0 && nv&ecrETHEREN != 0 && (was^nv)&(ecrEN1588|ecrDBSWP|ecrSPEED) != 0 {
		m.faults.Add("write32", "ECR", uint64(regECR), "ECR 0x%08x changes EN1588/DBSWP/SPEED while ETHEREN is set: clear ETHEREN first", val)
	}
	m.ecr = nv
}

// stopLocked is what clearing ETHEREN does: DMA stops, RDAR/TDAR clear, the
// current BD pointers return to the ring starts.
func (m *Model) stopLocked() {
	m.gen++
	if m.rxFIFO != nil {
		// "The uDMA, buffer descriptor, and FIFO control logic are reset,
		// including the buffer descriptor and FIFO pointers" (ECR.ETHEREN
		// in the i.MX reference manuals): the frames waiting are gone.
		m.rxFIFO.Flush()
	}
	for i := range m.rings {
		r := &m.rings[i]
		r.rxCur, r.txCur = r.rdsr, r.tdsr
		r.rdar, r.tdar = false, false
		r.txClearing, r.txHung = false, false
	}
	m.resetCoalescersLocked()
	// The uDMA engines stop and start over: a hung transmitter or stalled
	// receiver (fault.go) with them, which is what Linux's fec_restart
	// relies on for multi-queue ENETs, where it clears ETHEREN instead of
	// resetting the MAC.
	m.inj.Clear(sim.FaultTxHang, sim.FaultRxStall)
}

// checkEnableLocked validates the configuration at ETHEREN's rising edge.
func (m *Model) checkEnableLocked(ecr uint32) bool {
	var why string
	switch {
	case m.rcr&rcrMIIMODE == 0:
		why = "RCR.MII_MODE is clear (the reference manual: this bit must always be set)"
	case m.cfg.RMII && m.rcr&rcrRMII == 0:
		why = "the board wires the PHY through RMII but RCR.RMII_MODE is clear"
	case m.cfg.RMII && m.rcr&rcrRGMII != 0:
		why = "the board wires the PHY through RMII but RCR.RGMII_EN is set"
	case !m.cfg.RMII && m.rcr&rcrRGMII == 0:
		why = "the board wires the PHY through RGMII but RCR.RGMII_EN is clear"
	case !m.cfg.RMII && m.rcr&rcrRMII != 0:
		why = "the board wires the PHY through RGMII but RCR.RMII_MODE is set"
	case ecr&ecrSPEED != 0 && m.cfg.RMII:
		why = "ECR.SPEED (1000 Mb/s) on an RMII interface"
	default:
		return true
	}
	m.faults.Add("write32", "ECR", uint64(regECR), "ETHEREN set but %s: the MAC would pass no frames; ETHEREN refused", why)
	return false
}

// resetMin and resetMax bound how long ECR.RESET stays set: a few
// microseconds, within the 10 us Linux's fec_restart waits after writing it.
const (
	resetMin = time.Microsecond
	resetMax = 8 * time.Microsecond
)

// resetDone ends ECR.RESET (the resetT timer).
func (m *Model) resetDone() {
	m.mu.Lock()
	if m.resetting {
		m.resetting = false
		m.ecr &^= ecrRESET
	}
	m.mu.Unlock()
}

func (m *Model) writeTCRLocked(val uint32) (kick uint32) {
	was := m.tcr
	m.tcr = val & tcrWritable
	if val&tcrGTS != 0 && was&tcrGTS == 0 {
		// Transmission is synchronous: no frame is ever in flight here, so the
		// graceful stop completes at once (QEMU does the same).
		m.eir |= eirGRA
		m.updateIRQLocked()
	}
	if val&tcrGTS == 0 && was&tcrGTS != 0 && m.ecr&ecrETHEREN != 0 {
		for i := 0; i < m.info.rings; i++ {
			if m.rings[i].tdar {
				kick |= 1 << i
			}
		}
	}
	return kick
}

func (m *Model) writeRingLocked(q int, k ringKind, off, val uint32) (kick uint32) {
	r := &m.rings[q]
	on := m.ecr&ecrETHEREN != 0
	switch k {
	case kRDSR, kTDSR:
		if on {
			m.faults.Add("write32", regName(off), uint64(off), "ring start 0x%08x written while ETHEREN is set: clear ETHEREN first", val)
			return 0
		}
		if val%dsrAlign != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "ring start 0x%08x is not %d-byte aligned (bits 2:0 are not stored: the ENET would fetch BDs from the wrong address)", val, dsrAlign)
			return 0
		}
		if k == kRDSR {
			r.rdsr, r.rxCur = val, val
		} else {
			r.tdsr, r.txCur = val, val
		}
	case kMRBR:
		if val&^mrbrMask != 0 || val == 0 {
			m.faults.Add("write32", regName(off), uint64(off), "MRBR %d: want a non-zero multiple of 16 below 16384 (R_BUF_SIZE is bits 13:4)", val)
			return 0
		}
		if on {
			m.faults.Add("write32", regName(off), uint64(off), "MRBR written while ETHEREN is set: clear ETHEREN first")
			return 0
		}
		r.mrbr = val
	case kRDAR:
		m.activateRxLocked(q, off)
	case kTDAR:
		if !on {
			m.faults.Add("write32", regName(off), uint64(off), "TDAR written while ECR.ETHEREN is clear: the write is ignored and nothing is sent")
			return 0
		}
		if q > 0 && m.dmacfg[q-1]&dmaClassEn == 0 {
			m.faults.Add("write32", regName(off), uint64(off), "TDAR%d written with DMA_CFG%d.DMA_CLASS_EN clear: ring %d is never serviced", q, q, q)
			return 0
		}
		switch {
		case r.tdar && m.info.err007885:
			m.faults.Add("write32", regName(off), uint64(off), "ERR007885: TDAR%d written while it reads 1 (the ring is running): a write that meets the uDMA clearing TDAR hangs the transmit state machines; read TDAR up to four times and write only when it reads 0 (Linux FEC_QUIRK_ERR007885)", q)
			r.txHung = true
			return 0
		case r.txClearing:
			return 0 // ERR006358: lost; the device clears TDAR anyway
		}
		if m.tcr&tcrGTS != 0 || r.txHung {
			r.tdar = true
			return 0 // held until GTS is cleared
		}
		if !r.tdar && !m.txReadyAtKickLocked(q) {
			return 0 // fetched at the write, not ready: idle again (txfetch.go)
		}
		r.tdar = true
		return 1 << q
	}
	return 0
}

// regNames are the fixed registers, for fault messages.
var regNames = map[reg]string{
	regEIR: "EIR", regEIMR: "EIMR", regRDAR: "RDAR", regTDAR: "TDAR", regECR: "ECR", regMMFR: "MMFR",
	regMSCR: "MSCR", regMIBC: "MIB_CTRLSTAT", regRCR: "RCR", regTCR: "TCR", regPALR: "PALR", regPAUR: "PAUR",
	regOPD: "OPD", regIAUR: "IAUR", regIALR: "IALR", regGAUR: "GAUR", regGALR: "GALR", regTFWR: "TFWR",
	regRDSR1: "RDSR1", regTDSR1: "TDSR1", regMRBR1: "MRBR1", regRDSR2: "RDSR2", regTDSR2: "TDSR2",
	regMRBR2: "MRBR2", regRDSR: "RDSR", regTDSR: "TDSR", regMRBR: "MRBR", regFTRL: "FTRL", regTACC: "TACC",
	regRACC: "RACC", regRCMR1: "RCMR1", regRCMR2: "RCMR2", regDMACFG1: "DMA_CFG1", regDMACFG2: "DMA_CFG2",
	regRDAR1: "RDAR1", regTDAR1: "TDAR1", regRDAR2: "RDAR2", regTDAR2: "TDAR2", regQOS: "QOS",
	regLPISLP: "LPI_SLEEP", regLPIWAKE: "LPI_WAKE", regATCR: "ATCR", regATVR: "ATVR", regATOFF: "ATOFF",
	regATPER: "ATPER", regATCOR: "ATCOR", regATINC: "ATINC", regATSTMP: "ATSTMP",
	regRMONTPackets: "RMON_T_PACKETS", regRMONRPackets: "RMON_R_PACKETS", regIEEERDrop: "IEEE_R_DROP",
}

// regName names a register for fault messages (rare path: it may allocate).
func regName(off uint32) string {
	if n, ok := regNames[off]; ok {
		return n
	}
	switch {
	case off >= regTXIC0 && off < regTXIC0+12:
		return fmt.Sprintf("TXIC%d", (off-regTXIC0)/4)
	case off >= regRXIC0 && off < regRXIC0+12:
		return fmt.Sprintf("RXIC%d", (off-regRXIC0)/4)
	case off >= regMIBFirst && off <= regMIBLast:
		return fmt.Sprintf("MIB+0x%x", off-regMIBFirst)
	}
	return ""
}
