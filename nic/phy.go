package nic

import (
	"errors"
	"fmt"
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
