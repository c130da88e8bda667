package dwmacsim

import (
	"time"
)

// The RX interrupt watchdog (databook DMA_CH(#i)_Rx_Interrupt_Watchdog_Timer,
// 0x1138 + 0x80*i; the same text is in the reference manuals of SoCs built
// on the core, e.g. STM32H5 ETH_DMACRXIWTR). RWT (bits 7:0) counts units of
// 256 << RWTU (bits 17:16) system clock cycles; RWTU exists from 5.00 on and
// its bits are reserved before (Linux writes them only on the XGMAC,
// DEF_DMA_RWTU). The watchdog is triggered with the programmed value when the
// RX DMA completes a frame whose last descriptor did not set RI, that is had
// RDES3.IOC (bit 30) clear; each such frame restarts it. When it runs out RI
// sets (and the channel's interrupt fires if RIE is enabled) and it stops. RI
// set by a frame with IOC stops it too. RWT 0: no watchdog.
//
// Faults: reserved bits written; RWTU on a 4.xx core; and a frame completed
// without IOC while RWT is 0, RIE is enabled and no descriptor the DMA still
// owns asks for IOC: nothing can ever set RI for it, and a driver waiting on
// the interrupt waits forever. Linux never does that: stmmac_rx_refill clears
// IOC only with use_riwt, whose RIWT is DEF_DMA_RIWT (0xa0) from open and at
// least MIN_DMA_RIWT (0x10) from ethtool.
//
// Like igbsim's EITR, the interval is host time whatever sim.Sched's mode: it
// is a delay the driver asked for, not device work.

// riwtImplemented are the bits of RIWT on a 5.x core.
const riwtImplemented = wdtRWTMask | 3<<wdtRWTUSh

// defaultSystemClock is the clock the watchdog counts when Config leaves it:
// what Linux converts with (stmmac_clk): a fixed 200 MHz on Intel mGbE
// (dwmac-intel.c registers it at clk_ptp_rate), the "stmmaceth" clock
// IMX8MP_CLK_ENET_QOS_ROOT on the i.MX8M Plus, under ENET_AXI from
// SYS_PLL1_266M (imx8mp.dtsi).
func defaultSystemClock(v Variant) int {
	if v == IMX8MP {
		return 266_000_000
	}
	return 200_000_000
}

// writeRxWdtLocked stores channel c's RIWT. A new value takes effect at the
// next trigger; a running watchdog keeps the interval it was loaded with.
func (m *Model) writeRxWdtLocked(c int, off, val uint32) {
	implemented := riwtImplemented
	if m.cfg.SNPSVER < 0x50 {
		implemented = wdtRWTMask
	}
	if bad := val &^ implemented; bad != 0 {
		what := "reserved bits"
		if bad&^riwtImplemented == 0 {
			what = "RWTU, which cores before 5.00 do not have (their unit is 256 cycles)"
		}
		m.faults.Add("write32", regName(off), uint64(off), "RX watchdog of channel %d written 0x%08x: sets %s (0x%x)", c, val, what, bad)
		val &= implemented
	}
	m.ch[c].rxWdt = val
}

// watchdogPeriodLocked is the interval channel c's RIWT programs (0: none).
func (m *Model) watchdogPeriodLocked(c int) time.Duration {
	v := m.ch[c].rxWdt
	cycles := int64(v&wdtRWTMask) << 8 << (v >> wdtRWTUSh & 3)
	return time.Duration(cycles * int64(time.Second) / int64(m.cfg.SystemClockHz))
}

// rxCompleteLocked signals a frame channel c's RX DMA wrote back: RI at once
// with IOC (stopping the watchdog), else the watchdog (re)started.
func (m *Model) rxCompleteLocked(c int, ioc bool) {
	ch := &m.ch[c]
	if ioc {
		if ch.wdtArmed {
			ch.wdtArmed = false
			ch.wdt.Stop()
		}
		m.raiseLocked(c, stRI)
		return
	}
	d := m.watchdogPeriodLocked(c)
	if d == 0 {
		m.checkNoInterruptLocked(c)
		return
	}
	ch.wdtArmed = true
	ch.wdtDeadline = time.Now().Add(d)
	ch.wdt.Reset(d)
}

// checkNoInterruptLocked faults a frame that nothing will ever signal: no
// IOC, no watchdog, RIE enabled and no later descriptor of the DMA's with IOC.
func (m *Model) checkNoInterruptLocked(c int) {
	ch := &m.ch[c]
	if ch.intEn&stRI == 0 || m.rxIOCAheadLocked(&ch.rx) {
		return
	}
	off := regDMAChBase + uint32(c)*dmaChStride + chRxWdt
	m.faults.Add("rx", regName(off), uint64(off),
		"channel %d received a frame without IOC while RWT is 0 and RIE is enabled, and no descriptor the DMA owns asks for IOC: "+
			"RI can never set for it (program the RX watchdog before clearing IOC)", c)
}

// rxIOCAheadLocked reports whether a descriptor the DMA owns, from cur up to
// the tail, has IOC.
func (m *Model) rxIOCAheadLocked(r *ring) bool {
	base := m.ringBase(r)
	idx := r.cur
	for k := uint32(0); k < r.n(); k++ {
		if idx == r.tailRaw {
			return false
		}
		d, err := m.mem.View("rx-desc", base+uint64(idx)*descSize, descSize)
		if err != nil {
			return false
		}
		d3 := loadDES3(d)
		if d3&d3OWN == 0 {
			return false
		}
		if d3&rd3IOC != 0 {
			return true
		}
		idx = (idx + 1) % r.n()
	}
	return false
}

// watchdogExpired runs on the timer's goroutine. A frame that restarted the
// watchdog after the timer fired leaves a later deadline: wait for it.
func (m *Model) watchdogExpired(c int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := &m.ch[c]
	if !ch.wdtArmed || m.closed {
		return
	}
	if left := time.Until(ch.wdtDeadline); left > 0 {
		ch.wdt.Reset(left)
		return
	}
	ch.wdtArmed = false
	m.raiseLocked(c, stRI)
}
