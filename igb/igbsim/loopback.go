package igbsim

// Loopback. RCTL.LBM (bits 7:6) = 01b is MAC loopback (82576 datasheet
// 8.10.1; Linux's E1000_RCTL_LBM_MAC 0x40): the MAC hands what it transmits
// to its own receive path. BMCR bit 14 of the PHY is PHY loopback (IEEE 802.3
// 22.2.4.1.2: TX_EN puts nothing on the medium, the PHY returns the data to
// the MAC), what Linux's igb self-test uses on copper ports. Either way the
// frame never reaches the wire, and it is received as any frame is (the
// receive checks, filters, counters and interrupts apply; the model still
// wants the link up to receive). LBM = 11b (transceiver loopback, SerDes
// ports) is not modelled: the frames go to the wire.

// rctlLBMMAC is RCTL.LBM = 01b.
const rctlLBMMAC uint32 = 1 << 6

// loopSinkLocked returns where transmitted frames go: wire, or the model's
// own receive path in MAC or PHY loopback. Called with mu held.
func (m *Model) loopSinkLocked(wire func([]byte)) func([]byte) {
	if m.rctl&rctlLBM != rctlLBMMAC && !m.phy.Loopback() {
		return wire
	}
	return m.loopReceive
}

// loopReceive receives a looped-back frame; called without mu.
func (m *Model) loopReceive(frame []byte) { m.Inject(frame) }
