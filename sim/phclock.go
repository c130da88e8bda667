package sim

import (
	"math/bits"
	"time"
)

// PHClock is the time base of a model's IEEE 1588 clock: it runs with the
// host's monotonic clock, faster or slower by a rate the device's frequency
// register sets, and can be set. A model keeps its register formats (seconds
// and nanoseconds, increments per period) and converts to and from the
// nanosecond count kept here.
//
// It is not safe for concurrent use: the model's register lock guards it.
type PHClock struct {
	anchor time.Time // host time when at was the clock's value
	at     int64     // clock value in ns at anchor
	rate   int64     // extra clock time per ns of host time, in 2^-40 ns (signed)
	now    func() time.Time
}

// PHClockRateShift is the binary point of SetRate's argument: a rate of
// 1<<PHClockRateShift would run the clock twice as fast as the host.
const PHClockRateShift = 40

// NewPHClock returns a clock at 0 that runs at the host's rate.
func NewPHClock() *PHClock {
	c := &PHClock{now: time.Now}
	c.anchor = c.now()
	return c
}

// Now is the clock's value in nanoseconds.
func (c *PHClock) Now() int64 {
	return c.valueAt(c.now())
}

func (c *PHClock) valueAt(t time.Time) int64 {
	el := t.Sub(c.anchor)
	if el < 0 {
		el = 0
	}
	v := c.at + int64(el)
	if c.rate == 0 {
		return v
	}
	r := c.rate
	if r < 0 {
		r = -r
	}
	hi, lo := bits.Mul64(uint64(el), uint64(r))
	extra := int64(hi<<(64-PHClockRateShift) | lo>>PHClockRateShift)
	if c.rate < 0 {
		return v - extra
	}
	return v + extra
}

// Set sets the clock to ns.
func (c *PHClock) Set(ns int64) {
	c.anchor = c.now()
	c.at = ns
}

// SetRate makes the clock run rate*2^-40 ns fast (negative: slow) per ns of
// host time from now on.
func (c *PHClock) SetRate(rate int64) {
	t := c.now()
	c.at = c.valueAt(t)
	c.anchor = t
	c.rate = rate
}

// Rate is the rate SetRate last set.
func (c *PHClock) Rate() int64 { return c.rate }

// MeasureRate estimates how fast a clock runs against the host's: it reads
// it twice, window apart, each read bracketed by host time, and divides the
// clock's advance by the host time between the brackets' midpoints. Of three
// tries it keeps the one with the narrowest brackets, so a test on a loaded
// machine is not misled by a read that was preempted. read returns the
// clock's advance from its first call (callers unwrap counters that wrap).
func MeasureRate(read func() int64, window time.Duration) float64 {
	best, bestW := 0.0, time.Duration(1<<62)
	for i := 0; i < 3; i++ {
		a := time.Now()
		c0 := read()
		b := time.Now()
		time.Sleep(window)
		d := time.Now()
		c1 := read()
		e := time.Now()
		if w := b.Sub(a) + e.Sub(d); w < bestW {
			host := d.Add(e.Sub(d) / 2).Sub(a.Add(b.Sub(a) / 2))
			best, bestW = float64(c1-c0)/float64(host), w
		}
	}
	return best
}
