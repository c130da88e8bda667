package fecsim

import "time"

// The IEEE 1588 timer, as far as the model needs it: when ATCR.EN is set it
// counts nanoseconds of real time (ATINC/ATPER/ATCOR are stored, not applied);
// ATCR.CAPTURE latches it into ATVR; writing ATVR sets it. Enhanced BDs carry
// its value as the RX/TX timestamp.

func (m *Model) timerNowLocked() uint32 {
	if m.atcr&atcrEN == 0 {
		return m.atvr
	}
	return uint32(int64(time.Since(m.epoch)) + m.timerBase)
}

func (m *Model) writeATCRLocked(val uint32) {
	was := m.atcr
	if val&atcrEN == 0 && was&atcrEN != 0 {
		m.atvr = m.timerNowLocked() // the timer stops where it is
	}
	if val&atcrEN != 0 && was&atcrEN == 0 {
		m.timerBase = int64(m.atvr) - int64(time.Since(m.epoch))
	}
	if val&atcrRestart != 0 {
		m.timerBase = -int64(time.Since(m.epoch))
		m.atvr = 0
	}
	m.atcr = val &^ (atcrCapture | atcrRestart) // self-clearing
	if val&atcrCapture != 0 {
		m.atvr = m.timerNowLocked()
	}
}
