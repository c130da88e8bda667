package dwmacsim

import "github.com/xnic-dev/xnic/sim"

// The MTL receive FIFOs (databook "MTL receive path", MTL_RxQ_Operation_Mode,
// MTL_RxQ_Missed_Packet_Overflow_Cnt, MMC rx_fifo_overflow). Each MTL RX queue
// has its slice of the RX FIFO, RQS+1 units of 256 bytes (of the
// HW_FEATURE1.RXFIFOSIZE total: 8 KB on the i.MX 8M Plus, 32 KB on the Intel
// mGbE models). A frame the MAC accepted enters its queue's FIFO and the RX
// DMA moves it to the channel's ring, in order; while the channel has no
// descriptor (RBU, suspended) frames wait there and drain at the next tail
// write. A frame the FIFO has no room for is dropped: OVFPKTCNT of the
// queue's MTL_RxQ_Missed_Packet_Overflow_Cnt and MMC rx_fifo_overflow each
// count it (two registers, one frame, as in the databook; stmmac reports the
// MMC one). MISPKTCNT and DMA_CH_Miss_Frame_Cnt count frames the DMA flushes
// (a stopped channel), not frames that wait.

// rxOutcome is what the RX DMA did with a frame.
type rxOutcome uint8

const (
	rxDone    rxOutcome = iota // written to the ring
	rxDropped                  // dropped and counted
	rxNoDesc                   // no descriptor: the frame stays in the FIFO
)

// rqsShift and rqsMask are MTL_RxQ_Operation_Mode.RQS (29:20): the queue's
// FIFO size in 256-byte units, minus one.
const (
	rqsShift        = 20
	rqsMask  uint32 = 0x3ff
)

// rxFIFOSizeLocked is MTL RX queue q's FIFO size in bytes.
func (m *Model) rxFIFOSizeLocked(q int) int {
	total := 128 << fifoBits(m.cfg.Variant)
	return min(int(m.mtlq[q].rxOp>>rqsShift&rqsMask+1)*256, total)
}

// rxFIFOLocked is queue q's FIFO, sized from RQS now.
func (m *Model) rxFIFOLocked(q int) *sim.RxFIFO {
	f := m.rxFIFO[q]
	if f == nil {
		f = sim.NewRxFIFO(m.rxFIFOSizeLocked(q))
		m.rxFIFO[q] = f
	}
	f.SetSize(m.rxFIFOSizeLocked(q))
	return f
}

// toMTLLocked puts a frame the MAC accepted into MTL RX queue q: to the DMA
// at once when nothing waits before it, else behind the waiting frames. It
// reports whether the device kept the frame.
func (m *Model) toMTLLocked(q int, frame []byte) bool {
	if q < 0 || q >= len(m.rxFIFO) {
		return m.dmaRxLocked(q, frame) == rxDone
	}
	f := m.rxFIFOLocked(q)
	if f.Len() > 0 {
		m.drainMTLLocked(q)
	}
	if f.Len() == 0 && !m.inj.On(sim.FaultRxStall) { // fault.go: a stalled DMA takes nothing
		switch m.dmaRxLocked(q, frame) {
		case rxDone:
			return true
		case rxDropped:
			return false
		}
	}
	if !f.Push(frame, 0) {
		m.overflowLocked(&m.mtlq[q])
		return false
	}
	return true
}

// drainMTLLocked moves queue q's waiting frames to the ring while the DMA has
// descriptors.
func (m *Model) drainMTLLocked(q int) {
	f := m.rxFIFO[q]
	if f == nil || m.inj.On(sim.FaultRxStall) {
		return
	}
	for {
		fr, _, ok := f.Front()
		if !ok || m.dmaRxLocked(q, fr) == rxNoDesc {
			return
		}
		f.Pop()
	}
}

// drainAllLocked drains every MTL RX queue (a tail write resumed a channel).
func (m *Model) drainAllLocked() {
	for q := range m.rxFIFO {
		if m.rxFIFO[q] != nil && m.rxFIFO[q].Len() > 0 {
			m.drainMTLLocked(q)
		}
	}
}

// RxHeld is the number of frames waiting in the MTL RX FIFOs.
func (m *Model) RxHeld() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, f := range m.rxFIFO {
		if f != nil {
			n += f.Len()
		}
	}
	return n
}

// RxUnseen is what no register of the MAC counts (sim.RxUnseen): frames that
// arrived while MAC_Configuration.RE was clear, the link down or the MAC in
// reset, frames the address filter refused, and frames a DMA software reset
// flushed from the MTL RX FIFOs.
func (m *Model) RxUnseen() sim.RxUnseen {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := sim.RxUnseen{Off: m.cnt.RxNoLink, Filtered: m.cnt.RxFiltered}
	for _, f := range m.rxFIFO {
		if f != nil {
			u.Flushed += f.Flushed()
		}
	}
	return u
}
