package dwmacsim

import "fmt"

// Interrupts (databook "Interrupts"; stmmac dwmac4_lib.c, dwmac-intel.c).
//
// A DMA event sets its bit in DMA_CH_Status. If its enable bit is set in
// DMA_CH_Interrupt_Enable, the summary bit of its group is set too: NIS for TI,
// TBU, RI, ERI; AIS for TPS, RPS, RBU, RWT, ETI, FBE, CDE. The channel's line
// is asserted while NIS&NIE or AIS&AIE hold for an enabled cause. The model
// sends a message when an event asserts a line that was not asserted (a level
// line seen through MSI: an event whose line is still held by a cause the
// driver left set in DMA_CH_Status raises no new message), and another when an
// Interrupt_Enable write enables a cause that is still pending: software that
// clears the status before re-enabling gets no stale interrupt, software that
// does not gets one at once.
//
// Where it goes: with DMA_Mode.INTM = 0 everything is on vector 0 (the
// sbd_intr_o line: Intel's single-vector fallback, i.MX8MP's macirq); with
// INTM = 1 (Intel only) RX-side causes of channel i go to vector 2i and
// TX-side causes (and FBE/CDE) to vector 2i+1, as dwmac-intel assigns them.
// A polling driver that leaves causes enabled without setting up any vector
// is not at fault (the messages go nowhere); enabling vectors and then raising
// a cause on one that was not set up is.

// raiseLocked records events ev on channel c and signals what they enable.
func (m *Model) raiseLocked(c int, ev uint32) {
	ch := &m.ch[c]
	held := m.assertedLocked(c)
	ch.status |= ev
	if ev&ch.intEn&stNormal != 0 {
		ch.status |= stNIS
	}
	if ev&ch.intEn&stAbnormal != 0 {
		ch.status |= stAIS
	}
	if fire := ev & ch.pendingLocked(m.ieNIE, m.ieAIE) &^ held; fire != 0 {
		m.signalLocked(c, fire)
	}
}

// assertedLocked is the set of channel c's causes whose line is asserted now:
// with INTM = 0 one line for every channel (all causes, if any channel has one
// pending), with INTM = 1 the channel's RX line and TX line.
func (m *Model) assertedLocked(c int) uint32 {
	if m.busMode&busINTMMask != busINTMPerCh {
		for i := range m.ch[:m.nch] {
			if m.ch[i].pendingLocked(m.ieNIE, m.ieAIE) != 0 {
				return stRxSide | stTxSide
			}
		}
		return 0
	}
	var held uint32
	p := m.ch[c].pendingLocked(m.ieNIE, m.ieAIE)
	if p&stRxSide != 0 {
		held |= stRxSide
	}
	if p&stTxSide != 0 {
		held |= stTxSide
	}
	return held
}

// signalLocked sends the message(s) for enabled causes on channel c.
func (m *Model) signalLocked(c int, causes uint32) {
	if m.closed {
		return
	}
	if m.busMode&busINTMMask != busINTMPerCh {
		m.sendLocked(0, "DMA channel interrupt (INTM=0)")
		return
	}
	if causes&stRxSide != 0 {
		m.sendLocked(2*c, "RX channel interrupt (INTM=1)")
	}
	if causes&stTxSide != 0 {
		m.sendLocked(2*c+1, "TX channel interrupt (INTM=1)")
	}
}

// sendLocked sends vector v. With no vector set up at all (a polling driver),
// the message goes nowhere, as with MSI-X disabled on the device: not a
// fault. With vectors set up, a message on one that is not is a routing
// mistake (INTM, or too few vectors requested): a fault.
func (m *Model) sendLocked(v int, what string) {
	if m.base.Signal(v) {
		m.cnt.IRQs++
		return
	}
	if m.base.VectorsEnabled() == 0 {
		return
	}
	m.faults.Add("irq", fmt.Sprintf("vector %d", v), uint64(v),
		"%s on vector %d, which EnableMSIX did not set up (%d vectors enabled)", what, v, m.base.VectorsEnabled())
}
