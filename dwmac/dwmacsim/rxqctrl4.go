package dwmacsim

// MAC_RxQ_Ctrl4 (0x94; databook "MAC_RxQ_Ctrl4", Linux dwmac4.h
// GMAC_RXQ_CTRL4): which RX queue takes the frames a filter rejects, for
// cores with the "filter fail queue" option: UFFQE bit 0 with UFFQ 3:1 for
// unicast frames that fail the destination address filter, MFFQE bit 8 with
// MFFQ 11:9 for multicast ones, VFFQE bit 16 with VFFQ 19:17 for frames that
// fail the VLAN tag filter. Linux's dwmac4_set_filter sets VFFQE with VFFQ
// = the last RX queue in promiscuous mode when the glue asks for it
// (dwmac-intel: vlan_fail_q_en), and clears it again.
//
// The model has no VLAN tag filter (MAC_Packet_Filter.VTFE is refused), so no
// frame fails it and VFFQE/VFFQ are exact as storage; VFFQ must name an RX
// queue the part has. Queuing address-filter failures (UFFQE, MFFQE) would
// deliver frames the model's filter drops: not modelled, refused.
const (
	regMACRxqCtrl4 reg = 0x0094

	rxq4UFFQE       uint32 = 1 << 0
	rxq4MFFQE       uint32 = 1 << 8
	rxq4VFFQE       uint32 = 1 << 16
	rxq4VFFQShift          = 17
	rxq4VFFQMask    uint32 = 7 << rxq4VFFQShift
	rxq4Implemented        = rxq4VFFQE | rxq4VFFQMask | 7<<1 | 7<<9 // the queue fields are storage
)

func (m *Model) writeRxqCtrl4Locked(val uint32) {
	switch {
	case val&(rxq4UFFQE|rxq4MFFQE) != 0:
		m.faults.Add("write32", "MAC_RxQ_Ctrl4", uint64(regMACRxqCtrl4), "UFFQE/MFFQE (queue frames that fail the address filter) is not modelled: the model drops them")
	case val&^(rxq4Implemented|rxq4UFFQE|rxq4MFFQE) != 0:
		m.faults.Add("write32", "MAC_RxQ_Ctrl4", uint64(regMACRxqCtrl4), "reserved bits 0x%08x set", val&^(rxq4Implemented|rxq4UFFQE|rxq4MFFQE))
	case val&rxq4VFFQE != 0 && int(val&rxq4VFFQMask>>rxq4VFFQShift) >= m.nrx:
		m.faults.Add("write32", "MAC_RxQ_Ctrl4", uint64(regMACRxqCtrl4), "VFFQ %d: the part has %d RX queues", val&rxq4VFFQMask>>rxq4VFFQShift, m.nrx)
	default:
		m.plain[regMACRxqCtrl4] = val
	}
}
