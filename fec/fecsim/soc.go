package fecsim

import (
	"fmt"

	"github.com/xnic-dev/xnic/sim"
)

// The SoC around the ENET (Config.Board): with a sim.Board, every register
// access first asks the board whether it completes. While the ipg or ahb
// clock is gated (fec_drv_remove and runtime suspend gate them) the access
// is a "bus-error" fault saying that real hardware hangs here (kernel commit
// 6a4d7234ae9a: a register access with the ipg clock off hangs the i.MX8MQ),
// and it fails: a read returns all ones and a write is lost; the same for a
// /dev/mem mapping that strict devmem refuses or revoked. The PHY's reset
// line: while it is asserted the PHY drives nothing on MDIO (a read returns
// 0xffff, a write is lost) and has no link, and it comes out of reset with
// its registers at their defaults. Without a Board the model is the bare
// MAC, as before.
//
// The kernel-left states (Config.Left, leftStates): LeftPHYPowerDown (BMCR
// power-down: fec_enet_close -> phy_disconnect -> phy_detach -> phy_suspend),
// LeftIRQsMasked (EIMR = 0 and EIR cleared: fec_stop), LeftStaleRings (the
// ring start registers hold the freed rings' addresses, ETHEREN clear:
// fec_stop does not clear them) and, on the i.MX8MP with a Board (a private
// one when Config.Board is nil, handed over but for the state asked),
// LeftClocksGated (power/control back to auto: the bus clocks off) and
// LeftPHYInReset (the reset line asserted, as phy_detach leaves it).

const leftStates = sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings | sim.LeftClocksGated | sim.LeftPHYInReset

// setupBoard checks cfg's board and kernel-left states and builds the
// private board the latter may need.
func (m *Model) setupBoard() error {
	cfg := &m.cfg
	if err := sim.CheckLeft("fecsim", cfg.Left, leftStates); err != nil {
		return fmt.Errorf("%w: %w", err, ErrConfig)
	}
	if cfg.Board == nil && cfg.Left&sim.LeftBoardStates != 0 && cfg.Variant != IMX8MP {
		return fmt.Errorf("fecsim: %v needs a board, which only the i.MX8MP variant has: %w", cfg.Left&sim.LeftBoardStates, ErrConfig)
	}
	var err error
	if cfg.Board, cfg.Unit, err = sim.ModelBoard(sim.FEC, cfg.Board, cfg.Unit, cfg.Left); err != nil {
		return fmt.Errorf("fecsim: %w: %w", err, ErrConfig)
	}
	return nil
}

// Board is the SoC the model sits in (nil without one).
func (m *Model) Board() *sim.Board { return m.cfg.Board }

// busError reports (and records) an access the SoC does not complete.
func (m *Model) busError(op string, off uint32) bool {
	if m.cfg.Board == nil {
		return false
	}
	if err := m.cfg.Board.Access(m.cfg.Unit); err != nil {
		m.faults.Add(sim.OpBusError, regName(off), uint64(off), "%s: %v", op, err)
		return true
	}
	return false
}

// phyInResetLocked reports whether the board holds the PHY in reset, and
// resets the PHY's registers on the line's assertion (a PHY in reset has no
// link; it comes out of it with its defaults).
func (m *Model) phyInResetLocked() bool {
	return sim.PHYInReset(m.cfg.Board, m.cfg.Unit, m.phy, &m.phyHeld)
}

// socStoppedLocked reports whether the SoC keeps the MAC from moving frames:
// its clocks gated (or the board refusing access), or its PHY in reset.
func (m *Model) socStoppedLocked() bool {
	if m.cfg.Board == nil {
		return false
	}
	return m.phyInResetLocked() || m.cfg.Board.Access(m.cfg.Unit) != nil
}

// applyLeftLocked puts the MAC and PHY in the register states of cfg.Left.
func (m *Model) applyLeftLocked() {
	left := m.cfg.Left
	if left.Has(sim.LeftPHYPowerDown) {
		m.phy.Write(sim.MIIBMCR, m.phy.Read(sim.MIIBMCR)|sim.BMCRPowerDown)
	}
	if left.Has(sim.LeftIRQsMasked) {
		m.eimr, m.eir = 0, 0
	}
	if left.Has(sim.LeftStaleRings) {
		for q := range m.rings {
			base := uint32(sim.StaleRingBase) + uint32(q)<<16
			m.rings[q].rdsr, m.rings[q].tdsr, m.rings[q].mrbr = base, base+0x8000, 2048
			m.rings[q].rxCur, m.rings[q].txCur = base+0x40, base+0x8040
		}
	}
	m.phyInResetLocked()
}
