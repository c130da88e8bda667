package igb

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// SerDes (fiber and backplane) ports. CTRL_EXT.LINK_MODE says what the NVM
// wired; Linux's igb_get_invariants_82575 makes LINK_MODE SerDes and
// 1000BASE-KX ports e1000_media_type_internal_serdes (after asking the SFP
// module over I2C what it is, falling back to the CTRL_EXT setting when it
// cannot tell, which is what this driver does without asking). Their link is
// the MAC's PCS (82576 and I210 datasheets, "PCS registers"; Linux
// e1000_regs.h, e1000_defines.h):
//
//   - power up as igb_power_up_serdes_link_82575 does on open: PCS_CFG0.PCS_EN
//     set, CTRL_EXT.SDP3_DATA cleared (the optical module's laser on). Linux's
//     igb_shutdown_serdes_link_82575 leaves both the other way when an
//     interface closes or the driver is removed.
//   - set the link up as igb_setup_serdes_link_82575 does: SCTL's SerDes
//     loopback off, CTRL_EXT.I2C_ENA, CTRL.SLU, on the 82576 the two
//     software-defined pins and CONNSW.ENRGSRC (energy detect from the
//     SerDes); the MAC forced to 1000 Mb/s full duplex (SerDes runs
//     1000BASE-X only); PCS_LCTL either negotiating (clause 37: AN_ENABLE
//     and AN_RESTART) or forced to 1000 full (FSD, FORCE_FCTRL) on
//     1000BASE-KX ports and on 82576 ports whose NVM word 3 (NVM_COMPAT) has
//     bit 14, E1000_EEPROM_PCS_AUTONEG_DISABLE_BIT.
//   - the link is PCS_LSTAT's (igb_get_pcs_speed_and_duplex_82575: up when
//     LINK_OK and SYNC_OK are both set), not STATUS's.
//   - there is no PHY on MDIO: Linux sets phy.type e1000_phy_none. ReadPHY
//     and WritePHY refuse.
//
// SGMII ports (LINK_MODE SGMII) are refused: their PHY sits behind the PCS,
// reached over I2C (I2CCMD) or an external MDIO (MDICNFG.EXT_MDIO on the I350
// and I210, MDIC.DEST on the 82576), and needs the SFP/PHY probing of
// igb_get_phy_id_82575 and igb_set_sfp_media_type_82575, none of which this
// driver does.

// Media is what a port's link runs over.
type Media uint8

const (
	MediaCopper Media = iota // the internal copper PHY over MDIO
	MediaSerDes              // 1000BASE-X over the SerDes: fiber, SFP or backplane
)

func (m Media) String() string {
	switch m {
	case MediaCopper:
		return "copper"
	case MediaSerDes:
		return "serdes"
	}
	return fmt.Sprintf("Media(%d)", uint8(m))
}

// PCS and SerDes registers (82576/I210 datasheets, PCS registers; Linux
// E1000_PCS_*, E1000_SCTL, E1000_CONNSW).
const (
	regSCTL      reg = 0x00024 // SerDes control
	regCONNSW    reg = 0x00034 // copper/fiber switch control
	regPCS_CFG0  reg = 0x04200 // PCS configuration 0
	regPCS_LCTL  reg = 0x04208 // PCS link control
	regPCS_LSTAT reg = 0x0420C // PCS link status (RO)
	regPCS_ANADV reg = 0x04218 // clause-37 advertisement
	regPCS_LPAB  reg = 0x0421C // link partner ability (RO)
)

// pcsBits are the PCS_* fields (E1000_PCS_*).
type pcsBits uint32

const (
	pcsCfgEn pcsBits = 1 << 3 // PCS_CFG0.PCS_EN

	pcsLctlFLV       pcsBits = 1 << 0  // forced link value
	pcsLctlFSV1000   pcsBits = 2 << 1  // forced speed 1000
	pcsLctlFDVFull   pcsBits = 1 << 3  // forced duplex full
	pcsLctlFSD       pcsBits = 1 << 4  // force speed and duplex
	pcsLctlForceLink pcsBits = 1 << 5  // force link
	pcsLctlForceFC   pcsBits = 1 << 7  // force flow control
	pcsLctlANEnable  pcsBits = 1 << 16 // clause-37 autonegotiation
	pcsLctlANRestart pcsBits = 1 << 17 // self-clearing

	pcsLstatLinkOK    pcsBits = 1 << 0
	pcsLstatSpeed100  pcsBits = 1 << 1
	pcsLstatSpeed1000 pcsBits = 1 << 2
	pcsLstatFull      pcsBits = 1 << 3
	pcsLstatSyncOK    pcsBits = 1 << 4
	pcsLstatANDone    pcsBits = 1 << 16

	// PCS_ANADV pause bits (E1000_TXCW_PAUSE, E1000_TXCW_ASM_DIR).
	pcsAdvPause  pcsBits = 1 << 7
	pcsAdvAsmDir pcsBits = 1 << 8
)

// CTRL bits of the SerDes setup (E1000_CTRL_SPD_1000, E1000_CTRL_SWDPIN*).
const (
	ctrlSpeed1000 ctrlBits = 2 << 8
	ctrlSWDPIN0   ctrlBits = 1 << 18
	ctrlSWDPIN1   ctrlBits = 1 << 19
)

const regEERD reg = 0x00014 // EEPROM read (E1000_EERD)

const (
	sctlSerDesLoopbackOff uint32 = 0x0400  // E1000_SCTL_DISABLE_SERDES_LOOPBACK
	connswEnrgSrc         uint32 = 1 << 2  // E1000_CONNSW_ENRGSRC
	ctrlExtSDP3Data       uint32 = 1 << 7  // E1000_CTRL_EXT_SDP3_DATA: the laser's TX disable
	ctrlExtI2CEna         uint32 = 1 << 25 // E1000_CTRL_I2C_ENA
	nvmCompat                    = 0x0003  // NVM_COMPAT
	nvmPCSAutonegOff      uint16 = 1 << 14 // E1000_EEPROM_PCS_AUTONEG_DISABLE_BIT
	eerdStart             uint32 = 1 << 0  // E1000_NVM_RW_REG_START
	eerdDone              uint32 = 1 << 1  // E1000_NVM_RW_REG_DONE
	eerdAddrShift                = 2       // E1000_NVM_RW_ADDR_SHIFT
	eerdDataShift                = 16      // E1000_NVM_RW_REG_DATA
	eerdTimeout                  = 10 * time.Millisecond
)

// detectMedia reads CTRL_EXT.LINK_MODE after reset: copper and SerDes ports
// are driven, SGMII ports refused.
func (p *Port) detectMedia() error {
	mode := p.r32(regCTRL_EXT) & ctrlExtLinkModeMask
	switch mode {
	case 0:
		p.media = MediaCopper
	case ctrlExtLinkModeKX, ctrlExtLinkModeSerDes:
		p.media = MediaSerDes
		p.linkModeKX = mode == ctrlExtLinkModeKX
	default:
		return fmt.Errorf("CTRL_EXT.LINK_MODE is SGMII: the PHY sits behind the PCS on I2C or an external MDIO, "+
			"whose probing (Linux's igb_get_phy_id_82575, igb_set_sfp_media_type_82575) this driver does not do; "+
			"copper and SerDes (fiber, backplane) ports are driven: %w", nic.ErrNotSupported)
	}
	return nil
}

// Media is what the port's link runs over (from CTRL_EXT.LINK_MODE).
func (p *Port) Media() Media { return p.media }

// PCSAutoneg reports whether a SerDes port negotiates its link (clause 37)
// rather than forcing 1000 Mb/s full duplex.
func (p *Port) PCSAutoneg() bool { return p.media == MediaSerDes && p.pcsAutoneg }

// readNVM reads an NVM word through EERD (Linux igb_read_nvm_eerd).
func (p *Port) readNVM(word int) (uint16, error) {
	p.w32(regEERD, uint32(word)<<eerdAddrShift|eerdStart)
	var v uint32
	if !nic.Poll(eerdTimeout, 10*time.Microsecond, func() bool { v = p.r32(regEERD); return v&eerdDone != 0 }) {
		return 0, fmt.Errorf("NVM word %#x: EERD.DONE not set after %v: %w", word, eerdTimeout, nic.ErrTimeout)
	}
	return uint16(v >> eerdDataShift), nil
}

// setupSerDesLink powers the SerDes up and sets the PCS link up as Linux's
// igb_power_up_serdes_link_82575 and igb_setup_serdes_link_82575 do.
func (p *Port) setupSerDesLink(ctrl ctrlBits) error {
	p.w32(regPCS_CFG0, p.r32(regPCS_CFG0)|uint32(pcsCfgEn))
	p.w32(regCTRL_EXT, p.r32(regCTRL_EXT)&^ctrlExtSDP3Data)
	p.r32(regSTATUS)
	time.Sleep(time.Millisecond) // Linux: usleep_range(1000, 2000)

	p.w32(regSCTL, sctlSerDesLoopbackOff)
	p.w32(regCTRL_EXT, p.r32(regCTRL_EXT)&^ctrlExtSDP3Data|ctrlExtI2CEna)
	ctrl |= ctrlSLU
	if p.model.MAC == MAC82576 {
		ctrl |= ctrlSWDPIN0 | ctrlSWDPIN1
		p.w32(regCONNSW, p.r32(regCONNSW)|connswEnrgSrc)
	}
	p.pcsAutoneg = !p.linkModeKX // KX: forced, parallel detect only
	if p.pcsAutoneg && p.model.MAC == MAC82576 {
		w, err := p.readNVM(nvmCompat)
		if err != nil {
			return err
		}
		p.pcsAutoneg = w&nvmPCSAutonegOff == 0
	}
	// 1000BASE-X only: the MAC forced to 1000 full, the PCS's forced value too.
	ctrl |= ctrlSpeed1000 | ctrlFRCSPD | ctrlFD | ctrlFRCDPX
	p.w32(regCTRL, uint32(ctrl))

	lctl := pcsBits(p.r32(regPCS_LCTL)) | pcsLctlFSV1000 | pcsLctlFDVFull
	lctl &^= pcsLctlANEnable | pcsLctlFLV | pcsLctlFSD | pcsLctlForceLink
	if p.pcsAutoneg {
		lctl |= pcsLctlANEnable | pcsLctlANRestart
		lctl &^= pcsLctlForceFC
		// No pause advertised: the driver runs no flow control (Linux's
		// e1000_fc_none case).
		p.w32(regPCS_ANADV, p.r32(regPCS_ANADV)&^uint32(pcsAdvPause|pcsAdvAsmDir))
	} else {
		lctl |= pcsLctlFSD | pcsLctlForceFC
	}
	p.w32(regPCS_LCTL, uint32(lctl))
	return nil
}

// pcsLink decodes PCS_LSTAT (igb_get_pcs_speed_and_duplex_82575).
func pcsLink(v pcsBits) nic.LinkState {
	if uint32(v) == 0xFFFFFFFF || v&pcsLstatLinkOK == 0 || v&pcsLstatSyncOK == 0 {
		return nic.LinkState{}
	}
	l := nic.LinkState{Up: true, FullDuplex: v&pcsLstatFull != 0, SpeedMbps: 10}
	switch {
	case v&pcsLstatSpeed1000 != 0:
		l.SpeedMbps = 1000
	case v&pcsLstatSpeed100 != 0:
		l.SpeedMbps = 100
	}
	return l
}

// serdesOnlyWhy is why a SerDes port runs 1000 Mb/s full duplex only.
const serdesOnlyWhy = "a SerDes port runs 1000BASE-X only: 1000 Mb/s full duplex (I210 datasheet 3.7.4.1.2; Linux's igb_set_spd_dplx refuses other modes on internal SerDes)"

// checkSerDesMode refuses what a SerDes port does not run.
func (p *Port) checkSerDesMode(speedMbps int, fullDuplex bool) error {
	if p.media != MediaSerDes || (speedMbps == 1000 && fullDuplex) {
		return nil
	}
	return fmt.Errorf("igb: %s: %d Mb/s %s: %s: %w", p.name, speedMbps, duplexName(fullDuplex), serdesOnlyWhy, nic.ErrLinkMode)
}

func duplexName(full bool) string {
	if full {
		return "full duplex"
	}
	return "half duplex"
}

// errNoPHY is what PHY access on a SerDes port returns.
func (p *Port) errNoPHY() error {
	return fmt.Errorf("igb: %s: a SerDes port has no PHY on MDIO (its link is the PCS's; see PCS_LSTAT in the register dump): %w", p.name, nic.ErrNotSupported)
}

// linkModeName names CTRL_EXT.LINK_MODE.
func linkModeName(mode uint32) string {
	switch mode {
	case 0:
		return "copper"
	case ctrlExtLinkModeKX:
		return "1000base-kx"
	case ctrlExtLinkModeSGMII:
		return "sgmii"
	}
	return "serdes"
}

var (
	pcsLctlFlags = []nic.Flag{{Mask: uint32(pcsLctlFSD), Name: "FSD"}, {Mask: uint32(pcsLctlForceLink), Name: "FORCE_LINK"},
		{Mask: uint32(pcsLctlForceFC), Name: "FORCE_FCTRL"}, {Mask: uint32(pcsLctlANEnable), Name: "AN_ENABLE"}}
	pcsLstatFlags = []nic.Flag{{Mask: uint32(pcsLstatLinkOK), Name: "LINK_OK"}, {Mask: uint32(pcsLstatFull), Name: "FD"},
		{Mask: uint32(pcsLstatSyncOK), Name: "SYNC_OK"}, {Mask: uint32(pcsLstatANDone), Name: "AN_COMPLETE"}}
)

// dumpPCS adds the PCS registers of a port whose LINK_MODE is not copper.
func dumpPCS(d *Dump, r nic.Regs) {
	d.Read(r, "PCS_CFG0", uint32(regPCS_CFG0), func(v uint32) []Field {
		return []Field{{Name: "PCS_EN", Value: bit(v, 3)}}
	})
	d.Read(r, "PCS_LCTL", uint32(regPCS_LCTL), func(v uint32) []Field { return nic.FlagFields(v, pcsLctlFlags) })
	d.Read(r, "PCS_LSTAT", uint32(regPCS_LSTAT), func(v uint32) []Field {
		return append(nic.FlagFields(v, pcsLstatFlags), Field{Name: "SPEED", Value: speedName(field(v, 1, 2))})
	})
	d.Read(r, "PCS_ANADV", uint32(regPCS_ANADV), nil)
	d.Read(r, "PCS_LPAB", uint32(regPCS_LPAB), nil)
}

// PCSLink implements nic.PCSLinkReporter: a SerDes port's link is its PCS's.
func (p *Port) PCSLink() (pcs, autoneg bool) { return p.media == MediaSerDes, p.PCSAutoneg() }
