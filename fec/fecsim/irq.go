package fecsim

// Interrupts. EIR collects events; a line is asserted while one of its EIR bits
// is set and enabled in EIMR. The model signals a line (sim IRQ, like an
// eventfd) when a bit of it becomes pending-and-enabled that was not before: a
// new event, or EIMR enabling a pending one. Clearing EIR (write 1) lets the
// same event signal again.
//
// Lines on the i.MX8MP (GIC SPI 118-121; Linux's devicetree names them int0,
// int1, int2 and pps and serves the first three with one handler that reads all
// of EIR). The reference manual routes the ring 1 and ring 2 frame/buffer events
// to their own lines; this model's routing is:
//
//	line 0 (SPI 118): ring 0 RXF/RXB/TXF/TXB and every non-ring event (MII,
//	                  GRA, errors, TS_AVAIL, WAKEUP)
//	line 1 (SPI 119): ring 1 (RXF1, RXB1, TXF1, TXB1: EIR bits 3:0)
//	line 2 (SPI 120): ring 2 (EIR bits 7:4)
//	line 3 (SPI 121): the 1588 timer (TS_TIMER)
//
// The i.MX6 ENET has one line for everything.

var lineMasks8MP = [4]uint32{
	eirImplemented &^ (0xFF | eirTSTIMER),
	0x0F,
	0xF0,
	eirTSTIMER,
}

// updateIRQLocked signals every line with newly pending, enabled events.
func (m *Model) updateIRQLocked() {
	pend := m.eir & m.eimr
	if m.info.lines == 1 {
		m.lineLocked(0, pend)
		return
	}
	for i := range lineMasks8MP {
		m.lineLocked(i, pend&lineMasks8MP[i])
	}
}

func (m *Model) lineLocked(i int, p uint32) {
	newBits := p &^ m.linePend[i]
	m.linePend[i] = p
	if newBits == 0 {
		return
	}
	m.lineFired[i]++
	// A line the driver did not set up is not a fault: drivers may poll EIR.
	if m.sd.Signal(i) {
		m.cnt.IRQs++
	}
}

// raiseLocked sets EIR bits and signals.
func (m *Model) raiseLocked(bits uint32) {
	m.eir |= bits
	m.updateIRQLocked()
}
