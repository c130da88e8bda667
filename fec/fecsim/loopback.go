package fecsim

// PHY loopback: BMCR bit 14 (IEEE 802.3 22.2.4.1.2: with it set nothing goes
// on the medium, and the PHY returns what the MAC sends). The frame has passed
// the MAC's link, speed and duplex checks on its way to the PHY, and comes
// back as a frame from the wire does. (RCR.LOOP, the MAC's internal loopback,
// turns round inside the MAC: txOneLocked.)

// phyLoopSinkLocked returns wire, or the model's own receive path when the
// PHY is in loopback. Called with mu held.
func (m *Model) phyLoopSinkLocked(wire func([]byte)) func([]byte) {
	if !m.phy.Loopback() {
		return wire
	}
	return m.phyLoopReceive
}

// phyLoopReceive receives a frame the PHY looped back; called without mu.
func (m *Model) phyLoopReceive(frame []byte) { m.Inject(frame) }
