package igb

import (
	"errors"
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// PHY access through MDIC (82576 datasheet 8.2.4). One access at a time: the
// caller holds Port.ctl. The driver writes the command; the device sets READY
// when the MDIO frame is done, and ERROR when the PHY did not answer.

// mdicTimeout bounds one MDIO access. An MDIO frame takes about 64 us at
// 2.5 MHz; the datasheet asks to poll READY, Linux gives up after ~12 ms.
const mdicTimeout = 100 * time.Millisecond

// ErrPHY is wrapped by errors of PHY accesses that the device reported.
var ErrPHY = fmt.Errorf("igb: PHY access failed")

func (p *Port) mdic(cmd mdicBits, phyReg int) (uint16, error) {
	p.w32(regMDIC, uint32(cmd)|uint32(phyReg&0x1F)<<mdicRegShift|uint32(p.phyAddr&0x1F)<<mdicPHYShift)
	v, err := nic.PollReg(p.regs, uint32(regMDIC), mdicTimeout, 20*time.Microsecond, func(v uint32) bool { return mdicBits(v)&mdicReady != 0 })
	switch {
	case errors.Is(err, nic.ErrNoDevice):
		return 0, fmt.Errorf("igb: MDIC reads all ones: %w", nic.ErrNoDevice)
	case err != nil:
		return 0, fmt.Errorf("igb: MDIC access to PHY register %d: READY not set after %v: %w", phyReg, mdicTimeout, nic.ErrTimeout)
	case mdicBits(v)&mdicError != 0:
		return 0, fmt.Errorf("%w: MDIC reported ERROR for PHY %d register %d (no PHY at that address, or the register is not implemented)", ErrPHY, p.phyAddr, phyReg)
	}
	return uint16(mdicBits(v) & mdicDataMask), nil
}

// readPHY reads a clause-22 PHY register.
func (p *Port) readPHY(r int) (uint16, error) { return p.mdic(mdicOpRead, r) }

// writePHY writes a clause-22 PHY register.
func (p *Port) writePHY(r int, v uint16) error {
	_, err := p.mdic(mdicOpWrite|mdicBits(v), r)
	return err
}

// restartAutoneg powers the PHY up and restarts autonegotiation. QEMU's igb
// brings the link up only after this (and about 500 ms of virtual time); real
// PHYs renegotiate.
//
// The PHY may come to us powered down: when an interface closes without
// Wake-on-LAN (and on unbind, which closes it), Linux's igb_reset calls
// igb_power_down_link, whose igb_power_down_phy_copper (e1000_phy.c) sets
// MII_CR_POWER_DOWN in PHY_CONTROL. A PHY in power-down does not negotiate
// whatever else BMCR asks, so, as igb_power_up_link -> igb_power_up_phy_copper
// does on open, the bit is cleared first (with isolate, which would keep
// the PHY off the MAC's interface), then autonegotiation is restarted.
func (p *Port) restartAutoneg() error {
	return nic.RestartAutoneg(p.readPHY, p.writePHY)
}

// gigabitHalfWhy is why igb refuses 1000 Mb/s half duplex. Linux's igb never
// advertises it: igb_phy_setup_autoneg (e1000_phy.c) denies
// ADVERTISE_1000_HALF and clears CR_1000T_HD_CAPS, E1000_ALL_SPEED_DUPLEX
// (e1000_defines.h) leaves it out, and igb_set_spd_dplx (igb_main.c) refuses
// SPEED_1000 + DUPLEX_HALF.
const gigabitHalfWhy = "the igb MACs do not run it (Linux's igb never advertises it and refuses it forced)"

// CheckLinkMode says whether the MAC runs a speed and duplex
// (nic.LinkModeChecker): every 10 and 100 Mb/s mode and 1000 Mb/s full
// duplex; on a SerDes port 1000 Mb/s full duplex only (pcs.go).
func (p *Port) CheckLinkMode(speedMbps int, fullDuplex bool) error {
	if err := p.checkSerDesMode(speedMbps, fullDuplex); err != nil {
		return err
	}
	if err := nic.CheckGigabitHalf(speedMbps, fullDuplex, gigabitHalfWhy); err != nil {
		return fmt.Errorf("igb: %s: %w", p.name, err)
	}
	return nil
}

// readPHYID returns PHYID1:PHYID2 (OUI, model, revision).
func (p *Port) readPHYID() (uint32, error) { return nic.ReadPHYID(p.readPHY) }

// PHYAddr is the MDIO address of the PHY the port drives.
func (p *Port) PHYAddr() int { return p.phyAddr }

// ReadPHY reads clause-22 register r of the port's PHY through MDIC (for
// diagnostics; nic.PHYAccess). A SerDes port has no PHY: refused.
func (p *Port) ReadPHY(r int) (uint16, error) {
	if p.media == MediaSerDes {
		return 0, p.errNoPHY()
	}
	return p.diagPHY().ReadPHY(r)
}

// WritePHY writes clause-22 register r of the port's PHY through MDIC (for
// diagnostics; nic.PHYAccess). MDIC carries clause-22 frames only (82576
// 8.2.4): there is no clause-45 access. A write asking for 1000 Mb/s half
// duplex (CTRL1000 bit 8, or BMCR forcing it) is refused (CheckLinkMode), and
// so is any access on a SerDes port.
func (p *Port) WritePHY(r int, v uint16) error {
	if p.media == MediaSerDes {
		return p.errNoPHY()
	}
	return p.diagPHY().WritePHY(r, v)
}

// diagPHY is the port's PHYAccess for ReadPHY and WritePHY.
func (p *Port) diagPHY() nic.DiagPHY {
	return nic.DiagPHY{Prefix: "igb: " + p.name, Lock: &p.ctl.Mutex, Closed: func() bool { return p.ctl.Closed },
		Read: p.readPHY, Write: p.writePHY, Why: gigabitHalfWhy}
}
