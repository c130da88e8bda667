//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// bpf_ktime_get_ns without Go: native code (jit_amd64_time.go,
// jit_arm64_time.go) reads the CPU's constant-rate counter (amd64: the
// time-stamp counter with RDTSC; arm64: the generic timer's virtual count
// CNTVCT_EL0) and turns it into CLOCK_MONOTONIC nanoseconds with a line
// Go draws from clock_gettime (the runtime's nanotime, the vDSO's
// CLOCK_MONOTONIC): ns = line.ns + (count - line.base) * line.mult >> 32,
// valid for counts in [base, base+limit). A count outside goes to the slow
// path, where Go draws the next line (ktimeCounter). Go's own
// bpf_ktime_get_ns reads the same lines, so the interpreter and native code
// give one clock.
//
// Time never goes back: a line starts where the last one ended or later
// (its ns at base is at least the last line's value at its limit, and at
// least clock_gettime then), and no count before a line's base or past
// its limit uses it. The error against clock_gettime: a sample (count,
// clock) is within counterJitter/2 (1 us) of the truth; the slope, measured
// from the first sample over an ever longer baseline, errs by at most two
// samples' uncertainty over the baseline, and a line lasts at most a
// sixteenth of the baseline (and counterSpan), so the slope adds at most
// counterJitter/16; NTP's slewing of CLOCK_MONOTONIC (at most 500 ppm, a
// rate the slope follows only on average) adds at most 5 us over a 10 ms
// line. A line that starts ahead (the last one ran fast) runs slower to
// lose it over its span. So the clock stays within about 7 us of
// clock_gettime; ktimeErrBound states 20. A line that drifted more than a
// quarter of that over its length (the counter's rate changed: a VM moved
// to another host, or NTP slews hard) restarts the rate's measurement
// (lineDrifted); Go reads clock_gettime until a line is drawn again, never
// below the last line's end. counterErr records the largest
// difference found at a refresh: TestKtimeCounterBound asserts it and the
// bound.
//
// A VM's stops. Steal (the host runs a vCPU late) moves the counter and
// the clock alike: nothing to correct. A pause, a migration or a restore
// from a snapshot may move them apart on a guest that keeps time with
// kvm-clock (ktime_counter_tsc_amd64.go): the host sets the guest's TSC and
// its pvclock separately (QEMU, for one, may restore kvm-clock to where it
// stopped while the TSC ran on). A count still on the line then reads the
// line, off by the jump (ahead by at most the line's rest when the counter
// moved and the clock did not; behind when the clock moved and the counter
// did not), for at most a line: once the count is past the limit, Go finds
// the drift and measures the rate again, reading clock_gettime meanwhile,
// never below the line's end (when ahead, the clock stands still until
// clock_gettime catches up, at most a line). A count behind the line's
// start by more than counterCalMax (the counter went back) withdraws the
// line and measures the rate again too (lineDrop); Go reads clock_gettime
// meanwhile, never below what the line gave, which the bound caps at the
// clock plus ktimeErrBound (not the line's end, the counter not having
// reached it). A new host's TSC at
// another rate (a migration without TSC scaling) errs by the rates'
// difference over at most a line before lineDrifted finds it.
//
// The line is a seqlock: Go makes seq odd, writes the fields, makes it
// even (atomic stores: on arm64 STLR, each ordered after the one before);
// native code reads seq, the fields and seq again (arm64: LDAR, then
// DMB ISHLD before the second read) and takes the slow path when seq was
// odd or moved.
type counterLine struct {
	seq   atomic.Uint64
	base  atomic.Uint64 // the count the line starts at
	ns    atomic.Uint64 // CLOCK_MONOTONIC ns at base
	mult  atomic.Uint64 // ns per count, times 2^32
	limit atomic.Uint64 // counts past base the line holds for (0: none)
}

const (
	// counterSpan is how long a line holds.
	counterSpan = 10 * time.Millisecond
	// counterJitter is the longest a (count, clock) pair may take to
	// read; a slower one (the thread was preempted) is read again.
	counterJitter = 2 * time.Microsecond
	// counterWarm is how long after the first sample the rate is first
	// computed (the slope's error falls as the baseline grows).
	counterWarm = time.Millisecond
	// counterCalMax is the farthest a calibration pair may be from its
	// line (ktime_counter_tsc_amd64.go), and so a CPU's counter from
	// another's: the drift over a line that makes lineDrifted measure the
	// rate again, so a counter that fails it would be measured again at
	// every line.
	counterCalMax = ktimeErrBound / 4
)

var (
	ktLine counterLine
	ktMu   sync.Mutex // Go's refreshes
	// ktCal is the first (count, ns) sample: the slope is measured from
	// it, over an ever longer baseline. Guarded by ktMu.
	ktCal struct{ count, ns uint64 }
	// ktAhead is how far the current line started ahead of the clock.
	// Guarded by ktMu.
	ktAhead int64
	// ktFloor is the largest value any line could have given (its value at
	// its limit), or clock_gettime when no line is drawn: what Go answers
	// without a line is never below it.
	ktFloor atomic.Uint64
	// counterErr is the largest |line - clock_gettime| seen at a refresh,
	// in ns (for tests and doc.go's bound).
	counterErr atomic.Int64
	// counterRecal counts the times the rate was measured again.
	counterRecal atomic.Int64
)

// counterUsable says the counter runs at a constant rate, through idle
// states, in step on every CPU: checked once (counterOK, per
// architecture).
var counterUsable = sync.OnceValue(counterOK)

// ktimeCounter is bpf_ktime_get_ns from the counter's line, drawing the
// next line when the count is past it; ok is false when the counter is
// not usable (the caller reads clock_gettime).
func ktimeCounter() (uint64, bool) {
	if !counterUsable() {
		return 0, false
	}
	if v, ok := lineRead(); ok {
		return v, true
	}
	ktMu.Lock()
	defer ktMu.Unlock()
	if v, ok := lineRead(); ok {
		return v, true
	}
	if ktLine.limit.Load() != 0 {
		if c, base := readCounter(), ktLine.base.Load(); c < base {
			if base-c <= uint64(counterCalMax)<<32/ktLine.mult.Load() {
				// A count a little behind the line's start (another
				// CPU's counter, apart by less than the calibration or
				// the kernel's TSC check allows): its start.
				return ktLine.ns.Load(), true
			}
			// The counter went back (a VM restored from a snapshot):
			// the line no longer says where the clock is. It gave at
			// most the clock and the bound, not its end: the floor
			// comes down to that.
			lineDrop()
			ktFloor.Store(min(ktFloor.Load(), uint64(nanotime())+uint64(ktimeErrBound)))
		}
	}
	lineRefresh()
	if v, ok := lineRead(); ok {
		return v, true
	}
	// No line (warming up, or the pair could not be read quickly): the
	// clock itself, never below what a line gave.
	return max(uint64(nanotime()), ktFloor.Load()), true
}

// lineRead is what native code computes.
func lineRead() (uint64, bool) {
	s := ktLine.seq.Load()
	if s&1 != 0 {
		return 0, false
	}
	base, ns, mult, limit := ktLine.base.Load(), ktLine.ns.Load(), ktLine.mult.Load(), ktLine.limit.Load()
	d := readCounter() - base
	if d >= limit || ktLine.seq.Load() != s {
		return 0, false
	}
	return ns + d*mult>>32, true
}

// samplePair reads the counter between two reads of clock_gettime: the
// count and the clock's middle, within counterJitter/2 of the clock at the
// count; ok is false when the reads kept taking longer (preempted).
func samplePair() (count, ns uint64, ok bool) {
	for range 5 {
		t0 := nanotime()
		c := readCounter()
		t1 := nanotime()
		if t1 >= t0 && t1-t0 <= int64(counterJitter) {
			return c, uint64(t0 + (t1-t0)/2), true
		}
	}
	return 0, 0, false
}

// lineRefresh draws the next line (ktMu held).
func lineRefresh() {
	oldMult := ktLine.mult.Load()
	c, t, ok := samplePair()
	if !ok {
		return
	}
	if ktCal.count == 0 || c <= ktCal.count {
		ktCal.count, ktCal.ns = c, t
		ktFloor.Store(max(ktFloor.Load(), t))
		return
	}
	if t-ktCal.ns < uint64(counterWarm) {
		ktFloor.Store(max(ktFloor.Load(), t))
		return
	}
	// mult = (t - cal.ns) * 2^32 / (c - cal.count), if it fits.
	hi, lo := bits.Mul64(t-ktCal.ns, 1<<32)
	dc := c - ktCal.count
	if hi >= dc {
		return
	}
	mult, _ := bits.Div64(hi, lo, dc)
	if mult == 0 {
		return
	}
	// The line starts at c, at the clock or at the last line's end,
	// whichever is later; when ahead by d it runs slower, to lose d over
	// the span (at most half the rate).
	ns := max(t, ktFloor.Load())
	if oldMult != 0 && lineDrifted(c, t) {
		// The counter's rate changed (a VM moved to another host): the
		// slope is measured again from here; until then Go reads
		// clock_gettime, never below the last line's end. The line is
		// withdrawn, or the next refresh would find the same drift
		// against it and never draw one again.
		lineDrop()
		ktCal.count, ktCal.ns = c, t
		ktFloor.Store(max(ktFloor.Load(), t))
		return
	}
	// The span: at most a sixteenth of the baseline, so that the slope's
	// error (two samples' uncertainty over the baseline) costs at most
	// counterJitter/16 over a line.
	span := min(uint64(counterSpan), (t-ktCal.ns)/16)
	if ahead := ns - t; ahead > 0 {
		adj := max(span-ahead, span/2)
		hi, lo := bits.Mul64(mult, adj)
		mult, _ = bits.Div64(hi, lo, span)
	}
	// limit: the span in counts, and no product past 64 bits.
	limit := span << 32 / mult
	limit = min(limit, math.MaxUint64/mult)
	end := ns + limit*mult>>32
	ktAhead = int64(ns - t)
	ktLine.seq.Add(1)
	ktLine.base.Store(c)
	ktLine.ns.Store(ns)
	ktLine.mult.Store(mult)
	ktLine.limit.Store(limit)
	ktLine.seq.Add(1)
	ktFloor.Store(max(ktFloor.Load(), end))
}

// lineDrop withdraws the line and restarts the rate's measurement: until
// a line is drawn again every read goes to Go, which reads clock_gettime,
// never below the withdrawn line's end (ktFloor). ktMu is held.
func lineDrop() {
	ktLine.seq.Add(1)
	ktLine.limit.Store(0)
	ktLine.seq.Add(1)
	ktCal.count = 0
	counterRecal.Add(1)
}

// lineDrifted records how far the current line, extended to count c, is
// from the clock t (counterErr, when c is within two lines of its start)
// and reports whether it gained or lost more than a quarter of
// ktimeErrBound over a line's length, beyond the lead it was drawn to lose
// (ktAhead, lost evenly over the line). ktMu is held.
func lineDrifted(c, t uint64) bool {
	base, limit := ktLine.base.Load(), ktLine.limit.Load()
	if c <= base || limit == 0 {
		return false
	}
	off := int64(lineAt(c) - t)
	if e := abs64(off); e > counterErr.Load() && c-base < 2*limit {
		counterErr.Store(e)
	}
	d, l := float64(c-base), float64(limit)
	drift := (float64(off) - float64(ktAhead)*(1-d/l)) * l / d
	return math.Abs(drift) > float64(counterCalMax)
}

// lineAt is the current line's value at count c, extended past its limit.
func lineAt(c uint64) uint64 {
	return ktLine.ns.Load() + (c-ktLine.base.Load())*ktLine.mult.Load()>>32
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
