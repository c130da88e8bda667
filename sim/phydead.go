package sim

// SetDead makes the PHY stop answering MDIO (a PHY whose supply or clock
// failed, or held in reset): reads return 0xffff, as the bus's pull-up does,
// writes are lost, and the link drops. SetDead(false) brings it back, its
// link negotiating again as after the cable was plugged in.
func (p *PHY) SetDead(dead bool) {
	if p.dead.Swap(dead) == dead {
		return
	}
	p.SetConnected(!dead)
}

// Dead reports SetDead.
func (p *PHY) Dead() bool { return p.dead.Load() }

// Loopback reports whether the PHY returns what the MAC transmits to the MAC
// (BMCR bit 14, IEEE 802.3 22.2.4.1.2) instead of the medium. A dead PHY
// returns nothing: that its MDIO reads all ones (bit 14 included) is the
// bus's pull-up, not its register.
func (p *PHY) Loopback() bool { return !p.dead.Load() && p.Read(MIIBMCR)&BMCRLoopback != 0 }
