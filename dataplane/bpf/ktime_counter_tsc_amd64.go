//go:build linux

package bpf

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// When the time-stamp counter may carry the counter line (ktime_counter.go)
// on amd64: the decision (tscSound) and the calibration a kvm-clock guest
// needs (counterCalibrate).
//
// kvm-clock is the host's TSC scaled: the guest reads its own TSC and the
// (tsc_timestamp, system_time, mul, shift) the host wrote in a per-vCPU
// pvclock page (Linux arch/x86/kernel/pvclock.c, __pvclock_read_cycles).
// The host sets PVCLOCK_TSC_STABLE_BIT only while it runs the VM on its
// master clock, which needs the host to keep time with its TSC and every
// vCPU's TSC to have been matched (arch/x86/kvm/x86.c,
// pvclock_update_vm_gtod_copy, kvm_track_tsc_matching); only then does
// the guest's vDSO read the pvclock instead of making a system call
// (arch/x86/kernel/kvmclock.c, kvm_setup_vsyscall_timeinfo). So on such a
// guest CLOCK_MONOTONIC is, between the host's rare pvclock updates and
// NTP's slewing, an affine function of the guest's TSC, the same on every
// vCPU. That is what a line needs. The guest kernel may still not keep
// time with the TSC (a guest booted with tsc=unstable registers no tsc
// clocksource at all: arch/x86/kernel/tsc.c, init_tsc_clocksource): its
// TSC alone is not trusted across a pause or a snapshot's restore, which
// matters to a clock the TSC alone carries through seconds of idle, not
// to a line checked against clock_gettime every 10 ms (lineDrifted, and
// ktime_counter.go, "A VM's stops").
//
// Linux exposes neither the stable bit nor the vCPUs' matching to user
// space, so they are measured: pairs (count, clock_gettime) read on every
// CPU this process may run on, in turn, over counterCalWindow, must all
// lie within counterCalMax of one line, and no CPU may read a count below
// one another CPU read before it (counterNoWarp). A guest without the
// stable bit (per-vCPU pvclock pages, kvmclock's last_value clamp, or
// system calls slower than counterJitter) or with vCPUs' TSCs apart fails
// it. A line drawn on one CPU and read on another is then off by at most
// counterCalMax more than on its own: about 12 us, within ktimeErrBound.

const (
	// counterCalWindow is how long a kvm-clock guest's TSC is compared
	// with clock_gettime before it is used.
	counterCalWindow = 20 * time.Millisecond
	// counterCalRounds is about how many times each CPU is visited: a
	// round is followed by a sleep of the window over it.
	counterCalRounds = 128
	// counterWarpTime is how long at least the CPUs' counters are
	// compared with each other (counterNoWarp), counterWarpMax at most;
	// each CPU must have read another's count counterWarpSeen times (two
	// threads taking turns on one CPU do not, in counterWarpMax).
	counterWarpTime = 2 * time.Millisecond
	counterWarpMax  = 200 * time.Millisecond
	counterWarpSeen = 1000
)

// tscSound decides whether the TSC carries the line, from the kernel's
// clocksource (src), the CPU flags /proc/cpuinfo lists, and measure, the
// calibration's largest error (negative: no answer, or the CPUs' counters
// warp), called only when the decision needs it. The TSC must be invariant (constant_tsc: a constant
// rate; nonstop_tsc: not stopped in deep idle states; Intel SDM vol. 3B
// 18.17.1) and either be what the kernel keeps time with ("tsc": the
// kernel found it synchronized across CPUs and stable, and switches away
// from one that stops being so) or be the counter under kvm-clock with a
// calibration within counterCalMax. Any other clocksource (hpet, acpi_pm,
// Xen's or Hyper-V's) leaves bpf_ktime_get_ns to Go.
func tscSound(src string, flags []string, measure func() time.Duration) bool {
	if !slices.Contains(flags, "constant_tsc") || !slices.Contains(flags, "nonstop_tsc") {
		return false
	}
	switch src {
	case "tsc":
		return true
	case "kvm-clock":
		e := measure()
		return e >= 0 && e <= counterCalMax
	}
	return false
}

// cpuFlags is the words of the first "flags" line of /proc/cpuinfo.
func cpuFlags(cpuinfo []byte) []string {
	for line := range bytes.SplitSeq(cpuinfo, []byte("\n")) {
		name, list, ok := bytes.Cut(line, []byte(":"))
		if ok && string(bytes.TrimSpace(name)) == "flags" {
			return strings.Fields(string(list))
		}
	}
	return nil
}

// counterCalibrate is the largest distance, in ns, of a pair (count,
// clock_gettime) read on any of the CPUs this process may run on from the
// line through the first and last pair, over counterCalWindow; -1 when it
// could not read pairs on every such CPU, or when the CPUs' counters warp
// (counterNoWarp).
func counterCalibrate() time.Duration {
	var cpus []int
	e := time.Duration(-1)
	onThread(func() {
		cpus = allowedCPUs()
		if pairs, ok := calSamples(cpus, counterCalWindow); ok {
			e = lineResidual(pairs)
		}
	})
	if e < 0 || !counterNoWarp(cpus, func(int) uint64 { return readCounter() }) {
		return -1
	}
	return e
}

// onThread runs f on a thread of its own, which it leaves locked so that
// the thread, whose affinity f changes, ends with it
// (runtime.LockOSThread) and no other goroutine inherits the affinity.
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

// allowedCPUs is the CPUs the calling thread can be pinned to (its cpuset),
// whatever its own affinity is now; it leaves the thread pinned to the last.
func allowedCPUs() []int {
	var cpus []int
	for cpu := range 1024 { // unix.CPUSet's size
		if pinThread(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// pinThread binds the calling thread, locked to its goroutine, to cpu.
func pinThread(cpu int) bool {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set) == nil
}

// calPair is a (count, clock_gettime) pair of the calibration.
type calPair struct{ count, ns uint64 }

// calSamples reads a pair on each CPU in turn, and again after a pause,
// until window has passed, in the order read; ok is false when some CPU
// gave none (the thread could not be moved there, or its reads were always
// preempted).
func calSamples(cpus []int, window time.Duration) (pairs []calPair, ok bool) {
	got := make([]int, len(cpus))
	for start := nanotime(); nanotime()-start < int64(window); time.Sleep(window / counterCalRounds) {
		for i, cpu := range cpus {
			if !pinThread(cpu) {
				return nil, false
			}
			if c, t, ok := samplePair(); ok {
				pairs = append(pairs, calPair{c, t})
				got[i]++
			}
		}
	}
	return pairs, len(cpus) > 0 && !slices.Contains(got, 0)
}

// lineResidual is the largest distance of a pair from the line through the
// first and the last, in ns; -1 when the counter or the clock did not
// advance between them. A CPU whose counter is apart from the others', a
// rate that changed or a clock with steps shows as distance.
func lineResidual(pairs []calPair) time.Duration {
	if len(pairs) < 2 {
		return -1
	}
	first, last := pairs[0], pairs[len(pairs)-1]
	if last.count <= first.count || last.ns <= first.ns {
		return -1
	}
	slope := float64(last.ns-first.ns) / float64(last.count-first.count)
	var worst float64
	for _, p := range pairs {
		// Signed: a pair read on a CPU whose counter is behind the
		// first's may have a smaller count.
		dc, dt := float64(int64(p.count-first.count)), float64(int64(p.ns-first.ns))
		worst = max(worst, math.Abs(dt-dc*slope))
	}
	return time.Duration(math.Ceil(worst))
}

// counterNoWarp is Linux's TSC warp check (arch/x86/kernel/tsc_sync.c,
// check_tsc_warp) on every CPU at once: on a thread pinned to each, read
// the largest count published, then the CPU's own counter (read(i), after
// the load: LFENCE; RDTSC), and publish it if larger. An own count below
// the one read before it would be time going back for a Runner moved
// between those CPUs; the calibration's pairs cannot see a warp below
// their jitter. It reports whether none was seen and every CPU read
// another's count counterWarpSeen times (the threads did run at once).
func counterNoWarp(cpus []int, read func(i int) uint64) bool {
	warped, seen := warpCheck(cpus, read)
	return len(cpus) > 0 && !warped && !slices.ContainsFunc(seen, func(n int) bool { return n < counterWarpSeen })
}

// warpRun is the state counterNoWarp's threads share.
type warpRun struct {
	last   atomic.Uint64 // the largest count published
	warped atomic.Bool
	ready  atomic.Int64 // CPUs that read counterWarpSeen others' counts
	cpus   int64
	// The check ends when every CPU is ready and counterWarpTime has
	// passed (soon), or at counterWarpMax (a CPU busy with other work).
	soon, latest int64
}

// warpCheck runs warpLoop on every CPU at once: whether some CPU warped,
// and how many times each read another's count.
func warpCheck(cpus []int, read func(i int) uint64) (warped bool, seen []int) {
	now := nanotime()
	r := &warpRun{cpus: int64(len(cpus)), soon: now + int64(counterWarpTime), latest: now + int64(counterWarpMax)}
	seen = make([]int, len(cpus)) // each goroutine's own
	var wg sync.WaitGroup
	for i, cpu := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // not unlocked, as onThread
			if pinThread(cpu) {
				seen[i] = r.loop(func() uint64 { return read(i) })
			} else {
				r.ready.Add(1) // not waited for: seen[i] stays 0
			}
		}()
	}
	wg.Wait()
	return r.warped.Load(), seen
}

// loop is one CPU's side of the check: it returns how many times it found
// a count another CPU published.
func (r *warpRun) loop(read func() uint64) (seen int) {
	var mine uint64 // the last count this side published
	for {
		if t := nanotime(); t > r.latest || t > r.soon && r.ready.Load() == r.cpus {
			return seen
		}
		p := r.last.Load()
		now := read()
		if now < p {
			r.warped.Store(true)
		}
		if p != mine {
			if seen++; seen == counterWarpSeen {
				r.ready.Add(1)
			}
		}
		for p < now {
			if r.last.CompareAndSwap(p, now) {
				mine = now
				break
			}
			p = r.last.Load()
		}
	}
}
