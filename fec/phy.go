package fec

import (
	"errors"
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// MDIO through MMFR (clause 22 only). One access at a time: callers hold
// Port.ctl. The driver clears EIR.MII, writes the frame to MMFR; the MAC clocks
// it out on MDC and sets EIR.MII when done (the read data is then in MMFR
// 15:0). Nothing completes while MSCR's divider is 0 or the module clock is
// off: the timeout error says so.

// mdioTimeout bounds one MDIO frame: 64 bits at 2.5 MHz take about 26 us; Linux
// waits up to 30 ms (FEC_MII_TIMEOUT).
const mdioTimeout = 30 * time.Millisecond

// mscrValue computes MSCR for a module (ipg) clock of clkHz (fec_main.c
// fec_enet_mii_init): MII_SPEED = ceil(clk / 5 MHz) - 1 keeps MDC at or below
// 2.5 MHz; HOLDTIME = ceil(clk / 100 MHz) - 1 keeps MDIO hold at least 10 ns.
func mscrValue(clkHz uint64) (uint32, error) {
	speed := (clkHz+4_999_999)/5_000_000 - 1
	if clkHz == 0 || speed > mscrSpeedMax {
		return 0, fmt.Errorf("fec: module clock of %d Hz: the MDC divider (MSCR.MII_SPEED, max %d) cannot bring MDC to 2.5 MHz", clkHz, mscrSpeedMax)
	}
	if speed == 0 {
		speed = 1 // a divider of 0 turns MDC off
	}
	hold := (clkHz+99_999_999)/100_000_000 - 1
	hold = min(hold, mscrHoldMax)
	return uint32(speed)<<mscrSpeedShift | uint32(hold)<<mscrHoldShift, nil
}

// mdioSetup programs MSCR (fec_enet_mii_init). The MAC raises a spurious
// EIR.MII when MSCR goes from 0 to non-zero while MMFR holds a frame; on
// QuirkClearSetupMII parts MMFR is cleared first in that case (and only then:
// a write to MMFR with MDC running sends a frame). Any pending EIR.MII is
// cleared afterwards.
func (p *Port) mdioSetup() {
	cur := p.mdioR32(regMSCR)
	if cur == p.mscr {
		return
	}
	if cur == 0 && p.variant.Quirks&QuirkClearSetupMII != 0 && p.mdioR32(regMMFR) != 0 {
		p.mdioW32(regMMFR, 0)
	}
	p.mdioW32(regMSCR, p.mscr)
	p.mdioW32(regEIR, uint32(eirMII))
}

func miiDone(v uint32) bool { return eirBits(v)&eirMII != 0 }

// mdio runs one clause-22 frame and returns MMFR's data bits.
//
// A frame that timed out may still be clocking out: writing MMFR during a
// frame corrupts it (the MAC starts the new one over it). So after a timeout
// (mdioLate) the next access first waits for that frame's EIR.MII, and fails
// without writing MMFR if it still does not come. A device model on a loaded
// host (an arm64 test binary under qemu-user) can complete a frame later than
// the timeout; on hardware a timeout means MDIO is not running at all.
func (p *Port) mdio(op uint32, phyReg int, val uint16) (uint16, error) {
	if p.mdioLate {
		if _, err := nic.PollReg(p.mdioRegs, uint32(regEIR), mdioTimeout, 10*time.Microsecond, miiDone); err != nil {
			return 0, fmt.Errorf("MDIO access to PHY %d register %d: the previous frame timed out and has still not completed "+
				"after another %v, so no new frame is started over it: %w", p.phyAddr, phyReg, mdioTimeout, err)
		}
		p.mdioLate = false
	}
	p.mdioW32(regEIR, uint32(eirMII))
	p.mdioW32(regMMFR, mmfrST22|op|uint32(p.phyAddr&0x1F)<<mmfrPAShift|uint32(phyReg&0x1F)<<mmfrRAShift|mmfrTA|uint32(val))
	_, err := nic.PollReg(p.mdioRegs, uint32(regEIR), mdioTimeout, 10*time.Microsecond, miiDone)
	switch {
	case errors.Is(err, nic.ErrNoDevice):
		return 0, fmt.Errorf("EIR reads all ones during an MDIO access: %w", err)
	case err != nil:
		p.mdioLate = true
		return 0, fmt.Errorf("MDIO access to PHY %d register %d: EIR.MII not set after %v "+
			"(is the ENET's module clock running, and is Config.ModuleClockHz right? MSCR = %#x from %d Hz; "+
			"a wrong MSCR, a gated clock or a PHY held in reset never completes): %w",
			p.phyAddr, phyReg, mdioTimeout, p.mscr, p.cfg.ModuleClockHz, err)
	}
	p.mdioW32(regEIR, uint32(eirMII))
	return uint16(p.mdioR32(regMMFR) & mmfrData), nil
}

func (p *Port) readPHY(r int) (uint16, error) { return p.mdio(mmfrOpRead, r, 0) }

func (p *Port) writePHY(r int, v uint16) error {
	_, err := p.mdio(mmfrOpWrite, r, v)
	return err
}

// readPHYID returns PHYID1:PHYID2. An ID of all ones means nothing answered at
// that address (MDIO pulled up).
func (p *Port) readPHYID() (uint32, error) {
	id, err := nic.ReadPHYID(p.readPHY)
	if err != nil {
		return 0, err
	}
	if !nic.PHYIDValid(id) {
		return id, fmt.Errorf("no PHY answers at MDIO address %d (ID %#08x): set Config.PHYAddr to the board's PHY address", p.phyAddr, id)
	}
	return id, nil
}

// restartAutoneg powers the PHY up and restarts autonegotiation.
//
// A PHY that Linux's fec had comes to us powered down: fec_enet_close ->
// phy_disconnect -> phy_detach -> phy_suspend -> genphy_suspend
// (phy_device.c) sets BMCR_PDOWN, and a PHY in power-down does not
// negotiate. As genphy_resume does on the next open, the bit is cleared first
// (with isolate, which keeps the PHY off the MII), then autonegotiation is
// restarted.
func (p *Port) restartAutoneg() error {
	return nic.RestartAutoneg(p.readPHY, p.writePHY)
}

// gigabitHalfWhy is why fec refuses 1000 Mb/s half duplex: Linux's fec masks
// the PHY with the MAC's features and removes 1000baseT_Half on gigabit
// parts (fec_enet_mii_probe, fec_main.c: phy_remove_link_mode under
// FEC_QUIRK_HAS_GBIT); the ENET's gigabit mode is full duplex only.
const gigabitHalfWhy = "the ENET MAC does not run it (Linux's fec removes 1000baseT_Half from the PHY's modes)"

// CheckLinkMode says whether the MAC runs a speed and duplex
// (nic.LinkModeChecker): every 10 and 100 Mb/s mode and 1000 Mb/s full
// duplex.
func (p *Port) CheckLinkMode(speedMbps int, fullDuplex bool) error {
	if err := nic.CheckGigabitHalf(speedMbps, fullDuplex, gigabitHalfWhy); err != nil {
		return fmt.Errorf("fec: %s: %w", p.name, err)
	}
	return nil
}

// phyLink reads the PHY's view of the link: BMSR (twice, the link bit latches
// low), then the resolved speed and duplex from the advertisements (or BMCR
// when autonegotiation is off).
func (p *Port) phyLink() (nic.LinkState, error) {
	if _, err := p.readPHY(phyBMSR); err != nil {
		return nic.LinkState{}, err
	}
	bmsr, err := p.readPHY(phyBMSR)
	if err != nil {
		return nic.LinkState{}, err
	}
	if err := nic.PHYAnswers(p.phyAddr, phyBMSR, bmsr); err != nil {
		return nic.LinkState{}, err // a dead PHY: the link is down
	}
	if bmsr&bmsrLinkUp == 0 {
		return nic.LinkState{}, nil
	}
	bmcr, err := p.readPHY(phyBMCR)
	if err != nil {
		return nic.LinkState{}, err
	}
	l := nic.LinkState{Up: true}
	if bmcr&bmcrANEnable == 0 {
		l.FullDuplex = bmcr&bmcrFullDup != 0
		switch {
		case bmcr&bmcrSpeed1000 != 0 && p.variant.Quirks&QuirkGBIT != 0:
			l.SpeedMbps = 1000
		case bmcr&bmcrSpeed100 != 0:
			l.SpeedMbps = 100
		default:
			l.SpeedMbps = 10
		}
		return l, nil
	}
	if p.variant.Quirks&QuirkGBIT != 0 && p.cfg.Interface == RGMII {
		gbcr, err1 := p.readPHY(phyGBCR)
		gbsr, err2 := p.readPHY(phyGBSR)
		if err1 == nil && err2 == nil {
			if gbcr&gbcr1000FD != 0 && gbsr&gbsr1000FD != 0 {
				return nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}, nil
			}
			if gbcr&gbcr1000HD != 0 && gbsr&gbsr1000HD != 0 {
				return nic.LinkState{Up: true, SpeedMbps: 1000}, nil
			}
		}
	}
	anar, err := p.readPHY(phyANAR)
	if err != nil {
		return nic.LinkState{}, err
	}
	lpa, err := p.readPHY(phyANLPAR)
	if err != nil {
		return nic.LinkState{}, err
	}
	common := anar & lpa
	switch {
	case common&adv100FD != 0:
		l.SpeedMbps, l.FullDuplex = 100, true
	case common&adv100HD != 0:
		l.SpeedMbps = 100
	case common&adv10FD != 0:
		l.SpeedMbps, l.FullDuplex = 10, true
	default:
		l.SpeedMbps = 10
	}
	return l, nil
}

// PHYAddr is the MDIO address of the PHY the port drives.
func (p *Port) PHYAddr() int { return p.phyAddr }

// ReadPHY reads clause-22 register r of the port's PHY through MMFR (for
// diagnostics; nic.PHYAccess).
func (p *Port) ReadPHY(r int) (uint16, error) {
	return p.diagPHY().ReadPHY(r)
}

// WritePHY writes clause-22 register r of the port's PHY through MMFR (for
// diagnostics; nic.PHYAccess). A write asking for 1000 Mb/s half duplex
// (CTRL1000 bit 8, or BMCR forcing it) is refused (CheckLinkMode).
func (p *Port) WritePHY(r int, v uint16) error {
	return p.diagPHY().WritePHY(r, v)
}

// diagPHY is the port's PHYAccess for ReadPHY and WritePHY.
func (p *Port) diagPHY() nic.DiagPHY {
	return nic.DiagPHY{Prefix: "fec: " + p.name, Lock: &p.ctl.Mutex, Closed: func() bool { return p.ctl.Closed },
		Read: p.readPHY, Write: p.writePHY, Why: gigabitHalfWhy}
}
