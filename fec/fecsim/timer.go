package fecsim

import (
	"math"

	"github.com/xnic-dev/xnic/sim"
)

// The IEEE 1588 timer (i.MX8M Plus RM "ENET Adjustable Timer"; Linux fec_ptp.c
// fec_ptp_start_cyclecounter, fec_ptp_adjfine, fec_ptp_read). While ATCR.EN is
// set, every cycle of the timer clock (Config.PTPClockHz) adds ATINC.INC ns,
// except once every ATCOR cycles, when it adds ATINC.INC_CORR instead
// (ATCOR 0: no correction). With ATCR.PEREN the counter wraps to 0 when it
// reaches ATPER, else at 2^32. ATCR.CAPTURE latches it into ATVR; writing
// ATVR sets it; ATCR.RESTART zeroes it. Here it runs in model time: the
// host's clock scaled by that rate (sim.PHClock). INC 0 stops it, as on the
// hardware. Enhanced BDs carry its value as the RX and TX timestamp.

const (
	atincINC       uint32 = 0x7f
	atincCorrShift        = 8
	atcrPEREN      uint32 = 1 << 4 // wrap at ATPER
)

// retimeLocked sets the timer's rate from ATCR.EN, ATINC and ATCOR.
func (m *Model) retimeLocked() {
	if m.timer == nil {
		m.timer = sim.NewPHClock()
	}
	ns := 0.0 // timer ns per host ns
	if m.atcr&atcrEN != 0 {
		inc := float64(m.atinc & atincINC)
		per := inc
		if m.atcor != 0 {
			corr := float64(m.atinc >> atincCorrShift & atincINC)
			per = inc + (corr-inc)/float64(m.atcor)
		}
		ns = per * float64(m.ptpHz()) / 1e9
	}
	m.timer.SetRate(int64(math.Round((ns - 1) * (1 << sim.PHClockRateShift))))
}

func (m *Model) ptpHz() int {
	if m.cfg.PTPClockHz > 0 {
		return m.cfg.PTPClockHz
	}
	return defaultPTPClockHz
}

// defaultPTPClockHz is the ENET timer clock imx8mp.dtsi assigns (ENET_TIMER,
// 100 MHz).
const defaultPTPClockHz = 100_000_000

func (m *Model) timerNowLocked() uint32 {
	if m.atcr&atcrEN == 0 || m.timer == nil {
		return m.atvr
	}
	v := m.timer.Now()
	if v < 0 {
		v = 0
	}
	if m.atcr&atcrPEREN != 0 && m.atper != 0 {
		return uint32(v % int64(m.atper))
	}
	return uint32(v)
}

func (m *Model) writeATCRLocked(val uint32) {
	was := m.atcr
	if val&atcrEN == 0 && was&atcrEN != 0 {
		m.atvr = m.timerNowLocked() // the timer stops where it is
	}
	if val&atcrEN != 0 && was&atcrEN == 0 {
		m.setTimerLocked(m.atvr)
	}
	if val&atcrRestart != 0 {
		m.setTimerLocked(0)
		m.atvr = 0
	}
	m.atcr = val &^ (atcrCapture | atcrRestart) // self-clearing
	m.retimeLocked()
	if val&atcrCapture != 0 {
		m.atvr = m.timerNowLocked()
	}
}

// setTimerLocked sets the counter to v.
func (m *Model) setTimerLocked(v uint32) {
	if m.timer == nil {
		m.timer = sim.NewPHClock()
	}
	m.timer.Set(int64(v))
}

// Timer is the 1588 counter now, as ATCR.CAPTURE would latch it (for tests).
func (m *Model) Timer() uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.timerNowLocked()
}
