package bpf

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The clocks of the time helpers, as the kernel defines them
// (kernel/bpf/helpers.c):
//
//   - bpf_ktime_get_ns (5): CLOCK_MONOTONIC, nanoseconds since boot not
//     counting suspend; the numbers of clock_gettime(CLOCK_MONOTONIC) in
//     user space, read from the Go runtime's clock (the vDSO's), or where
//     the CPU's counter is usable from a line drawn from that clock
//     (ktime_counter.go), within ktimeErrBound of it, never going back:
//     the kernel's ktime_get_mono_fast_ns, which bpf_ktime_get_ns reads,
//     is itself a counter read scaled by a multiplier and shift.
//   - bpf_ktime_get_coarse_ns (160): CLOCK_MONOTONIC_COARSE in the kernel,
//     the monotonic clock as of the last tick. xnic returns the precise
//     monotonic time (as bpf_ktime_get_ns), which is at most a tick
//     (1-10 ms) above the coarse clock and never more than ktimeErrBound
//     below it: a cheaper clock is not cheaper here.
//   - bpf_ktime_get_boot_ns (125): CLOCK_BOOTTIME, monotonic plus the time
//     spent suspended: the monotonic time plus an offset read with
//     clock_gettime(CLOCK_BOOTTIME) at most once a second (suspend only
//     grows it; the offset never decreases, so the clock never goes back).
//   - bpf_ktime_get_tai_ns (208): CLOCK_TAI, the wall clock plus the kernel's
//     TAI offset (set by NTP daemons, 0 when none did), read with
//     clock_gettime once a second and rounded to whole seconds.

// ktimeErrBound is how far bpf_ktime_get_ns (and _coarse_ns) may be from
// clock_gettime(CLOCK_MONOTONIC) read at the same moment where it comes
// from the CPU counter's line (ktime_counter.go); elsewhere it is 0 off.
const ktimeErrBound = 20 * time.Microsecond

// clockRefresh is how often the offsets of the derived clocks are re-read.
const clockRefresh = int64(time.Second)

var (
	bootOff, bootNext atomic.Int64
	taiOff, taiNext   atomic.Int64
)

// ktimeMono is CLOCK_MONOTONIC in nanoseconds: from the CPU counter's
// line where native code reads it too (ktime_counter.go), so that both
// engines give one clock; else clock_gettime.
func ktimeMono() uint64 {
	if v, ok := ktimeCounter(); ok {
		return v
	}
	return uint64(nanotime())
}

// ktimeBoot is CLOCK_BOOTTIME in nanoseconds.
func ktimeBoot() uint64 {
	now := nanotime()
	if now >= bootNext.Load() {
		refreshBootOffset(now)
	}
	return uint64(now + bootOff.Load())
}

func refreshBootOffset(now int64) {
	bootNext.Store(now + clockRefresh)
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return // keep the last offset (0: the monotonic clock)
	}
	// The boot clock was read before after: boot - after is at most the
	// true offset.
	off := ts.Nano() - nanotime()
	for {
		old := bootOff.Load()
		if off <= old || bootOff.CompareAndSwap(old, off) {
			return
		}
	}
}

// ktimeTai is CLOCK_TAI in nanoseconds.
func ktimeTai() uint64 {
	now := nanotime()
	if now >= taiNext.Load() {
		refreshTaiOffset(now)
	}
	return uint64(time.Now().UnixNano() + taiOff.Load())
}

func refreshTaiOffset(now int64) {
	taiNext.Store(now + clockRefresh)
	var tai unix.Timespec
	if unix.ClockGettime(unix.CLOCK_TAI, &tai) != nil {
		return
	}
	d := tai.Nano() - time.Now().UnixNano()
	// Whole seconds: the kernel's TAI offset is an integer number of them.
	secs := (d + int64(time.Second)/2) / int64(time.Second)
	if d < 0 {
		secs = (d - int64(time.Second)/2) / int64(time.Second)
	}
	taiOff.Store(secs * int64(time.Second))
}
