package dwmac

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// The Intel mGbE's SGMII path: a SerDes at MDIO address 0x15 (dwmac-intel's
// INTEL_MGBE_ADHOC_ADDR) and a Synopsys xPCS at 0x16 (INTEL_MGBE_XPCS_ADDR,
// clause 45). Linux's stmmac powers the SerDes down when the interface
// closes (stmmac_release -> intel_serdes_powerdown: power state P3, PLL clock
// request and lane reset cleared) and up before the hardware setup of the
// next open (__stmmac_open -> intel_serdes_powerup), and phylink programs the
// xPCS for SGMII at every configuration (pcs-xpcs.c xpcs_do_config ->
// xpcs_config_aneg_c37_sgmii). A device Linux had therefore comes with the
// SerDes down, and, since the MAC's RX clock comes through it, with a DMA
// software reset that never completes; Open does both steps itself, in
// Linux's order: SerDes before the DMA reset, xPCS before the PHY.

// SerDes says who powers an Intel part's SGMII SerDes (dwmac-intel.c).
type SerDes uint8

const (
	// SerDesNone: RGMII parts, and platform devices: no SerDes or xPCS.
	SerDesNone SerDes = iota
	// SerDesBIOS: Alder Lake-S (adls_sgmii_phy*_data: "SerDes power up and
	// power down are done in BIOS for ADL"); Linux never touches its power.
	SerDesBIOS
	// SerDesDriver: Elkhart Lake, Tiger Lake, Alder Lake-N, Raptor Lake-P
	// (serdes_powerup = intel_serdes_powerup).
	SerDesDriver
	// SerDesDriverPSE: the Elkhart Lake PSE's SGMII parts, whose power-up
	// also ungates the SGMII PHY RX clock (GCR0 bit 1, is_pse).
	SerDesDriverPSE
)

// SerDes registers and fields (dwmac-intel.h).
const (
	serdesGCR           = 0x0 // link mode 2:1
	serdesGSR0          = 0x5 // status mirror of GCR0's PLL clock, reset and power state
	serdesGCR0          = 0xb
	serdesPLLClk        = 1 << 0
	serdesPHYRxClk      = 1 << 1
	serdesRst           = 1 << 2
	serdesPwrStMask     = 7 << 4
	serdesPwrStP3       = 3 << 4
	serdesRateMask      = 3 << 8
	serdesPCLKMask      = 7 << 12
	serdesPCLK70MHz     = 1 << 12 // with rate PCIe Gen1 (0): 1G SGMII
	serdesLinkModeMask  = 3 << 1
	serdesLinkMode2G5   = 3 << 1
	serdesPollTimeout   = time.Millisecond // Linux: 10 reads 8 us apart
	xpcsResetTimeout    = 100 * time.Millisecond
	mmdVend2            = 31
	xpcsMMDCtrl         = 0x0000 // VR_MII_MMD_CTRL (MDIO_CTRL1 of MMD 31)
	xpcsMMDReset        = 1 << 15
	xpcsMMDANEnable     = 1 << 12 // AN_CL37_EN
	xpcsDigCtrl1        = 0x8000
	xpcsDigMACAutoSW    = 1 << 9
	xpcsDig2G5          = 1 << 2
	xpcsANCtrl          = 0x8001
	xpcsANCtrlPCSMode   = 3 << 1
	xpcsANCtrlSGMII     = 2 << 1
	xpcsANCtrlTxConfig  = 1 << 3 // PHY side when set
	xpcsANCtrlIntrEnble = 1 << 0
)

// sgmii reports whether the port's frames cross the SerDes and the xPCS.
func (p *Port) sgmii() bool {
	return p.model.Integration == IntegrationIntel && p.model.SerDes != SerDesNone
}

// serdesPoll reads SerDes register r until (v & mask) == want.
func (p *Port) serdesPoll(r int, mask, want uint16, what string) error {
	var v uint16
	var err error
	ok := nic.Poll(serdesPollTimeout, 8*time.Microsecond, func() bool {
		v, err = p.mdioRead(intelMDIOSerDes, r)
		return err != nil || v&mask == want
	})
	switch {
	case err != nil:
		return fmt.Errorf("SerDes %s: %w", what, err)
	case !ok:
		return fmt.Errorf("SerDes %s: GSR0 reads %#04x after %v: %w", what, v, serdesPollTimeout, nic.ErrTimeout)
	}
	return nil
}

// serdesModify reads, changes and writes a SerDes register.
func (p *Port) serdesModify(r int, clear, set uint16) error {
	v, err := p.mdioRead(intelMDIOSerDes, r)
	if err != nil {
		return err
	}
	return p.mdioWrite(intelMDIOSerDes, r, v&^clear|set)
}

// serdesPowerUp is intel_serdes_powerup for 1G SGMII: rate PCIe Gen1 and a
// 70 MHz PCLK in GCR0; request the PLL clock and wait for its
// acknowledgement in GSR0; take the lane out of reset and wait; move to power
// state P0 and wait; on the PSE, ungate the PHY RX clock. On the parts whose
// BIOS owns the SerDes it only checks that the SerDes is not left in P3. A
// 2.5G link mode (GCR) is refused: it needs 2500BASE-X in the xPCS and the
// MAC, which this driver does not set up.
func (p *Port) serdesPowerUp() error {
	if !p.sgmii() {
		return nil
	}
	gcr, err := p.mdioRead(intelMDIOSerDes, serdesGCR)
	if err != nil {
		return fmt.Errorf("reading the SerDes link mode: %w", err)
	}
	if gcr == 0xffff {
		return fmt.Errorf("no SerDes answers at MDIO address %#x (GCR reads 0xffff) on an SGMII %s: %w", intelMDIOSerDes, p.model.Name, ErrNoPHY)
	}
	if gcr&serdesLinkModeMask == serdesLinkMode2G5 {
		return fmt.Errorf("the SerDes is in 2.5G link mode (GCR %#04x): 2500BASE-X is not supported by this driver: %w", gcr, nic.ErrNotSupported)
	}
	if p.model.SerDes == SerDesBIOS {
		gsr, err := p.mdioRead(intelMDIOSerDes, serdesGSR0)
		if err != nil {
			return fmt.Errorf("reading the SerDes status: %w", err)
		}
		if gsr&serdesPwrStMask != 0 || gsr&serdesPLLClk == 0 {
			return fmt.Errorf("the SerDes is powered down (GSR0 %#04x) and on the %s the BIOS powers it "+
				"(dwmac-intel.c: \"SerDes power up and power down are done in BIOS for ADL\"): reboot, or check the BIOS's TSN/SGMII settings: %w",
				gsr, p.model.Name, nic.ErrNotSupported)
		}
		return nil
	}
	steps := []struct {
		clear, set, mask, want uint16
		what                   string
	}{
		{serdesRateMask | serdesPCLKMask, serdesPCLK70MHz, 0, 0, "rate and PCLK"},
		{0, serdesPLLClk, serdesPLLClk, serdesPLLClk, "PLL clock request (clk_ack)"},
		{0, serdesRst, serdesRst, serdesRst, "lane reset"},
		{serdesPwrStMask, 0, serdesPwrStMask, 0, "power state P0"},
	}
	for _, s := range steps {
		if err := p.serdesModify(serdesGCR0, s.clear, s.set); err != nil {
			return fmt.Errorf("SerDes power-up, %s: %w", s.what, err)
		}
		if s.mask != 0 {
			if err := p.serdesPoll(serdesGSR0, s.mask, s.want, s.what); err != nil {
				return fmt.Errorf("SerDes power-up: %w", err)
			}
		}
	}
	if p.model.SerDes == SerDesDriverPSE {
		if err := p.serdesModify(serdesGCR0, 0, serdesPHYRxClk); err != nil {
			return fmt.Errorf("SerDes power-up, PHY RX clock: %w", err)
		}
	}
	return nil
}

// setupXPCS programs the xPCS for MAC-side SGMII with in-band (clause-37)
// autonegotiation, as pcs-xpcs.c does: a soft reset (xpcs_soft_reset, bit 15
// of VR_MII_MMD_CTRL, polled until it clears), then
// xpcs_config_aneg_c37_sgmii: AN_ENABLE off while VR_MII_AN_CTRL is changed
// (PCS_MODE = SGMII, TX_CONFIG = MAC side, the AN-complete interrupt on),
// VR_MII_DIG_CTRL1 MAC_AUTO_SW on and 2G5_EN off, AN_ENABLE back on.
func (p *Port) setupXPCS() error {
	if !p.sgmii() {
		return nil
	}
	rd := func(r int) (uint16, error) { return p.mdioC45(intelMDIOXPCS, mmdVend2, r, false, 0) }
	wr := func(r int, v uint16) error { _, err := p.mdioC45(intelMDIOXPCS, mmdVend2, r, true, v); return err }
	if err := wr(xpcsMMDCtrl, xpcsMMDReset); err != nil {
		return fmt.Errorf("xPCS soft reset: %w", err)
	}
	var ctl uint16
	var err error
	if !nic.Poll(xpcsResetTimeout, 100*time.Microsecond, func() bool {
		ctl, err = rd(xpcsMMDCtrl)
		return err != nil || ctl&xpcsMMDReset == 0
	}) {
		return fmt.Errorf("xPCS soft reset: VR_MII_MMD_CTRL %#04x after %v: %w", ctl, xpcsResetTimeout, nic.ErrTimeout)
	}
	if err != nil {
		return fmt.Errorf("xPCS soft reset: %w", err)
	}
	if ctl&xpcsMMDANEnable != 0 {
		ctl &^= xpcsMMDANEnable
		if err := wr(xpcsMMDCtrl, ctl); err != nil {
			return fmt.Errorf("xPCS: disabling autonegotiation: %w", err)
		}
	}
	an, err := rd(xpcsANCtrl)
	if err != nil {
		return fmt.Errorf("xPCS: reading VR_MII_AN_CTRL: %w", err)
	}
	an = an&^(xpcsANCtrlPCSMode|xpcsANCtrlTxConfig) | xpcsANCtrlSGMII | xpcsANCtrlIntrEnble
	if err := wr(xpcsANCtrl, an); err != nil {
		return fmt.Errorf("xPCS: SGMII mode: %w", err)
	}
	dig, err := rd(xpcsDigCtrl1)
	if err != nil {
		return fmt.Errorf("xPCS: reading VR_MII_DIG_CTRL1: %w", err)
	}
	if err := wr(xpcsDigCtrl1, dig&^xpcsDig2G5|xpcsDigMACAutoSW); err != nil {
		return fmt.Errorf("xPCS: automatic speed switching: %w", err)
	}
	if err := wr(xpcsMMDCtrl, ctl|xpcsMMDANEnable); err != nil {
		return fmt.Errorf("xPCS: enabling autonegotiation: %w", err)
	}
	return nil
}
