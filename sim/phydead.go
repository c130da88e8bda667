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
