package fecsim

// MII management (RM "MII management frame register"; fec_main.c
// fec_enet_mdio_read/write). A write to MMFR sends one management frame to the
// MDIO bus, if MDC runs (MSCR[7:0] non-zero); when it completes, EIR.MII is set
// and, for a read, MMFR 15:0 holds the data. The model completes the frame
// within the write.
//
// Event generation follows the hardware's rule quoted in Linux
// (FEC_QUIRK_CLEAR_SETUP_MII): writing MMFR makes an MII event only when
// MSCR[7:0] is non-zero; writing MSCR from zero to non-zero while MMFR is
// non-zero makes one too (a spurious EIR.MII a driver must avoid by writing
// MMFR = 0 first).

func (m *Model) writeMSCRLocked(val uint32) {
	old := m.mscr & mscrMDIOEvent
	m.mscr = val & mscrWritable
	if old == 0 && m.mscr&mscrMDIOEvent != 0 && m.mmfr != 0 {
		m.raiseLocked(eirMII)
	}
}

// writeMMFRLocked starts a management frame; it completes (mdioDone) after
// the device side's latency (on the hardware 64 MDC cycles: 25.6 us at the
// 2.5 MHz Linux sets). A write while a frame is running is refused.
func (m *Model) writeMMFRLocked(val uint32) {
	if m.mdioBusy {
		m.faults.Add("write32", "MMFR", uint64(regMMFR), "MMFR 0x%08x written while the previous management frame is still being clocked out (EIR.MII not set yet): the frame on MDIO would be corrupted; the write is refused (wait for EIR.MII)", val)
		return
	}
	m.mmfr = val
	if m.mscr&mscrMDIOEvent == 0 {
		if val != 0 {
			m.faults.Add("write32", "MMFR", uint64(regMMFR), "management frame 0x%08x with MSCR.MII_SPEED 0: MDC is not running, no frame goes out and EIR.MII never sets", val)
		}
		return
	}
	if m.mscr&mscrSpeedMask == 0 {
		m.faults.Add("write32", "MMFR", uint64(regMMFR), "management frame with MSCR.MII_SPEED 0 (only HOLDTIME/DIS_PRE set): MDC is not running")
		return
	}
	m.mdioBusy, m.mdioFrame = true, val
	m.mdioT.Arm()
}

// mdioDone is the end of the management frame (the mdioT timer): the PHY
// sees it, MMFR holds the read data, EIR.MII sets.
func (m *Model) mdioDone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mdioBusy {
		return // cut off by a reset
	}
	m.mdioBusy = false
	val := m.mdioFrame
	st := val >> mmfrSTShift & 3
	op := val >> mmfrOPShift & 3
	pa := int(val >> mmfrPAShift & 0x1F)
	ra := int(val >> mmfrRAShift & 0x1F)
	ta := val >> mmfrTAShift & 3
	data := uint32(0xFFFF) // nobody drives the bus: the pull-up reads ones
	switch {
	case m.phyInResetLocked():
		// A PHY held in reset drives nothing: reads see the pull-up, writes
		// are lost (soc.go).
	case ta != 2:
		m.faults.Add("write32", "MMFR", uint64(regMMFR), "management frame 0x%08x with TA=%d: clause 22/45 frames need TA=10b; the PHY ignores it", val, ta)
	case st == 1: // clause 22
		switch op {
		case 1:
			if phy := m.busPHYLocked(pa); phy != nil {
				phy.Write(ra, uint16(val))
			}
			data = val & mmfrData
		case 2:
			if phy := m.busPHYLocked(pa); phy != nil {
				data = uint32(phy.Read(ra))
			}
		default:
			m.faults.Add("write32", "MMFR", uint64(regMMFR), "clause-22 frame 0x%08x with OP=%d: want 01 (write) or 10 (read)", val, op)
		}
	case st == 0 && m.info.c45:
		// Clause 45: the board PHY is clause-22 only, so nothing answers.
		if op == 0 || op == 1 {
			data = val & mmfrData
		}
	case st == 0:
		m.faults.Add("write32", "MMFR", uint64(regMMFR), "clause-45 frame 0x%08x: the %s ENET does clause 22 only", val, m.cfg.Variant)
	default:
		m.faults.Add("write32", "MMFR", uint64(regMMFR), "management frame 0x%08x with ST=%d: want 01 (clause 22) or 00 (clause 45)", val, st)
	}
	m.mmfr = val&^mmfrData | data
	m.cnt.MDIOFrames++
	m.raiseLocked(eirMII)
}
