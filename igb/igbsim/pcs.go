package igbsim

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// The SerDes ports: the fiber and SerDes device IDs, whose NVM sets
// CTRL_EXT.LINK_MODE to 11b (SerDes; Linux's
// E1000_CTRL_EXT_LINK_MODE_PCIE_SERDES) at reset (ctrlExtReset). Their link
// is the MAC's physical coding sub-layer over the SerDes to an optical module
// or a backplane, not the internal copper PHY: the I210 datasheet 3.7.4.1
// ("SerDes/1000BASE-BX Link Configuration") and chapter 8.17 (PCS
// registers), the 82576 datasheet's PCS chapter alike, with offsets and bits
// cross-checked against Linux's e1000_regs.h and e1000_defines.h.
//
//   - PCS_CFG0.PCS_EN (bit 3) enables the PCS; clear, it sends and receives
//     nothing. CTRL_EXT.SDP3_DATA (bit 7) set shuts the optical module's
//     laser (Linux's igb_shutdown_serdes_link_82575 clears PCS_EN and sets
//     SDP3_DATA on close; igb_power_up_serdes_link_82575 undoes both).
//     Either way the port carries nothing: a frame transmitted then is a
//     fault (it goes nowhere) and received frames count as RxNoLink.
//   - Config.Backplane has the NVM wire the port for 1000BASE-KX (LINK_MODE
//     01b) instead: the same PCS, with a partner that never negotiates.
//   - The link runs 1000BASE-X only: 1000 Mb/s full duplex (datasheet
//     3.7.4.1.2: "other link speeds are not supported"; STATUS.SPEED reads
//     1000). CTRL forcing another speed or half duplex is a fault, and so is
//     PCS_LCTL forcing one (FSD with FSV other than 1000 or FDV half).
//   - Autonegotiation (PCS_LCTL.AN_ENABLE, bit 16) is clause 37's: started
//     by AN_RESTART (bit 17, self-clearing), by AN_ENABLE going 0 to 1, and
//     when the receiver gains synchronisation; it completes after
//     Config.AutonegDelay with the partner's base page in PCS_LPAB, and the
//     link is up when both pages have full duplex (PCS_ANADV/LPAB bit 5).
//     With AN_ENABLE clear the link is forced (3.7.4.1.4): up with CTRL.SLU
//     and signal, if the partner forces too (Config.SerDesPartnerForced). A
//     forced side facing a negotiating partner, or a negotiating side
//     facing a forced partner, gets no link, except that PCS_LCTL.AN_TIMEOUT
//     (bit 18, 3.7.4.1.5) brings the link up after twice the negotiation
//     time when the partner never answers.
//   - PCS_LSTAT (RO): LINK_OK (0), speed 1000 (2:1 = 10b), full duplex (3),
//     SYNC_OK (4), AN_COMPLETE (16), AN_TIMEDOUT (18), as Linux's
//     igb_get_pcs_speed_and_duplex_82575 and igb_config_fc_after_link_up
//     read them. Link changes raise ICR.LSC.
//   - MDIC reaches no PHY: the internal copper PHY is not in the link (Linux
//     gives these ports phy.type e1000_phy_none and never touches MDIC). An
//     MDI cycle completes with ERROR and is a fault.
//   - CTRL_EXT.LINK_MODE is the NVM's: a write changing it is a fault and
//     does not take.
//   - PCS_CFG0 and CTRL_EXT.SDP3_DATA are taken as outliving CTRL.RST and a
//     function reset, as the model takes the copper PHY's BMCR (left.go):
//     which resets restore them was not at hand, and a driver that powers
//     the SerDes up as igb_power_up_serdes_link_82575 does is right either
//     way. PCS_LCTL and PCS_ANADV return to their reset values.
//   - SCVPC (the SerDes code violation counter Linux reads in
//     igb_clear_hw_cntrs_82575) reads 0: the model's line has no code errors.
//
// On the copper ports PCS_CFG0, PCS_LCTL, PCS_LSTAT, PCS_ANADV and SCVPC stay
// plain storage (regs.go), as before: the PCS is not in their link.
const (
	regPCSCFG0  reg = 0x04200
	regPCSLCTL  reg = 0x04208
	regPCSLSTAT reg = 0x0420C
	regPCSANADV reg = 0x04218
	regPCSLPAB  reg = 0x0421C
	regSCVPC    reg = 0x04228

	pcsCfgEn uint32 = 1 << 3

	pcsLctlFLV       uint32 = 1 << 0
	pcsLctlFSVMask   uint32 = 3 << 1
	pcsLctlFSV1000   uint32 = 2 << 1
	pcsLctlFDV       uint32 = 1 << 3
	pcsLctlFSD       uint32 = 1 << 4
	pcsLctlForceLink uint32 = 1 << 5
	pcsLctlANEnable  uint32 = 1 << 16
	pcsLctlANRestart uint32 = 1 << 17
	pcsLctlANTimeout uint32 = 1 << 18

	pcsLstatLinkOK    uint32 = 1 << 0
	pcsLstatSpeed1000 uint32 = 2 << 1
	pcsLstatFull      uint32 = 1 << 3
	pcsLstatSyncOK    uint32 = 1 << 4
	pcsLstatANDone    uint32 = 1 << 16
	pcsLstatANTimeout uint32 = 1 << 18

	// Base page bits of PCS_ANADV and PCS_LPAB (clause 37.2.1).
	pcsPageFD    uint32 = 1 << 5
	pcsPageHD    uint32 = 1 << 6
	pcsPagePause uint32 = 1 << 7
	pcsPageAsm   uint32 = 1 << 8
	pcsPageNextP uint32 = 1 << 15

	// pcsANADVReset: full duplex with symmetric and asymmetric pause, as the
	// NVM's defaults load it.
	pcsANADVReset = pcsPageFD | pcsPagePause | pcsPageAsm
	// pcsPartnerPage is what the model's fiber partner advertises.
	pcsPartnerPage = pcsPageFD | pcsPagePause | pcsPageAsm

	ctrlExtSDP3Data   uint32 = 1 << 7
	ctrlExtLinkModeMk uint32 = 3 << 22
	ctrlExtLinkModeKX uint32 = 1 << 22 // E1000_CTRL_EXT_LINK_MODE_1000BASE_KX

	ctrlFRCSPD   uint32 = 1 << 11
	ctrlFRCDPX   uint32 = 1 << 12
	ctrlSpeedSel uint32 = 3 << 8

	// nvmCompat is NVM word 3 (Linux NVM_COMPAT); on the 82576 bit 14
	// (E1000_EEPROM_PCS_AUTONEG_DISABLE_BIT) has igb_setup_serdes_link_82575
	// force the SerDes link instead of negotiating.
	nvmCompat              = 3
	nvmCompatPCSANDisabled = 1 << 14
)

// pcsState is the PCS of a SerDes port; guarded by Model.mu (up is also an
// atomic on the Model, for the wire's line rate).
type pcsState struct {
	cfg0, lctl, anadv, lpab uint32
	signal                  bool // the partner's light reaches the receiver
	anRunning               bool // negotiation under way (timer armed or waiting for a partner that never answers)
	anDone, anTimedOut      bool
	up                      bool
	gen                     uint64 // bumps whenever a pending negotiation is cancelled
	timer                   *time.Timer
}

// serdes reports whether the port's link is the PCS's (LINK_MODE SerDes, or
// 1000BASE-KX with Config.Backplane, as the NVM sets it). Immutable.
func (m *Model) serdes() bool { return m.info.ctrlExtReset() == ctrlExtLinkModeSerD }

// SerDes reports whether the model is a SerDes (fiber) port.
func (m *Model) SerDes() bool { return m.serdes() }

// checkSerDes refuses configurations that do not fit the port's media.
func (c Config) checkSerDes(info devInfo) error {
	serdes := info.ctrlExtReset() == ctrlExtLinkModeSerD
	switch {
	case serdes && c.PartnerNo1000:
		return fmt.Errorf("igbsim: PartnerNo1000 on the %s, a SerDes port: its partner runs 1000BASE-X: %w", info.name, ErrConfig)
	case !serdes && c.SerDesPartnerForced:
		return fmt.Errorf("igbsim: SerDesPartnerForced on the %s, which is not a SerDes port: %w", info.name, ErrConfig)
	case !serdes && c.Left.Has(sim.LeftSerDesDown):
		return fmt.Errorf("igbsim: the %s has no SerDes to leave powered down (its link is the copper PHY's): %w", info.name, ErrConfig)
	case !serdes && c.Backplane:
		return fmt.Errorf("igbsim: Backplane on the %s, which is not a SerDes port: %w", info.name, ErrConfig)
	case c.NVMPCSAutonegOff && (!serdes || info.fam != fam82576):
		return fmt.Errorf("igbsim: NVMPCSAutonegOff on the %s: the NVM bit is the 82576 SerDes ports' (Linux reads it on the 82575/82576 only): %w", info.name, ErrConfig)
	}
	return nil
}

// nvmCompatWord is NVM word 3 of the model's image.
func (m *Model) nvmCompatWord() uint16 {
	if m.cfg.NVMPCSAutonegOff {
		return nvmCompatPCSANDisabled
	}
	return 0
}

// ctrlExtResetValue is CTRL_EXT after a reset: LINK_MODE as the NVM wires
// the port (ctrlExtReset; 01b, 1000BASE-KX, on a backplane SerDes port).
func (m *Model) ctrlExtResetValue() uint32 {
	if m.cfg.Backplane {
		return ctrlExtLinkModeKX
	}
	return m.info.ctrlExtReset()
}

// partnerForced reports whether the link partner never negotiates (clause
// 37): Config.SerDesPartnerForced, and every backplane partner, as the
// 82576, I350 and I210 have no clause-73 negotiation (I210 datasheet
// 3.7.4.2; Linux's igb_setup_serdes_link_82575 forces KX links).
func (m *Model) partnerForced() bool { return m.cfg.SerDesPartnerForced || m.cfg.Backplane }

// keptCtrlExt is the part of CTRL_EXT a reset leaves (the laser's SDP3).
func (m *Model) keptCtrlExt() uint32 {
	if m.serdes() {
		return ctrlExtSDP3Data
	}
	return 0
}

// resetPCSLocked puts the PCS at its reset values, keeping PCS_CFG0 after
// the power-on reset (the first), and drops the link as the MAC's reset
// does (STATUS.LU goes with CTRL.SLU, without LSC).
func (m *Model) resetPCSLocked() {
	p := &m.pcs
	if m.gen == 1 {
		p.cfg0 = pcsCfgEn
		p.signal = !m.cfg.Unplugged
	}
	p.lctl, p.anadv = 0, pcsANADVReset
	m.pcsStopANLocked()
	p.up = false
	m.pcsUp.Store(false)
}

// pcsPoweredLocked reports whether the PCS and the laser are on.
func (m *Model) pcsPoweredLocked() bool {
	return m.pcs.cfg0&pcsCfgEn != 0 && m.ctrlExt&ctrlExtSDP3Data == 0
}

// readPCSLocked reads a PCS register of a SerDes port.
func (m *Model) readPCSLocked(off uint32) (uint32, bool) {
	if !m.serdes() {
		return 0, false
	}
	p := &m.pcs
	switch off {
	case regPCSCFG0:
		return p.cfg0, true
	case regPCSLCTL:
		return p.lctl, true
	case regPCSLSTAT:
		return m.pcsLstatLocked(), true
	case regPCSANADV:
		return p.anadv, true
	case regPCSLPAB:
		return p.lpab, true
	case regSCVPC:
		return 0, true
	}
	return 0, false
}

func (m *Model) pcsLstatLocked() uint32 {
	p := &m.pcs
	var v uint32
	if m.pcsSyncLocked() {
		v |= pcsLstatSyncOK
	}
	if p.up {
		v |= pcsLstatLinkOK | pcsLstatSpeed1000 | pcsLstatFull
	}
	if p.anDone {
		v |= pcsLstatANDone
	}
	if p.anTimedOut {
		v |= pcsLstatANTimeout
	}
	return v
}

// writePCSLocked writes a PCS register of a SerDes port.
func (m *Model) writePCSLocked(off, val uint32) bool {
	if !m.serdes() {
		return false
	}
	p := &m.pcs
	switch off {
	case regPCSCFG0:
		p.cfg0 = val & pcsCfgEn
		if val&^pcsCfgEn != 0 {
			m.faults.Add("write32", "PCS_CFG0", uint64(off), "PCS_CFG0 0x%08x: only PCS_EN is modelled (isolate and soft reset are not)", val)
		}
		m.pcsUpdateLocked(false)
	case regPCSLCTL:
		m.writePCSLctlLocked(val)
	case regPCSANADV:
		if val&pcsPageNextP != 0 {
			m.faults.Add("write32", "PCS_ANADV", uint64(off), "PCS_ANADV 0x%08x asks for next pages, which the model does not exchange", val)
			val &^= pcsPageNextP
		}
		p.anadv = val & 0xFFFF // takes effect at the next negotiation
	case regPCSLSTAT, regPCSLPAB, regSCVPC:
		m.faults.Add("write32", regName(off), uint64(off), "write to a read-only PCS register")
	default:
		return false
	}
	return true
}

func (m *Model) writePCSLctlLocked(val uint32) {
	p := &m.pcs
	if val&pcsLctlFSD != 0 && (val&pcsLctlFSVMask != pcsLctlFSV1000 || val&pcsLctlFDV == 0) {
		m.faults.Add("write32", "PCS_LCTL", uint64(regPCSLCTL), "PCS_LCTL 0x%08x forces a speed/duplex other than 1000 full: SerDes runs 1000BASE-X only (I210 datasheet 3.7.4.1.2)", val)
		return
	}
	if val&(pcsLctlForceLink|pcsLctlFLV) != 0 {
		m.faults.Add("write32", "PCS_LCTL", uint64(regPCSLCTL), "PCS_LCTL 0x%08x forces the link value (FORCE_LINK/FLV), which the model does not do: the link follows the line", val)
		val &^= pcsLctlForceLink | pcsLctlFLV
	}
	restart := val&pcsLctlANRestart != 0 || (val&pcsLctlANEnable != 0 && p.lctl&pcsLctlANEnable == 0)
	p.lctl = val &^ pcsLctlANRestart // self-clearing
	m.pcsUpdateLocked(restart)
}

// writeCtrlExtLocked writes CTRL_EXT: LINK_MODE is the NVM's.
func (m *Model) writeCtrlExtLocked(val uint32) {
	if (val^m.ctrlExt)&ctrlExtLinkModeMk != 0 {
		m.faults.Add("write32", "CTRL_EXT", uint64(regCTRLEXT), "CTRL_EXT 0x%08x changes LINK_MODE from %d to %d: the port is wired for the NVM's mode, which the model keeps",
			val, m.ctrlExt>>22&3, val>>22&3)
		val = val&^ctrlExtLinkModeMk | m.ctrlExt&ctrlExtLinkModeMk
	}
	m.ctrlExt = val
	if m.serdes() {
		m.pcsUpdateLocked(false)
	}
}

// pcsCtrlWrittenLocked checks a CTRL write on a SerDes port and follows SLU.
func (m *Model) pcsCtrlWrittenLocked(val uint32) {
	if !m.serdes() {
		return
	}
	if (val&ctrlFRCSPD != 0 && val&ctrlSpeedSel != ctrlSpeed1000) || (val&ctrlFRCDPX != 0 && val&ctrlFD == 0) {
		m.faults.Add("write32", "CTRL", uint64(regCTRL), "CTRL 0x%08x forces a speed/duplex other than 1000 full on a SerDes port (1000BASE-X only)", val)
	}
	m.pcsUpdateLocked(false)
}

// pcsSyncLocked reports whether the receiver is synchronised to the
// partner's code groups: PCS on, laser on, light from the partner.
func (m *Model) pcsSyncLocked() bool { return m.pcs.signal && m.pcsPoweredLocked() }

// pcsUpdateLocked brings the PCS link where its registers and the line put
// it; restart starts a new negotiation.
func (m *Model) pcsUpdateLocked(restart bool) {
	p := &m.pcs
	if !m.serdes() {
		return
	}
	if !m.pcsSyncLocked() {
		m.pcsStopANLocked()
		m.pcsSetLocked(false)
		return
	}
	if p.lctl&pcsLctlANEnable == 0 {
		m.pcsStopANLocked()
		m.pcsSetLocked(m.ctrl&ctrlSLU != 0 && m.partnerForced())
		return
	}
	if !restart && (p.anRunning || p.anDone || p.anTimedOut) {
		return
	}
	m.pcsStopANLocked()
	m.pcsSetLocked(false)
	p.anRunning = true
	gen, d := p.gen, m.cfg.AutonegDelay
	if d <= 0 {
		d = sim.DefaultAutonegDelay
	}
	if m.partnerForced() {
		if p.lctl&pcsLctlANTimeout == 0 {
			return // the partner never answers: negotiation goes on for ever
		}
		d *= 2
	}
	p.timer = time.AfterFunc(d, func() { m.pcsANDone(gen) })
}

// pcsStopANLocked cancels a negotiation and forgets its result.
func (m *Model) pcsStopANLocked() {
	p := &m.pcs
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.anRunning, p.anDone, p.anTimedOut = false, false, false
	p.lpab = 0
}

// pcsANDone ends the negotiation gen (a timer's goroutine).
func (m *Model) pcsANDone(gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &m.pcs
	if m.closed || gen != p.gen {
		return
	}
	p.timer, p.anRunning = nil, false
	if m.partnerForced() {
		p.anTimedOut = true // AN_TIMEOUT: link assumed (3.7.4.1.5)
		m.pcsSetLocked(true)
		return
	}
	p.anDone = true
	p.lpab = pcsPartnerPage
	m.pcsSetLocked(p.anadv&p.lpab&pcsPageFD != 0) // no common duplex: no link
}

// pcsSetLocked sets the PCS link, raising LSC when it changes.
func (m *Model) pcsSetLocked(up bool) {
	if m.pcs.up == up {
		return
	}
	m.pcs.up = up
	m.pcsUp.Store(up)
	m.icr |= icrLSC
	m.raiseOtherLocked()
}

// SetSerDesSignal puts light on the fiber (true) or takes it off (false): the
// SerDes counterpart of PHY().SetConnected.
func (m *Model) SetSerDesSignal(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pcs.signal == on {
		return
	}
	m.pcs.signal = on
	m.pcsUpdateLocked(false)
}

// mediaLinkUp is the link of the port's media (lock-free): the PCS's on a
// SerDes port, the PHY's otherwise.
func (m *Model) mediaLinkUp() bool {
	if m.serdes() {
		return m.pcsUp.Load()
	}
	return m.phy.LinkUp()
}

// mediaLink is the media's link state, for STATUS and the wire's line rate.
func (m *Model) mediaLink() nic.LinkState {
	if m.serdes() {
		if m.pcsUp.Load() {
			return nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}
		}
		return nic.LinkState{}
	}
	return m.phy.Link()
}

// noMDIOPHYLocked ends an MDI cycle on a SerDes port: no PHY answers.
func (m *Model) noMDIOPHYLocked(val uint32) bool {
	if !m.serdes() {
		return false
	}
	m.faults.Add("write32", "MDIC", uint64(regMDIC), "MDIC 0x%08x on a SerDes port: the link is the PCS's and the internal copper PHY is not in it (Linux's igb gives it phy.type none and never uses MDIC)", val)
	m.mdic = val | mdicReady | mdicError
	return true
}

// pcsSinkLocked is where transmitted frames go from the MAC to the line: on
// a SerDes port with the PCS disabled or the laser off, nowhere, and each
// frame is a fault.
func (m *Model) pcsSinkLocked(wire func([]byte)) func([]byte) {
	if !m.serdes() || m.pcsPoweredLocked() {
		return wire
	}
	return m.txPCSDown
}

func (m *Model) txPCSDown(frame []byte) {
	m.faults.Add("tx", "PCS_CFG0", uint64(regPCSCFG0), "a %d-byte frame transmitted while the SerDes is off (PCS_CFG0.PCS_EN clear or CTRL_EXT.SDP3_DATA shutting the laser): it goes nowhere", len(frame))
}
