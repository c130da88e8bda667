package igbsim

import "github.com/xnic-dev/xnic/sim"

// The receive packet buffer (82576 datasheet 7.1.3 and 8.19; I210 datasheet
// 7.1.3 and 8.19). A frame that passed the MAC's checks enters the packet
// buffer and leaves it when the receive DMA has descriptors for it, in
// arrival order (one buffer for every queue: a frame for a queue without
// descriptors holds up the ones behind it). What happens to a frame whose
// queue has no free descriptor:
//
//   - RNBC counts it ("received when there were no available buffers in host
//     memory"; the packet is still received if the packet buffer has room);
//   - with the queue's SRRCTL.DROP_EN it is dropped at once and counted in
//     that queue's RQDPC alone (Linux igb sets DROP_EN with several queues and
//     no RX flow control, and adds RQDPC to rx_fifo_errors);
//   - otherwise it waits in the packet buffer; when the buffer has no room for
//     it, it is dropped and counted in MPC alone (rx_missed_errors).
//
// So each dropped frame is in exactly one of MPC and RQDPC; RNBC is an event
// count that overlaps both. The buffer's size is RXPBS (in KB: 64 on the
// 82576 after reset, 36 on the I350, whose RXPBS encodes sizes by table, and
// 34 on the I210/I211, Linux igb_reset's E1000_PBA_34K).

// rxOutcome is what the receive DMA did with a frame.
type rxOutcome uint8

const (
	rxDone    rxOutcome = iota // written to a ring
	rxDropped                  // dropped and counted
	rxNoDesc                   // its queue had too few free descriptors: nothing changed
)

// rxPBSizeLocked is the receive packet buffer size in bytes.
func (m *Model) rxPBSizeLocked() int {
	kb := 0
	switch m.info.fam {
	case fam82576:
		kb = 64
		if v := m.plain[regRXPBS] & 0x7F; v != 0 {
			kb = int(v)
		}
	case famI350:
		kb = 36
	default:
		kb = 34
		if v := m.plain[regRXPBS] & 0x3F; v != 0 {
			kb = int(v)
		}
	}
	return kb << 10
}

// toFIFOLocked passes a frame that the MAC accepted to the receive DMA, or
// keeps it in the packet buffer behind the frames waiting there. It reports
// whether the device kept the frame (in a ring or in the buffer).
func (m *Model) toFIFOLocked(frame []byte, rv *rxRingViews) bool {
	if m.fifo == nil {
		m.fifo = sim.NewRxFIFO(m.rxPBSizeLocked())
	}
	m.fifo.SetSize(m.rxPBSizeLocked())
	if m.fifo.Len() > 0 {
		m.drainRxFIFOLocked(rv)
	}
	if m.fifo.Len() == 0 && !m.inj.On(sim.FaultRxStall) { // fault.go: a stalled DMA takes nothing
		out, q := m.dmaRxLocked(frame, rv)
		switch out {
		case rxDone:
			return true
		case rxDropped:
			return false
		}
		m.incStat(stRNBC)
		if m.rx[q].srrctl&srrctlDropEn != 0 {
			m.dropEnLocked(q)
			return false
		}
	}
	if !m.fifo.Push(frame, 0) {
		m.missLocked()
		return false
	}
	return true
}

// dropEnLocked counts a frame queue q dropped for want of descriptors with
// SRRCTL.DROP_EN set: RQDPC, saturating.
func (m *Model) dropEnLocked(q int) {
	if r := &m.rx[q]; r.rqdpc != ^uint32(0) {
		r.rqdpc++
	}
	m.cnt.RxMissed++
}

// drainRxFIFOLocked moves waiting frames to the rings while their queues have
// descriptors (an RDT write gave some, or a frame arrives). A frame whose
// queue now has DROP_EN set and no descriptors is dropped as it would have
// been on arrival.
func (m *Model) drainRxFIFOLocked(rv *rxRingViews) {
	if m.fifo == nil || m.inj.On(sim.FaultRxStall) {
		return
	}
	for {
		f, _, ok := m.fifo.Front()
		if !ok {
			return
		}
		out, q := m.dmaRxLocked(f, rv)
		if out == rxNoDesc {
			if m.rx[q].srrctl&srrctlDropEn == 0 {
				return
			}
			m.dropEnLocked(q)
		}
		m.fifo.Pop()
	}
}

// RxHeld is the number of frames waiting in the receive packet buffer.
func (m *Model) RxHeld() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fifo == nil {
		return 0
	}
	return m.fifo.Len()
}

// RxUnseen is what no igb register counts (sim.RxUnseen): frames that
// arrived while RCTL.EN was clear, the link down, the DMA shut (MPC and the
// other receive counters "do not increment if receives are not enabled",
// 82576 datasheet 8.19), frames the address filter refused, and frames
// CTRL.RST flushed from the packet buffer.
func (m *Model) RxUnseen() sim.RxUnseen {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := sim.RxUnseen{Off: m.cnt.RxNoLink, Filtered: m.cnt.RxFiltered}
	if m.fifo != nil {
		u.Flushed = m.fifo.Flushed()
	}
	return u
}
