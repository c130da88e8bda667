package nic

import "sync"

// CounterTotals accumulates a device's hardware counters into 64-bit totals:
// counters that clear on read, or 32-bit counters whose increments the driver
// works out. The driver reads the registers (the function it passes to
// Collect); CounterTotals holds the totals under its lock, stops taking
// readings once the device is closed or gone (Stop), and lists them. The zero
// value is ready; it is safe for concurrent use.
type CounterTotals struct {
	mu      sync.Mutex
	total   []uint64 // guarded by mu; nil until the first Collect
	stopped bool     // guarded by mu: the device is gone, keep the totals
}

// Collect calls read with the n totals (zero at the first call), under the
// lock, for it to add what the hardware counted since the last reading. After
// Stop it does nothing. read may keep its own reading state (previous raw
// values, say): Collect's lock guards that too.
func (c *CounterTotals) Collect(n int, read func(total []uint64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total == nil {
		c.total = make([]uint64, n)
	}
	if !c.stopped {
		read(c.total)
	}
}

// Stop makes later Collect calls do nothing; the totals stay.
func (c *CounterTotals) Stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// Append appends n counters, the i-th named name(i) and valued with total i (0
// before the first Collect), and returns the extended slice.
func (c *CounterTotals) Append(out []Counter, n int, name func(i int) string) []Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < n; i++ {
		var v uint64
		if i < len(c.total) {
			v = c.total[i]
		}
		out = append(out, Counter{Name: name(i), Value: v})
	}
	return out
}
