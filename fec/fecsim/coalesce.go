package fecsim

import (
	"fmt"
	"time"
)

// Interrupt coalescing (i.MX8M Plus reference manual, ENET "Interrupt
// coalescing", registers ENET_RXICn at 0x100 and ENET_TXICn at 0xF0, n the
// ring): with ICEN set, a ring's frame-done event (RXFn, TXFn) is held until
// ICFT frames have completed or, from the first held frame, ICTT periods of
// 64 clock cycles have passed, whichever comes first; then EIR's bit sets
// once for them all. ICCS picks the clock: 1 the ENET system clock (Linux
// sets it, and computes the period from clk_ahb, fec_enet_us_to_itr_clock),
// 0 the MII/GMII transmit clock (2.5, 25 or 125 MHz by speed). Linux refuses
// a zero threshold ("unpredictable behavior", fec_enet_itr_coal_set); the
// model faults on it.

// The fields of RXICn/TXICn.
const (
	icEN        uint32 = 1 << 31
	icCS        uint32 = 1 << 30
	icFTShift          = 20
	icFTMask    uint32 = 0xFF << icFTShift
	icTTMask    uint32 = 0xFFFF
	icImplement        = icEN | icCS | icFTMask | icTTMask
)

// defaultSystemClockHz is the ENET system (ahb) clock imx8mp.dtsi gives the
// FEC: IMX8MP_CLK_SIM_ENET_ROOT, under ENET_AXI parented to SYS_PLL1_266M.
const defaultSystemClockHz = 266_000_000

// coalescer is one ring direction's held events. Like igbsim's EITR, the
// interval is host time in both of sim.Sched's modes: it is a delay the
// driver asked for, not device work.
type coalescer struct {
	held  int         // frames completed since the event last fired
	bit   uint32      // the EIR bit held
	timer *time.Timer // fires the held event when ICTT runs out; made at first use
}

// newCoalescers names each coalescer's event at New.
func (m *Model) newCoalescers() {
	for q := range m.rxCoal {
		m.rxCoal[q].bit, m.txCoal[q].bit = eirRXFq[q], eirTXFq[q]
	}
}

// stopCoalescers stops the timers (Close).
func (m *Model) stopCoalescers() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for q := range m.rxCoal {
		for _, c := range []*coalescer{&m.rxCoal[q], &m.txCoal[q]} {
			if c.timer != nil {
				c.timer.Stop()
			}
			c.held = 0
		}
	}
}

// coalesceLocked passes ring q's frame-done bits in events through the
// ring's coalescing: what is held is taken out of events.
func (m *Model) coalesceLocked(q int, events uint32) uint32 {
	if events&eirRXFq[q] != 0 && m.rxic[q]&icEN != 0 {
		if m.holdLocked(&m.rxCoal[q], m.rxic[q], fmt.Sprintf("RXIC%d", q), regRXIC0+reg(4*q)) {
			events &^= eirRXFq[q]
		}
	}
	if events&eirTXFq[q] != 0 && m.txic[q]&icEN != 0 {
		if m.holdLocked(&m.txCoal[q], m.txic[q], fmt.Sprintf("TXIC%d", q), regTXIC0+reg(4*q)) {
			events &^= eirTXFq[q]
		}
	}
	return events
}

// holdLocked counts one frame on c and reports whether its event is held
// (false: it fires now).
func (m *Model) holdLocked(c *coalescer, ic uint32, name string, off reg) bool {
	ft, tt := int(ic&icFTMask>>icFTShift), ic&icTTMask
	if ft == 0 || tt == 0 {
		m.faults.Add("write32", name, uint64(off),
			"coalescing enabled with ICFT %d, ICTT %d: a zero threshold is unpredictable; the event is not delayed", ft, tt)
		return false
	}
	c.held++
	if c.held >= ft {
		c.held = 0
		return false
	}
	if c.held == 1 {
		d := m.coalescePeriod(ic) * time.Duration(tt)
		if c.timer == nil {
			c.timer = time.AfterFunc(d, func() { m.coalesceTimeout(c) })
		} else {
			c.timer.Reset(d)
		}
	}
	return true
}

// coalescePeriod is one ICTT unit: 64 cycles of the clock ICCS selects.
func (m *Model) coalescePeriod(ic uint32) time.Duration {
	hz := m.cfg.SystemClockHz
	if hz <= 0 {
		hz = defaultSystemClockHz
	}
	if ic&icCS == 0 {
		switch m.macSpeedLocked() {
		case 1000:
			hz = 125_000_000
		case 100:
			hz = 25_000_000
		default:
			hz = 2_500_000
		}
	}
	return time.Duration(64 * int64(time.Second) / int64(hz))
}

// coalesceTimeout is a ring's ICTT running out: the held frames' event sets.
func (m *Model) coalesceTimeout(c *coalescer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.held == 0 || m.isClosed() {
		return // fired by the frame count meanwhile, reset, or closed
	}
	c.held = 0
	m.raiseLocked(c.bit)
}

// resetCoalescersLocked forgets held events (reset, ETHEREN clear).
func (m *Model) resetCoalescersLocked() {
	for q := range m.rxCoal {
		m.rxCoal[q].held, m.txCoal[q].held = 0, 0
	}
}

// isCoalesceReg reports whether off is one of RXIC0-2, TXIC0-2.
func isCoalesceReg(off uint32) bool {
	return off >= uint32(regTXIC0) && off < uint32(regTXIC0)+12 || off >= uint32(regRXIC0) && off < uint32(regRXIC0)+12
}
