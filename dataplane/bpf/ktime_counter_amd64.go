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
// is invariant (the kernel's constant_tsc and nonstop_tsc flags: a
// constant rate, not stopped in deep idle states; Intel SDM vol. 3B
// 18.17.1) and the kernel itself keeps time with it (clocksource "tsc":
// the kernel found it synchronized across CPUs and stable; it switches
// away from an unstable one, and a VM without a usable TSC uses kvm-clock
// or hpet). Otherwise bpf_ktime_get_ns exits to Go as before.
func counterOK() bool {
	src, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil || strings.TrimSpace(string(src)) != "tsc" {
		return false
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(info), "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		f := " " + line + " "
		return strings.Contains(f, " constant_tsc ") && strings.Contains(f, " nonstop_tsc ")
	}
	return false
}
