package dwmacsim

import (
	"fmt"

	"github.com/xnic-dev/xnic/sim"
)

// What sits around the MAC, and the states Linux leaves it in.
//
// Intel mGbE, SGMII (an IntelMGbE with its xPCS): frames cross the SerDes at
// MDIO 0x15 and the xPCS at 0x16. The path carries frames only while the
// SerDes is powered (GCR0: PLL clock requested, lane out of reset, power
// state P0: what dwmac-intel.c intel_serdes_powerup programs before
// stmmac_hw_setup) and the xPCS is in MAC-side SGMII with clause-37
// autonegotiation and automatic speed switching (pcs-xpcs.c
// xpcs_config_aneg_c37_sgmii: VR_MII_AN_CTRL PCS_MODE = SGMII, TX_CONFIG =
// MAC side; VR_MII_DIG_CTRL1 MAC_AUTO_SW, 2G5_EN clear; VR_MII_MMD_CTRL
// AN_ENABLE). Otherwise nothing is received or sent (RxNoLink, TxDropped),
// VR_MII_AN_INTR_STS shows no link, and with the SerDes down the MAC has no
// RX clock, so a DMA software reset never completes. At power-on firmware
// has done both; an xPCS soft reset returns its vendor registers to 0.
//
// i.MX8MP EQOS with a sim.Board (Config.Board): a register access while the
// stmmaceth or pclk gate is off, or through a /dev/mem mapping the policy
// refuses or revoked, is a bus-error fault ("real hardware hangs here") and
// fails (all ones, a lost write); while the PHY's reset line is asserted its
// MDIO address reads 0xffff, it has no link and no RX clock (the DMA
// software reset never completes: stmmac_main.c "always requires an RX
// clock"), and it leaves reset with its registers at their defaults; a frame
// sent at a link speed the "tx" clock (enet_qos) does not run at (125, 25,
// 2.5 MHz for 1000, 100, 10 Mb/s: dwmac-imx.c imx_dwmac_fix_speed) is a fault
// and does not reach the wire.
//
// Kernel-left states (Config.Left): LeftPHYPowerDown (phy_detach ->
// phy_suspend: BMCR power-down), LeftIRQsMasked (every channel's interrupt
// enable and MAC_Interrupt_Enable 0), LeftStaleRings (the channels' ring
// registers hold the freed rings' addresses, the channels stopped:
// stmmac_release stops the DMA and leaves them), on SGMII Intel parts
// LeftSerDesDown (intel_serdes_powerdown: power state P3, PLL clock request
// and lane reset cleared) and LeftXPCSReset, and on the i.MX8MP with a
// Board (a private one, handed over but for the state asked, when
// Config.Board is nil) LeftClocksGated and LeftPHYInReset.

const (
	leftRegStates   = sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings
	leftSGMII       = sim.LeftSerDesDown | sim.LeftXPCSReset
	leftBoardStates = sim.LeftBoardStates
)

// xPCS vendor register bits (pcs-xpcs.h).
const (
	xpcsMMDCtrl        = 0x0000 // VR_MII_MMD_CTRL (SR_MII_CTRL), MMD 31
	xpcsMMDANEnable    = 1 << 12
	xpcsPCSModeMask    = 3 << 1
	xpcsPCSModeSGMII   = 2 << 1
	xpcsTxConfigPHY    = 1 << 3
	xpcsANIntrEn       = 1 << 0
	xpcsDigMACAutoSW   = 1 << 9
	xpcsDig2G5         = 1 << 2
	serdesPwrStP3      = 3 << 4
	enetQOSTxClockName = "enet_qos"
)

// firmwareXPCS is the xPCS as firmware (or Linux) programs it for an SGMII
// PHY.
func firmwareXPCS() map[uint32]uint16 {
	return map[uint32]uint16{
		mmdVend2<<16 | xpcsMMDCtrl:  xpcsMMDANEnable,
		mmdVend2<<16 | xpcsANCtrl:   xpcsPCSModeSGMII | xpcsANIntrEn,
		mmdVend2<<16 | xpcsDigCtrl1: xpcsDigMACAutoSW,
	}
}

// setupBoard checks the kernel-left states against the variant and builds
// the private board the i.MX states need.
func (m *Model) setupBoard() error {
	cfg := &m.cfg
	supported := leftRegStates
	if cfg.Variant == IntelMGbE && !cfg.NoXPCS {
		supported |= leftSGMII
	}
	if cfg.Variant == IMX8MP {
		supported |= leftBoardStates
	}
	if err := sim.CheckLeft("dwmacsim "+cfg.Variant.String(), cfg.Left, supported); err != nil {
		return fmt.Errorf("%w: %w", err, ErrConfig)
	}
	if cfg.Board != nil && cfg.Variant != IMX8MP {
		return fmt.Errorf("dwmacsim: a board is the i.MX8MP's SoC, not the %v's: %w", cfg.Variant, ErrConfig)
	}
	var err error
	if cfg.Board, cfg.Unit, err = sim.ModelBoard(sim.EQOS, cfg.Board, cfg.Unit, cfg.Left); err != nil {
		return fmt.Errorf("dwmacsim: %w: %w", err, ErrConfig)
	}
	return nil
}

// Board is the SoC around an i.MX8MP model (nil without one).
func (m *Model) Board() *sim.Board { return m.cfg.Board }

// gate is sim.DeviceConfig.Gate: the board's verdict on a register access.
func (m *Model) gate() error { return m.cfg.Board.Access(m.cfg.Unit) }

// sgmii reports whether frames cross the Intel SerDes and xPCS.
func (m *Model) sgmii() bool { return m.cfg.Variant == IntelMGbE && !m.cfg.NoXPCS }

// serdesUpLocked: PLL clock requested, lane out of reset, power state P0.
func (m *Model) serdesUpLocked() bool {
	g := m.serdes.gcr0
	return g&serdesPLLClk != 0 && g&serdesRst != 0 && g&serdesPwrStMask == 0
}

// xpcsSGMIILocked: MAC-side SGMII with clause-37 AN and MAC_AUTO_SW.
func (m *Model) xpcsSGMIILocked() bool {
	an := m.xpcs[mmdVend2<<16|xpcsANCtrl]
	dig := m.xpcs[mmdVend2<<16|xpcsDigCtrl1]
	ctl := m.xpcs[mmdVend2<<16|xpcsMMDCtrl]
	return an&xpcsPCSModeMask == xpcsPCSModeSGMII && an&xpcsTxConfigPHY == 0 &&
		ctl&xpcsMMDANEnable != 0 && dig&xpcsDigMACAutoSW != 0 && dig&xpcsDig2G5 == 0
}

// phyInResetLocked reports whether the board holds the PHY in reset,
// resetting the PHY's registers when the line is asserted.
func (m *Model) phyInResetLocked() bool {
	return sim.PHYInReset(m.cfg.Board, m.cfg.Unit, m.phy, &m.phyHeld)
}

// socRxClockLocked reports whether what is around the MAC lets the PHY's RX
// clock reach it: the SerDes powered (SGMII), the PHY out of reset (board).
func (m *Model) socRxClockLocked() bool {
	if m.sgmii() && !m.serdesUpLocked() {
		return false
	}
	return !m.phyInResetLocked()
}

// refreshSGMIILocked recomputes sgmiiOK after a SerDes or xPCS write, so
// the per-frame check is one load.
func (m *Model) refreshSGMIILocked() {
	m.sgmiiOK = !m.sgmii() || (m.serdesUpLocked() && m.xpcsSGMIILocked())
}

// pathUpLocked reports whether a frame gets between the MAC and the wire
// (tx: leaving, which also needs the i.MX TX clock at the link's rate).
func (m *Model) pathUpLocked(tx bool) bool {
	if !m.sgmiiOK {
		return false
	}
	b := m.cfg.Board
	if b == nil {
		return true
	}
	if m.phyInResetLocked() || b.Access(m.cfg.Unit) != nil {
		return false
	}
	if !tx {
		return true
	}
	mbps := m.phy.Link().SpeedMbps
	if mbps == 0 {
		return true // no link: dropped elsewhere
	}
	want, ok, why := m.txClockWantLocked(mbps)
	if !ok {
		m.faults.Add("tx", "", 0, "%s: nothing a partner can receive leaves", why)
		return false
	}
	if want == 0 {
		return true // RMII/MII: the clock does not follow the speed
	}
	if got := b.ClockRate(enetQOSTxClockName); got != want {
		m.faults.Add("tx", "", 0, "frame sent at %d Mb/s with the EQOS TX clock (%s) at %d Hz, not %d: the RGMII TX data is garbled (dwmac-imx.c imx_dwmac_fix_speed sets it per speed)",
			mbps, enetQOSTxClockName, got, want)
		return false
	}
	return true
}

// applyLeftLocked puts the device in the register states of cfg.Left.
func (m *Model) applyLeftLocked() {
	left := m.cfg.Left
	if left.Has(sim.LeftPHYPowerDown) {
		m.phy.Write(sim.MIIBMCR, m.phy.Read(sim.MIIBMCR)|sim.BMCRPowerDown)
	}
	if left.Has(sim.LeftSerDesDown) {
		m.serdes.gcr0 = m.serdes.gcr0&^(serdesPLLClk|serdesRst|serdesPwrStMask) | serdesPwrStP3
	}
	if left.Has(sim.LeftXPCSReset) {
		m.xpcs = map[uint32]uint16{}
	}
	if left.Has(sim.LeftIRQsMasked) {
		for i := range m.ch {
			m.ch[i].intEn = 0
		}
		delete(m.plain, regMACIntEn)
	}
	if left.Has(sim.LeftStaleRings) {
		for i := 0; i < m.nch; i++ {
			base := uint32(sim.StaleRingBase) + uint32(i)<<16
			for j, r := range []*ring{&m.ch[i].rx, &m.ch[i].tx} {
				r.baseLo, r.baseSet = base+uint32(j)<<15, true
				r.lenReg, r.lenSet = 63, true
				r.tail, r.tailSet = r.baseLo+40*16, true
			}
		}
	}
	m.phyInResetLocked()
	m.refreshSGMIILocked()
}
