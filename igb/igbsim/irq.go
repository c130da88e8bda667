package igbsim

import (
	"fmt"
	"math/bits"
	"time"
)

// Interrupts (82576 datasheet 7.3). Queue causes map to MSI-X vectors through
// IVAR; in MSI-X mode (GPIE.MSIX_MODE) EICR bit n is vector n. A vector fires
// when its EICR bit is set and its EIMS bit is set, at most once per EITR
// interval; firing clears the EICR bits named in EIAC and, with GPIE.EIAME, the
// EIMS bits named in EIAM. Without MSI-X mode EICR bits are per queue (RX n at
// bit n, TX n at bit 8+n, other causes at bit 31) and everything goes to vector 0.
//
// An event fires only causes it newly sets: a cause left set in EICR (no EIAC
// auto-clear, not cleared by software) raises no new message when its event
// recurs. An EICS write, or an EIMS write enabling a pending cause, fires it.

// ivarEntryLocked returns the IVAR byte of queue q's RX or TX cause.
func (m *Model) ivarEntryLocked(q int, isTX bool) uint32 {
	var idx, byteN int
	switch m.info.fam {
	case fam82576: // IVAR[q&7]: RX q<8 byte 0, TX q<8 byte 1, queues 8-15 bytes 2, 3
		idx = q & 7
		if isTX {
			byteN = 1
		}
		if q >= 8 {
			byteN += 2
		}
	default: // 82580 style: IVAR[q/2]: even queue bytes 0 (RX), 1 (TX); odd 2, 3
		idx = q >> 1
		byteN = (q & 1) * 2
		if isTX {
			byteN++
		}
	}
	return m.ivar[idx] >> (8 * byteN) & 0xFF
}

// raiseQueueLocked sets the cause of queue q's RX or TX event.
func (m *Model) raiseQueueLocked(q int, isTX bool) {
	if m.gpie&gpieMSIXMode != 0 {
		e := m.ivarEntryLocked(q, isTX)
		if e&ivarValid == 0 {
			return // cause not mapped: no interrupt
		}
		m.setCauseLocked(1 << (e & ivarVecMask))
	} else if isTX {
		m.setCauseLocked(eicrTxQ0 << q)
	} else {
		m.setCauseLocked(1 << q)
	}
}

// setCauseLocked sets EICR bits for an event and fires those that were clear.
func (m *Model) setCauseLocked(b uint32) {
	nb := b &^ m.eicr
	m.eicr |= b
	m.evaluateLocked(nb)
}

// raiseOtherLocked forwards enabled ICR causes (link status change) to the
// "other" vector (IVAR_MISC byte 1) or, without MSI-X mode, to EICR bit 31.
func (m *Model) raiseOtherLocked() {
	if m.icr&m.ims == 0 {
		return
	}
	if m.gpie&gpieMSIXMode != 0 {
		e := m.ivarMisc >> 8 & 0xFF
		if e&ivarValid == 0 {
			return
		}
		m.setCauseLocked(1 << (e & ivarVecMask))
	} else {
		m.setCauseLocked(eicrOther)
	}
}

// evaluateLocked fires the vectors of the causes in which that are set and
// enabled.
func (m *Model) evaluateLocked(which uint32) {
	pend := m.eicr & m.eims & which
	if pend == 0 {
		return
	}
	if m.gpie&gpieMSIXMode == 0 {
		m.fireLocked(0, pend)
		return
	}
	for pend != 0 {
		v := bits.TrailingZeros32(pend)
		pend &^= 1 << v
		if v >= len(m.eitr) {
			m.faults.Add("msix", "EICR", uint64(v), "cause on vector %d; the %s has %d vectors", v, m.info.name, len(m.eitr))
			m.eicr &^= 1 << v
			continue
		}
		m.fireLocked(v, 1<<v)
	}
}

// fireLocked sends vector v for the causes in bitsSet, unless EITR holds it back;
// then a timer sends it when the interval has passed.
func (m *Model) fireLocked(v int, bitsSet uint32) {
	if ival := m.eitr[v] >> eitrIntShift & eitrIntMask; ival != 0 {
		now := time.Now()
		next := m.lastFire[v].Add(time.Duration(ival) * time.Microsecond)
		if now.Before(next) {
			if !m.eitrArmed[v] {
				m.eitrArmed[v] = true
				d := next.Sub(now)
				if m.eitrTimer[v] == nil {
					m.eitrTimer[v] = time.AfterFunc(d, func() { m.eitrExpired(v) })
				} else {
					m.eitrTimer[v].Reset(d)
				}
			}
			return
		}
		m.lastFire[v] = now
	}
	m.sendLocked(v, bitsSet)
}

func (m *Model) eitrExpired(v int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eitrArmed[v] = false
	if m.closed {
		return
	}
	var pend uint32
	if m.gpie&gpieMSIXMode != 0 {
		pend = m.eicr & m.eims & (1 << v)
	} else {
		pend = m.eicr & m.eims
	}
	if pend != 0 {
		m.lastFire[v] = time.Now()
		m.sendLocked(v, pend)
	}
}

// sendLocked signals vector v and applies auto-clear and auto-mask.
func (m *Model) sendLocked(v int, causes uint32) {
	if m.dev.Signal(v) {
		m.cnt.IRQs++
	} else {
		m.faults.Add("msix", fmt.Sprintf("vector %d", v), uint64(v),
			"interrupt enabled in EIMS on MSI-X vector %d, which EnableMSIX did not set up (%d vectors enabled)", v, m.dev.VectorsEnabled())
	}
	m.eicr &^= m.eiac & causes
	if m.gpie&gpieEIAME != 0 {
		m.eims &^= m.eiam & causes
	}
}
