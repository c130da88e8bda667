package fecsim

import "github.com/xnic-dev/xnic/sim"

// The receive FIFO (i.MX 8M Plus and i.MX 6 reference manuals, ENET "Receive
// FIFO"; fec.h: IEEE_R_MACERR is the "RX FIFO overflow count"). A frame the
// MAC accepted enters the FIFO and the receive DMA moves it to its ring's
// empty BDs, in arrival order (one FIFO for every ring). While the ring is not
// active (RDAR clear: the DMA found a BD that was not empty) frames wait there
// and drain when software writes RDAR. A frame the full FIFO has no room for
// is dropped and counted in IEEE_R_MACERR alone.
//
// The manuals give the FIFO's section thresholds (RSFL, RSEM, RAEM, RAFL) as
// 8-bit counts of 64-bit words; the model takes the 2 KB they address as the
// FIFO's size (rxFIFOBytes).

// rxFIFOBytes is the receive FIFO's size; txFIFOBytes the transmit FIFO's,
// taken the same way from TAEM/TAFL (how far the MAC runs ahead of the wire).
const (
	rxFIFOBytes = 256 * 8
	txFIFOBytes = 256 * 8
)

// rxOutcome is what the receive DMA did with a frame.
type rxOutcome uint8

const (
	rxDone    rxOutcome = iota // written to a ring
	rxDropped                  // dropped and counted
	rxNoDesc                   // no empty BD: the frame stays in the FIFO
)

// toFIFOLocked hands a frame the MAC accepted to the receive DMA, or keeps it
// behind the frames waiting in the FIFO. It reports whether the device kept
// the frame.
func (m *Model) toFIFOLocked(frame []byte) bool {
	if m.rxFIFO == nil {
		m.rxFIFO = sim.NewRxFIFO(rxFIFOBytes)
	}
	if m.rxFIFO.Len() > 0 {
		m.drainRxFIFOLocked()
	}
	if m.rxFIFO.Len() == 0 && !m.inj.On(sim.FaultRxStall) { // fault.go: a stalled DMA takes nothing
		switch m.dmaRxLocked(frame) {
		case rxDone:
			return true
		case rxDropped:
			return false
		}
	}
	if !m.rxFIFO.Push(frame, 0) {
		m.mibInc(regIEEERMacErr)
		m.cnt.RxOverflow++
		return false
	}
	return true
}

// drainRxFIFOLocked moves waiting frames to their rings while they have empty
// BDs.
func (m *Model) drainRxFIFOLocked() {
	if m.rxFIFO == nil || m.inj.On(sim.FaultRxStall) {
		return
	}
	for {
		f, _, ok := m.rxFIFO.Front()
		if !ok || m.dmaRxLocked(f) == rxNoDesc {
			return
		}
		m.rxFIFO.Pop()
	}
}

// RxHeld is the number of frames waiting in the receive FIFO.
func (m *Model) RxHeld() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rxFIFO == nil {
		return 0
	}
	return m.rxFIFO.Len()
}

// RxUnseen is what no register of the MAC counts (sim.RxUnseen): frames that
// arrived while ECR.ETHEREN was clear or the link down, frames the address
// filter refused, and frames a reset or ETHEREN's clearing flushed from the
// receive FIFO.
func (m *Model) RxUnseen() sim.RxUnseen {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := sim.RxUnseen{Off: m.cnt.RxOff, Filtered: m.cnt.RxFiltered}
	if m.rxFIFO != nil {
		u.Flushed = m.rxFIFO.Flushed()
	}
	return u
}
