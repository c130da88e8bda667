package nic

import (
	"errors"
	"fmt"
	"sync"
)

// PHYAccess is a port whose PHY can be reached through the MAC's MDIO
// management interface (IEEE 802.3 clause 22: 32 registers of 16 bits at a
// 5-bit PHY address). It is for diagnostics and bring-up tools; the driver
// keeps using the PHY itself, so a write that changes the link (BMCR,
// advertisements) changes what the driver sees next.
//
// Each call is one MDIO frame, serialised with the driver's own accesses.
// Calls after Close return an error wrapping ErrClosed.
type PHYAccess interface {
	// PHYAddr is the MDIO address of the PHY the port drives.
	PHYAddr() int
	// ReadPHY reads clause-22 register reg (0-31) of that PHY.
	ReadPHY(reg int) (uint16, error)
	// WritePHY writes clause-22 register reg (0-31) of that PHY.
	WritePHY(reg int, val uint16) error
}

// PHYAccessC45 is a port whose MDIO can also send clause-45 frames (IEEE
// 802.3 clause 45: MMD device dev 0-31, 16-bit register number), to any
// address on the bus (a PHY, or a PCS such as the xPCS of Intel's mGbE).
type PHYAccessC45 interface {
	ReadPHYC45(addr, dev, reg int) (uint16, error)
	WritePHYC45(addr, dev, reg int, val uint16) error
}

// ErrPHYRegister is wrapped by errors for register numbers MDIO cannot carry.
var ErrPHYRegister = errors.New("no such PHY register")

// CheckPHYReg checks a clause-22 register number (5 bits on the wire).
func CheckPHYReg(reg int) error {
	if reg < 0 || reg > 31 {
		return fmt.Errorf("clause-22 register %d: want 0 to 31: %w", reg, ErrPHYRegister)
	}
	return nil
}

// CheckPHYC45 checks a clause-45 address (5 bits), MMD (5 bits) and register
// (16 bits).
func CheckPHYC45(addr, dev, reg int) error {
	switch {
	case addr < 0 || addr > 31:
		return fmt.Errorf("MDIO address %d: want 0 to 31: %w", addr, ErrPHYRegister)
	case dev < 0 || dev > 31:
		return fmt.Errorf("clause-45 MMD %d: want 0 to 31: %w", dev, ErrPHYRegister)
	case reg < 0 || reg > 0xFFFF:
		return fmt.Errorf("clause-45 register %d: want 0 to 65535: %w", reg, ErrPHYRegister)
	}
	return nil
}

// The clause-22 registers and bits the link-mode rules below read (IEEE 802.3
// 22.2.4: BMCR and BMSR; 40.5.1.1: the 1000BASE-T control register).
const (
	phyRegBMCR     = 0
	phyRegBMSR     = 1
	phyRegID1      = 2 // PHY identifier: OUI bits 3-18 (22.2.4.3.1)
	phyRegID2      = 3 // OUI bits 19-24, model, revision
	phyRegCtrl1000 = 9

	bmcrSpeed1000  uint16 = 1 << 6  // speed selection, MSB
	bmcrFullDuplex uint16 = 1 << 8  // forced duplex
	bmcrANRestart  uint16 = 1 << 9  // restart autonegotiation (self-clearing)
	bmcrIsolate    uint16 = 1 << 10 // electrically isolate the PHY from the MII
	bmcrPowerDown  uint16 = 1 << 11 // power down
	bmcrANEnable   uint16 = 1 << 12 // autonegotiation enable
	bmcrSpeed100   uint16 = 1 << 13 // speed selection, LSB
	bmcrReset      uint16 = 1 << 15 // PHY reset (self-clearing)
	bmsrExtStatus  uint16 = 1 << 8  // register 15 (and so 1000BASE-T) present

	// Ctrl1000AdvHalf is CTRL1000 bit 8: advertise 1000BASE-T half duplex.
	Ctrl1000AdvHalf uint16 = 1 << 8
)

// ErrLinkMode is wrapped by errors refusing a link mode (speed and duplex)
// the port's MAC cannot run, though its PHY may.
var ErrLinkMode = errors.New("link mode not supported by the MAC")

// LinkModeChecker is a port whose MAC runs only some of the modes its PHY
// can negotiate, as Linux's MAC drivers narrow phydev->supported
// (phy_remove_link_mode) or phylink's mac_capabilities. A tool that sets the
// link (xnic link, ethtool -s) offers and advertises only the modes it
// accepts.
type LinkModeChecker interface {
	// CheckLinkMode returns nil when the MAC runs speedMbps (10, 100 or
	// 1000) at that duplex, else an error wrapping ErrLinkMode that says
	// why.
	CheckLinkMode(speedMbps int, fullDuplex bool) error
}

// CheckGigabitHalf is CheckLinkMode for a MAC that runs 10 and 100 Mb/s at
// either duplex and 1000 Mb/s full duplex only, as all three families do;
// why is the family's reason, cited from its Linux driver.
func CheckGigabitHalf(speedMbps int, fullDuplex bool, why string) error {
	if speedMbps == 1000 && !fullDuplex {
		return fmt.Errorf("1000BASE-T half duplex: %s: %w", why, ErrLinkMode)
	}
	return nil
}

// CheckGigabitHalfWrite refuses a PHY register write that would ask for
// 1000 Mb/s half duplex: CTRL1000 with bit 8 (the advertisement) set, or BMCR
// forcing 1000 Mb/s half duplex with autonegotiation off. Drivers of MACs
// without gigabit half duplex call it from WritePHY; why is as for
// CheckGigabitHalf.
func CheckGigabitHalfWrite(reg int, val uint16, why string) error {
	switch {
	case reg == phyRegCtrl1000 && val&Ctrl1000AdvHalf != 0:
		return fmt.Errorf("CTRL1000 0x%04x advertises 1000BASE-T half duplex (bit 8): %s: %w", val, why, ErrLinkMode)
	case reg == phyRegBMCR && val&bmcrANEnable == 0 && val&(bmcrSpeed1000|bmcrSpeed100) == bmcrSpeed1000 && val&bmcrFullDuplex == 0:
		return fmt.Errorf("BMCR 0x%04x forces 1000 Mb/s half duplex: %s: %w", val, why, ErrLinkMode)
	}
	return nil
}

// WithdrawGigabitHalf clears the PHY's 1000BASE-T half-duplex advertisement
// (CTRL1000 bit 8, which PHYs set after reset), before a driver restarts
// autonegotiation, so that the PHY never offers a mode the MAC cannot run:
// what igb_phy_setup_autoneg (e1000_phy.c) and genphy_config_advert
// (phy_device.c, after the MAC driver's phy_remove_link_mode) write. A PHY
// without extended status (BMSR bit 8 clear: no 1000BASE-T, no register 9) is
// left alone; CTRL1000 is written only when the bit is set. read and write
// are the driver's clause-22 accessors, called with its MDIO lock held.
func WithdrawGigabitHalf(read func(reg int) (uint16, error), write func(reg int, val uint16) error) error {
	bmsr, err := read(phyRegBMSR)
	if err != nil {
		return fmt.Errorf("reading BMSR: %w", err)
	}
	if bmsr&bmsrExtStatus == 0 {
		return nil
	}
	c, err := read(phyRegCtrl1000)
	if err != nil {
		return fmt.Errorf("reading CTRL1000: %w", err)
	}
	if c&Ctrl1000AdvHalf == 0 {
		return nil
	}
	if err := write(phyRegCtrl1000, c&^Ctrl1000AdvHalf); err != nil {
		return fmt.Errorf("withdrawing the 1000BASE-T half-duplex advertisement (CTRL1000 0x%04x): %w", c, err)
	}
	return nil
}

// PCSLinkReporter is a port whose link may be a 1000BASE-X PCS on a SerDes
// (fiber, SFP or backplane: IEEE 802.3 clauses 36 and 37) rather than a PHY
// on MDIO. Such a link runs at 1000 Mb/s full duplex only; what it
// negotiates, if anything, is the clause-37 base page (pause and duplex), not
// a speed. A tool that shows or sets the link (xnic link, ethtool) asks here
// first.
type PCSLinkReporter interface {
	// PCSLink reports whether the port's link is a PCS's (false: a PHY
	// answers on MDIO) and, if so, whether it negotiates (clause 37) or is
	// forced.
	PCSLink() (pcs, autoneg bool)
}

// ReadPHYID reads a clause-22 PHY's identifier, PHYID1:PHYID2 (IEEE 802.3
// 22.2.4.3.1: registers 2 and 3 hold the OUI, the model and the revision),
// with read, the driver's clause-22 accessor, called with its MDIO lock held.
func ReadPHYID(read func(reg int) (uint16, error)) (uint32, error) {
	hi, err := read(phyRegID1)
	if err != nil {
		return 0, err
	}
	lo, err := read(phyRegID2)
	if err != nil {
		return 0, err
	}
	return uint32(hi)<<16 | uint32(lo), nil
}

// PHYIDValid reports whether id (ReadPHYID) came from a PHY: at an MDIO
// address where nothing answers, MDIO's pull-up reads all ones (IEEE 802.3
// 22.2.4.5.5), and a bus held low reads zeros.
func PHYIDValid(id uint32) bool { return id != 0 && id != 0xFFFFFFFF }

// RestartAutoneg restarts a clause-22 PHY's autonegotiation (IEEE 802.3
// 22.2.4.1: BMCR). A PHY the previous driver left in power-down (BMCR bit 11,
// which genphy_suspend and e1000's power-down set) does not negotiate, so,
// as genphy_resume does, power-down and isolate (which keeps the PHY off the
// MII) are cleared first; then the 1000BASE-T half-duplex advertisement is
// withdrawn (WithdrawGigabitHalf) and BMCR gets autonegotiation enable and
// restart. BMCR's reset bit is never written back. read and write are the
// driver's clause-22 accessors, called with its MDIO lock held.
func RestartAutoneg(read func(reg int) (uint16, error), write func(reg int, val uint16) error) error {
	bmcr, err := read(phyRegBMCR)
	if err != nil {
		return fmt.Errorf("reading BMCR: %w", err)
	}
	bmcr &^= bmcrReset
	if bmcr&(bmcrPowerDown|bmcrIsolate) != 0 {
		bmcr &^= bmcrPowerDown | bmcrIsolate
		if err := write(phyRegBMCR, bmcr); err != nil {
			return fmt.Errorf("powering the PHY up (BMCR power-down, left by the previous driver): %w", err)
		}
	}
	if err := WithdrawGigabitHalf(read, write); err != nil {
		return err
	}
	if err := write(phyRegBMCR, bmcr|bmcrANEnable|bmcrANRestart); err != nil {
		return fmt.Errorf("restarting autonegotiation: %w", err)
	}
	return nil
}

// DiagPHY is a port's PHYAccess for diagnostics and bring-up tools, what
// every driver's ReadPHY and WritePHY do around its MDIO accessors: the
// register number is checked, a write asking for 1000 Mb/s half duplex is
// refused (CheckGigabitHalfWrite, with Why), the access runs under the port's
// control lock (serialised with the driver's own) and only while the port is
// open. Errors are prefixed with Prefix ("family: name").
type DiagPHY struct {
	Prefix string
	Lock   sync.Locker
	Closed func() bool // called with Lock held
	Read   func(reg int) (uint16, error)
	Write  func(reg int, val uint16) error
	Why    string
}

// ReadPHY reads clause-22 register reg.
func (d DiagPHY) ReadPHY(reg int) (uint16, error) {
	if err := CheckPHYReg(reg); err != nil {
		return 0, fmt.Errorf("%s: %w", d.Prefix, err)
	}
	d.Lock.Lock()
	defer d.Lock.Unlock()
	if d.Closed() {
		return 0, fmt.Errorf("%s: %w", d.Prefix, ErrClosed)
	}
	v, err := d.Read(reg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", d.Prefix, err)
	}
	return v, nil
}

// WritePHY writes clause-22 register reg.
func (d DiagPHY) WritePHY(reg int, val uint16) error {
	if err := CheckPHYReg(reg); err != nil {
		return fmt.Errorf("%s: %w", d.Prefix, err)
	}
	if err := CheckGigabitHalfWrite(reg, val, d.Why); err != nil {
		return fmt.Errorf("%s: %w", d.Prefix, err)
	}
	d.Lock.Lock()
	defer d.Lock.Unlock()
	if d.Closed() {
		return fmt.Errorf("%s: %w", d.Prefix, ErrClosed)
	}
	if err := d.Write(reg, val); err != nil {
		return fmt.Errorf("%s: %w", d.Prefix, err)
	}
	return nil
}
