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

// restartAutoneg enables and restarts autonegotiation. QEMU's igb brings the link
// up only after this (and about 500 ms of virtual time); real PHYs renegotiate.
func (p *Port) restartAutoneg() error {
	bmcr, err := p.readPHY(phyBMCR)
	if err != nil {
		return fmt.Errorf("reading BMCR: %w", err)
	}
	bmcr &^= bmcrReset
	if err := p.writePHY(phyBMCR, bmcr|bmcrANEnable|bmcrANRestart); err != nil {
		return fmt.Errorf("restarting autonegotiation: %w", err)
	}
	return nil
}

// readPHYID returns PHYID1:PHYID2 (OUI, model, revision).
func (p *Port) readPHYID() (uint32, error) {
	hi, err := p.readPHY(phyID1)
	if err != nil {
		return 0, err
	}
	lo, err := p.readPHY(phyID2)
	if err != nil {
		return 0, err
	}
	return uint32(hi)<<16 | uint32(lo), nil
}

// PHYAddr is the MDIO address of the PHY the port drives.
func (p *Port) PHYAddr() int { return p.phyAddr }

// ReadPHY reads clause-22 register r of the port's PHY through MDIC (for
// diagnostics; nic.PHYAccess).
func (p *Port) ReadPHY(r int) (uint16, error) {
	if err := nic.CheckPHYReg(r); err != nil {
		return 0, fmt.Errorf("igb: %s: %w", p.name, err)
	}
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.closed {
		return 0, fmt.Errorf("igb: %s: %w", p.name, nic.ErrClosed)
	}
	v, err := p.readPHY(r)
	if err != nil {
		return 0, fmt.Errorf("igb: %s: %w", p.name, err)
	}
	return v, nil
}

// WritePHY writes clause-22 register r of the port's PHY through MDIC (for
// diagnostics; nic.PHYAccess). MDIC carries clause-22 frames only (82576
// 8.2.4): there is no clause-45 access.
func (p *Port) WritePHY(r int, v uint16) error {
	if err := nic.CheckPHYReg(r); err != nil {
		return fmt.Errorf("igb: %s: %w", p.name, err)
	}
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.closed {
		return fmt.Errorf("igb: %s: %w", p.name, nic.ErrClosed)
	}
	if err := p.writePHY(r, v); err != nil {
		return fmt.Errorf("igb: %s: %w", p.name, err)
	}
	return nil
}
