package fec

import (
	"fmt"
	"time"
)

// RX interrupt coalescing (i.MX8M reference manual, ENET "Interrupt
// coalescing", ENET_RXICn at 0x100 + 4n): with ICEN set, ring n's RXF event
// waits until ICFT frames have arrived or ICTT periods of 64 clock cycles
// have passed since the first of them. The driver sets ICCS, as Linux does
// (fec_enet_itr_coal_set), so the period counts the ENET system clock, whose
// rate Linux reads from clk_ahb. Only the multi-queue ENETs have the
// registers (QuirkCoalesce).

const (
	icEN      uint32 = 1 << 31
	icCS      uint32 = 1 << 30
	icFTShift        = 20
	icFTMask  uint32 = 0xFF << icFTShift
	icTTMask  uint32 = 0xFFFF
)

// DefaultSystemClockHz is the ENET system (ahb) clock of imx8mp.dtsi: the
// FEC's "ahb" clock IMX8MP_CLK_SIM_ENET_ROOT, below ENET_AXI from
// SYS_PLL1_266M. Check the board's clock tree (clk_summary).
const DefaultSystemClockHz = 266_000_000

// DefaultCoalesceFrames is the frame threshold used when Config.RxCoalesce
// is set without RxCoalesceFrames: Linux's FEC_ITR_ICFT_DEFAULT.
const DefaultCoalesceFrames = 200

// CoalesceValue is the RXICn (or TXICn) value that holds a ring's frame
// event for up to d or frames frames, d counted in 64-cycle periods of the
// system clock at hz. d zero gives 0 (coalescing off).
func CoalesceValue(d time.Duration, frames int, hz uint64) (uint32, error) {
	if d == 0 {
		return 0, nil
	}
	if hz == 0 {
		hz = DefaultSystemClockHz
	}
	if frames < 1 || frames > 255 {
		return 0, fmt.Errorf("fec: coalescing after %d frames: want 1 to 255", frames)
	}
	// Rounded up, so that a short interval still holds the event.
	periods := (uint64(d.Nanoseconds())*hz + 64e9 - 1) / 64e9
	if d < 0 || periods > uint64(icTTMask) {
		return 0, fmt.Errorf("fec: coalescing interval %v: want 0 to %v at a %d Hz system clock",
			d, MaxCoalesce(hz), hz)
	}
	return icEN | icCS | uint32(frames)<<icFTShift | uint32(periods), nil
}

// MaxCoalesce is the longest interval ICTT holds at a system clock of hz.
func MaxCoalesce(hz uint64) time.Duration {
	if hz == 0 {
		hz = DefaultSystemClockHz
	}
	return time.Duration(uint64(icTTMask) * 64e9 / hz)
}

// CoalesceSetting decodes an RXICn/TXICn value: the interval (0: off) and
// the frame threshold. A value without ICCS counts the transmit clock,
// whose rate depends on the link; it is decoded at the gigabit 125 MHz.
func CoalesceSetting(v uint32, hz uint64) (time.Duration, int) {
	if v&icEN == 0 {
		return 0, 0
	}
	if hz == 0 {
		hz = DefaultSystemClockHz
	}
	if v&icCS == 0 {
		hz = 125_000_000
	}
	return time.Duration(uint64(v&icTTMask) * 64e9 / hz), int(v & icFTMask >> icFTShift)
}

// rxicValue is the RXICn value Config asks for.
func (c Config) rxicValue() (uint32, error) {
	frames := c.RxCoalesceFrames
	if frames == 0 {
		frames = DefaultCoalesceFrames
	}
	return CoalesceValue(c.RxCoalesce, frames, c.SystemClockHz)
}

// setupCoalesce writes every ring's RXICn (with the MAC not yet enabled).
func (p *Port) setupCoalesce() error {
	v, err := p.cfg.rxicValue()
	if err != nil || p.variant.Quirks&QuirkCoalesce == 0 {
		return err
	}
	for q := 0; q < p.variant.Queues; q++ {
		p.w32(regRXIC0+reg(4*q), v)
	}
	return nil
}

// SetRxCoalesce changes RX interrupt coalescing on every ring while the
// port runs, as ethtool -C rx-usecs/rx-frames does through
// fec_enet_set_coalesce (d zero: off; frames zero: DefaultCoalesceFrames).
func (p *Port) SetRxCoalesce(d time.Duration, frames int) error {
	if p.variant.Quirks&QuirkCoalesce == 0 {
		return fmt.Errorf("fec: the %s has no interrupt coalescing", p.variant.Name)
	}
	if frames == 0 {
		frames = DefaultCoalesceFrames
	}
	v, err := CoalesceValue(d, frames, p.cfg.SystemClockHz)
	if err != nil {
		return err
	}
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	for q := 0; q < p.variant.Queues; q++ {
		p.w32(regRXIC0+reg(4*q), v)
	}
	return nil
}
