//go:build linux && amd64

package bpf

import (
	"os"
	"strings"
)

// readCounter is LFENCE; RDTSC (ktime_counter_amd64.s): the time-stamp
// counter, read after the loads before it (the kernel's rdtsc_ordered).
//
//go:noescape
func readCounter() uint64

// counterOK: the time-stamp counter is usable for CLOCK_MONOTONIC when it
// is invariant and the kernel keeps time with it, or, on a kvm-clock
// guest, it measured within counterCalMax of clock_gettime on every CPU
// (tscSound, ktime_counter_tsc_amd64.go). Otherwise bpf_ktime_get_ns exits
// to Go as before.
func counterOK() bool {
	src, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil {
		return false
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	return tscSound(strings.TrimSpace(string(src)), cpuFlags(info), counterCalibrate)
}
