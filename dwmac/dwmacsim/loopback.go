package dwmacsim

// Loopback. MAC_Configuration.LM (bit 12) loops the MAC's transmit path back
// into its receive path at the (G)MII (DWC EQoS databook; Linux's
// dwmac4_set_mac_loopback sets GMAC_CONFIG_LM for the stmmac "MAC Loopback"
// self-test). BMCR bit 14 of the PHY is PHY loopback (IEEE 802.3 22.2.4.1.2:
// nothing goes on the medium, the PHY returns the data to the MAC; stmmac's
// "PHY Loopback" self-test). Either way the frame never reaches the wire and
// is received as any frame is, into MTL RX queue 0 (the receive checks,
// filters, counters and interrupts apply; the model still wants the link up
// and the MAC's speed matching the PHY's, as for frames sent to the wire).

// loopSinkLocked returns where transmitted frames go: wire, or the model's
// own receive path in MAC or PHY loopback. Called with mu held.
func (m *Model) loopSinkLocked(wire func([]byte)) func([]byte) {
	if m.macConfig&cfgLM == 0 && !m.phy.Loopback() {
		return wire
	}
	return m.loopReceive
}

// loopReceive receives a looped-back frame; called without mu.
func (m *Model) loopReceive(frame []byte) { m.Inject(frame) }
