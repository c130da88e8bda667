package fecsim

// txReadyAtKickLocked is the uDMA's first BD fetch on a TDAR write that finds
// ring q idle: it reads the BD at the ring's current position from memory at
// the write, as it does for RDAR (activateRxLocked). The reference manual's
// ENET_TDAR: the bit is set by the write and "cleared by the MAC device when
// no additional ready descriptors remain in the transmit ring"; Linux's
// fec_enet_txq_submit_skb orders every BD store before the TDAR write (wmb)
// for that reason. A BD whose R is set only in the CPU's cache (written, not
// yet cleaned) is not ready to the device: TDAR clears at once and the frames
// wait for the next TDAR write, which may never come.
func (m *Model) txReadyAtKickLocked(q int) bool {
	r := &m.rings[q]
	size := bdSizeLeg
	if m.ecr&ecrEN1588 != 0 {
		size = bdSizeExt
	}
	d, err := m.mem.View("tx-desc", uint64(r.txCur), size)
	if err != nil {
		return false
	}
	return bdView{d, m.ecr&ecrDBSWP != 0}.sc()&txR != 0
}
