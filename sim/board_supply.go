package sim

import (
	"fmt"
	"strings"
)

// A board may power the FEC's PHY from a regulator named by the node's
// phy-supply (the EVKs have none). fec_probe enables it
// (devm_regulator_get_optional(dev, "phy"), regulator_enable) and
// fec_drv_remove disables it, so after rmmod fec the PHY is unpowered and
// nothing in user space turns it back on: simple-pm-bus does not know the
// property. Only a devicetree that keeps the regulator on
// (regulator-always-on) hands such a PHY over powered. An unpowered PHY
// answers nothing on MDIO and has no link, as one in reset.

// boardSupply is a MAC node's phy-supply; guarded by Board.mu.
type boardSupply struct {
	name     string
	users    int  // enables held by consumers (fec)
	alwaysOn bool // regulator-always-on
}

// SetPHYSupply gives unit's node a phy-supply regulator named name, in the
// state its bound driver leaves it (enabled by a bound fec). FEC nodes only:
// the EQOS glue does not use the property.
func (b *Board) SetPHYSupply(unit, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if m.info.Kind != FEC || name == "" {
		return fmt.Errorf("%w: a named phy-supply is modelled on FEC nodes only (%s)", ErrBoard, unit)
	}
	m.supply = &boardSupply{name: name}
	if m.driver == DriverFEC {
		m.supply.users = 1
	}
	return nil
}

// SetPHYSupplyAlwaysOn sets regulator-always-on on unit's phy-supply (the
// devicetree edit that hands its PHY over powered).
func (b *Board) SetPHYSupplyAlwaysOn(unit string, on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if m.supply == nil {
		return fmt.Errorf("%w: %s has no phy-supply", ErrBoard, unit)
	}
	m.supply.alwaysOn = on
	return nil
}

// poweredLocked reports whether the PHY has power: no phy-supply, or one
// that is on.
func (m *boardMAC) poweredLocked() bool {
	s := m.supply
	return s == nil || s.alwaysOn || s.users > 0
}

// PHYOperating reports whether unit's PHY works: powered and out of reset.
func (b *Board) PHYOperating(unit string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	return err == nil && !m.resetOn && m.poweredLocked()
}

// renderSuppliesLocked writes /sys/class/regulator/regulator.N/{name,state,
// num_users} for the declared supplies (regulator.0 is the kernel's dummy).
func (b *Board) renderSuppliesLocked(w *treeWriter) {
	n := 0
	w.file("sys/class/regulator/regulator.0/name", "regulator-dummy\n")
	w.file("sys/class/regulator/regulator.0/state", "enabled\n")
	w.file("sys/class/regulator/regulator.0/num_users", "0\n")
	for _, m := range b.macs {
		s := m.supply
		if s == nil {
			continue
		}
		n++
		dir := fmt.Sprintf("sys/class/regulator/regulator.%d/", n)
		state := "disabled"
		if m.poweredLocked() {
			state = "enabled"
		}
		w.file(dir+"name", strings.TrimSpace(s.name)+"\n")
		w.file(dir+"state", state+"\n")
		w.file(dir+"num_users", fmt.Sprintf("%d\n", s.users))
	}
}
