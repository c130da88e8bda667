package dwmacsim

import "github.com/xnic-dev/xnic/sim"

// MDIO (databook "MDIO interface"; stmmac_mdio.c). Software writes
// MAC_MDIO_Data (the data to write; for clause 45 also the register number in
// 31:16), then MAC_MDIO_Address with the PHY address, register or MMD, GOC,
// CR and GB set. The MAC clears GB when the frame is done; a read's result is
// then in MAC_MDIO_Data[15:0].
//
// The model runs the frame at once but keeps GB set for the first read of
// MAC_MDIO_Address after the command, so a driver must poll GB; reading
// MAC_MDIO_Data, or writing either register, while GB is set is a fault.
// Addresses with nothing behind them read 0xFFFF (the bus pull-up). The PHY
// answers clause 22 at Config.PHYAddr; on the Intel variant the xPCS answers
// clause 45 at 0x16 with its identifier, a self-clearing soft reset, and
// VR_MII_AN_INTR_STS mirroring the PHY's link.

func (m *Model) readMDIOAddrLocked() uint32 {
	v := m.mdioAddr
	if m.mdioBusy > 0 {
		m.mdioBusy--
		if m.mdioBusy == 0 {
			m.mdioAddr &^= mdioGB
		}
	}
	return v
}

func (m *Model) writeMDIOAddrLocked(val uint32) {
	if m.mdioAddr&mdioGB != 0 {
		m.faults.Add("write32", "MAC_MDIO_Address", uint64(regMACMDIOAddr), "MDIO command 0x%08x written while the previous one is busy (GB set)", val)
		return
	}
	m.mdioAddr = val
	if val&mdioGB == 0 {
		return // setting fields without starting a frame
	}
	pa := int(val&mdioPAMask) >> mdioPAShift
	rda := (val & mdioRDAMask) >> mdioRDAShift
	goc := val & mdioGOCMask
	c45 := val&mdioC45E != 0
	if goc != mdioGOCWrite && goc != mdioGOCRead && !(c45 && goc == mdioGOCPRIA) {
		m.faults.Add("write32", "MAC_MDIO_Address", uint64(regMACMDIOAddr), "MDIO GOC=%d is neither write (1) nor read (3)", goc>>mdioGOCShift)
		m.mdioAddr &^= mdioGB
		return
	}
	m.mdioBusy = 1
	write := goc == mdioGOCWrite
	data := uint16(m.mdioData & mdioDataMask)
	var res uint32 = mdioAbsentVal
	switch {
	case !c45 && pa == m.phy.Addr() && m.phyInResetLocked():
		// A PHY held in reset drives nothing (soc.go).
	case !c45 && pa == m.phy.Addr():
		// The PHY reports link changes on its own goroutine: safe under mu.
		if write {
			m.phy.Write(int(rda), data)
		} else {
			res = uint32(m.phy.Read(int(rda)))
		}
	case !c45 && pa == serdesAddr && !m.cfg.NoXPCS:
		res = m.serdesAccessLocked(rda, write, data)
	case c45 && pa == xpcsAddr && !m.cfg.NoXPCS:
		res = m.xpcsAccessLocked(rda, m.mdioData>>mdioRAShift, write, data)
	}
	if !write {
		m.mdioData = m.mdioData&^mdioDataMask | res
	}
}

// xpcsAccessLocked is a clause-45 access to the xPCS: MMD mmd, register r.
func (m *Model) xpcsAccessLocked(mmd, r uint32, write bool, data uint16) uint32 {
	key := mmd<<16 | r
	if write {
		defer m.refreshSGMIILocked()
		switch {
		case mmd == mmdVend2 && r == 0 && data&xpcsSoftReset != 0:
			for k := range m.xpcs {
				delete(m.xpcs, k) // soft reset: back to defaults, self-clearing
			}
		case mmd == mmdVend2 && r == xpcsANIntrSts:
			m.xpcs[key] = data // software clears the AN-complete interrupt
		default:
			m.xpcs[key] = data
		}
		return 0
	}
	switch {
	case (mmd == mmdVend2 || mmd == mmdPCS) && r == sim.MIIPHYID1:
		return xpcsID >> 16
	case (mmd == mmdVend2 || mmd == mmdPCS) && r == sim.MIIPHYID2:
		return xpcsID & 0xffff
	case mmd == mmdVend2 && r == xpcsANIntrSts:
		st := m.phy.Link()
		var v uint32
		if st.Up && m.serdesUpLocked() && m.xpcsSGMIILocked() {
			v |= xpcsStsLink
			switch st.SpeedMbps {
			case 1000:
				v |= xpcsStsSpd1000
			case 100:
				v |= xpcsStsSpd100
			}
			if st.FullDuplex {
				v |= xpcsStsFD
			}
		}
		return v
	}
	return uint32(m.xpcs[key])
}
