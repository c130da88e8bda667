package sim

// The fiber side of the 88E151x (datasheet: page 1, registers 0-15, the
// 1000BASE-X/SGMII media interface with its own control, status and
// autonegotiation registers). Linux's marvell driver configures it on every
// config_aneg outside SGMII mode (m88e1510_config_aneg: copper on page 0,
// then marvell_config_aneg_fiber on page 1, which rewrites page 1's
// advertisement with the 1000BASE-X bits and restarts its negotiation), and
// reads page 1's status before the copper one (marvell_read_status). No
// fiber is connected to the model: the fiber link is down, its partner
// silent; its control and advertisement are the page's own storage, so
// writing them leaves the copper registers alone (on the part they are
// separate registers: 1000X full duplex is ANAR bit 5, 10BASE-T half duplex
// on the copper side).

// fiberLocked reports whether reg is a fiber register: page 1's 0-15 on the
// Marvell layout.
func (p *PHY) fiberLocked(reg int) bool {
	return p.cfg.StatStyle == PHYStatMarvell && p.page&0xff == 1 && reg < 16
}

// Fiber status: no link, AN able, preamble suppression, extended status
// (1000BASE-X full and half duplex: ESTATUS 15:14 on the fiber page).
const (
	fiberBMSR uint16 = BMSRExtStatus | BMSRMFPreSup | BMSRANAbility | BMSRExtCap
	fiberESR  uint16 = 0xC000
)

func (p *PHY) readFiberLocked(reg int) uint16 {
	switch reg {
	case MIIBMSR:
		return fiberBMSR
	case MIIPHYID1:
		return p.cfg.ID1
	case MIIPHYID2:
		return p.cfg.ID2
	case MIIANLPAR, MIIANER:
		return 0 // nothing at the other end of the fiber
	case MIIESTATUS:
		return fiberESR
	}
	return p.paged[1<<5|uint32(reg)]
}

func (p *PHY) writeFiberLocked(reg int, val uint16) {
	switch reg {
	case MIIBMSR, MIIPHYID1, MIIPHYID2, MIIANLPAR, MIIANER, MIIESTATUS:
		p.faults.Add("mdio-write", "fiber "+miiName(reg), uint64(reg), "write of 0x%04x to a read-only PHY register (page 1)", val)
		return
	case MIIBMCR:
		val &^= BMCRReset | BMCRANRestart // self-clearing; no fiber to negotiate with
	}
	if p.paged == nil {
		p.paged = map[uint32]uint16{}
	}
	p.paged[1<<5|uint32(reg)] = val
}
