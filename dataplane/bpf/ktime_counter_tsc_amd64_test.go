//go:build linux

package bpf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests of the decision whether the time-stamp counter carries the
// counter line, and of the calibration a kvm-clock guest needs
// (ktime_counter_tsc_amd64.go).

// TestTSCSound decides from given clocksources, flags and measured errors,
// and checks the calibration runs only where its answer is needed.
func TestTSCSound(t *testing.T) {
	inv := []string{"tsc", "constant_tsc", "rep_good", "tsc_reliable", "nonstop_tsc", "tsc_known_freq"}
	for _, tc := range []struct {
		src     string
		flags   []string
		err     time.Duration
		want    bool
		measure bool // the calibration is needed
	}{
		{"tsc", inv, -1, true, false},
		{"tsc", []string{"constant_tsc"}, 0, false, false},
		{"tsc", []string{"nonstop_tsc"}, 0, false, false},
		{"tsc", []string{"constant_tsc_x", "nonstop_tsc"}, 0, false, false},
		{"kvm-clock", inv, 100 * time.Nanosecond, true, true},
		{"kvm-clock", inv, 0, true, true},
		{"kvm-clock", inv, counterCalMax, true, true},
		{"kvm-clock", inv, counterCalMax + 1, false, true},
		{"kvm-clock", inv, time.Millisecond, false, true},
		{"kvm-clock", inv, -1, false, true}, // pairs not read on every CPU
		{"kvm-clock", []string{"constant_tsc", "tsc_reliable"}, 0, false, false},
		{"kvm-clock", nil, 0, false, false},
		{"hpet", inv, 0, false, false},
		{"acpi_pm", inv, 0, false, false},
		{"xen", inv, 0, false, false},
		{"", inv, 0, false, false},
	} {
		called := false
		got := tscSound(tc.src, tc.flags, func() time.Duration { called = true; return tc.err })
		if got != tc.want || called != tc.measure {
			t.Errorf("%q %v measured %v: sound %v, calibrated %v; want %v, %v", tc.src, tc.flags, tc.err, got, called, tc.want, tc.measure)
		}
	}
}

func TestCPUFlags(t *testing.T) {
	info := "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nbugs\t\t: sysret_ss_attrs\n\n" +
		"processor\t: 1\nflags\t\t: fpu\n"
	got := cpuFlags([]byte(info))
	if strings.Join(got, " ") != "fpu tsc constant_tsc nonstop_tsc" {
		t.Fatalf("flags %q", got)
	}
	if f := cpuFlags([]byte("processor\t: 0\nvmx flags\t: ept\n")); f != nil {
		t.Fatalf("flags %q from a file without a flags line", f)
	}
}

// TestLineResidual measures synthetic pairs from two CPUs, read in turn,
// whose counters are apart, and a clock that steps.
func TestLineResidual(t *testing.T) {
	// 2 counts a ns; CPU 1 reads skew counts off CPU 0 (the first and last
	// pairs are CPU 0's).
	pairs := func(skew int64, step uint64) []calPair {
		var ps []calPair
		for i := range 41 {
			c := uint64(1e12 + i*20000)
			ns := 5e9 + c/2
			if i >= 20 {
				ns += step
			}
			ps = append(ps, calPair{uint64(int64(c) + int64(i%2)*skew), ns})
		}
		return ps
	}
	for _, tc := range []struct {
		skew     int64
		step     uint64
		min, max time.Duration
	}{
		{0, 0, 0, 1},
		{20000, 0, 10 * time.Microsecond, 10*time.Microsecond + 1},  // ahead
		{-20000, 0, 10 * time.Microsecond, 10*time.Microsecond + 1}, // behind: a count below the first's
		{-1e6, 0, 500 * time.Microsecond, 500*time.Microsecond + 1}, // far behind
		{0, 8000, 3800 * time.Nanosecond, 4200 * time.Nanosecond},   // a step midway
	} {
		if got := lineResidual(pairs(tc.skew, tc.step)); got < tc.min || got > tc.max {
			t.Errorf("skew %d step %d: residual %v, want [%v, %v]", tc.skew, tc.step, got, tc.min, tc.max)
		}
	}
	if got := lineResidual([]calPair{{10, 10}}); got != -1 {
		t.Errorf("one pair: %v, want -1", got)
	}
	if got := lineResidual([]calPair{{10, 10}, {20, 30}, {10, 50}}); got != -1 {
		t.Errorf("a counter that did not advance: %v, want -1", got)
	}
}

// TestPinThread moves a thread to every CPU the calibration visits and
// reads back, from /proc, where it runs.
func TestPinThread(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // not unlocked: the pinned thread ends with this goroutine
		cpus := allowedCPUs()
		if len(cpus) == 0 {
			t.Error("no CPU to pin to")
			return
		}
		for _, cpu := range cpus {
			if !pinThread(cpu) {
				t.Errorf("pin to CPU %d refused", cpu)
				continue
			}
			if on, err := threadOnCPU(); err != nil || on != cpu {
				t.Errorf("pinned to CPU %d, runs on %d (%v)", cpu, on, err)
			}
		}
		t.Logf("CPUs %v", cpus)
	}()
	<-done
}

// threadOnCPU is the CPU the calling thread last ran on: field 39 of
// /proc/thread-self/stat (proc(5)), the 37th after the command's ')'.
func threadOnCPU() (int, error) {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return -1, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 37 {
		return -1, fmt.Errorf("stat %q: too few fields", s)
	}
	return strconv.Atoi(f[36])
}

// TestCounterCalibrateHere calibrates on this machine: on a kvm-clock
// guest whose TSC is invariant, the measured error is within
// counterCalMax and the counter is used (the native time helpers are then
// compiled: TestJITKtimeNative).
func TestCounterCalibrateHere(t *testing.T) {
	src, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil {
		t.Skip(err)
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	name, flags := strings.TrimSpace(string(src)), cpuFlags(info)
	e := counterCalibrate()
	t.Logf("clocksource %s, calibration error %v (limit %v), counter used: %v", name, e, counterCalMax, counterUsable())
	if name != "kvm-clock" || !tscSound("tsc", flags, nil) {
		t.Skipf("not a kvm-clock guest with an invariant TSC")
	}
	if e < 0 || e > counterCalMax {
		t.Errorf("calibration error %v: over %v", e, counterCalMax)
	}
	if !counterUsable() {
		t.Errorf("the counter is not used on a kvm-clock guest with an invariant TSC")
	}
}

// TestCounterNoWarp runs the warp check on this machine's CPUs, on
// counters made to warp, and on two threads that share one CPU (they
// never run at once, so the check proves nothing).
func TestCounterNoWarp(t *testing.T) {
	var cpus []int
	onThread(func() { cpus = allowedCPUs() })
	if len(cpus) < 2 {
		t.Skip("one CPU")
	}
	own := func(int) uint64 { return readCounter() }
	warped, seen := warpCheck(cpus, own)
	ok := counterNoWarp(cpus, own)
	t.Logf("CPUs %v: warped %v, others' counts seen %v; no warp %v", cpus, warped, seen, ok)
	if counterUsable() && !ok {
		t.Error("the counter is used but its CPUs' counters warp")
	}
	// CPU i's counter 10 us (at 2 GHz) behind CPU i-1's.
	skewed := func(i int) uint64 { return readCounter() - uint64(i)*20000 }
	if warped, seen := warpCheck(cpus, skewed); !warped {
		t.Errorf("counters 10 us apart: no warp found (seen %v)", seen)
	}
	if counterNoWarp(cpus, skewed) {
		t.Error("counters 10 us apart: the check passed")
	}
	if counterNoWarp([]int{cpus[0], cpus[0]}, own) {
		t.Error("two threads on one CPU: the check passed")
	}
}
