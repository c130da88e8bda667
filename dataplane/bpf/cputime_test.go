package bpf

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used. On a shared
// machine it measures the interpreter without the time other processes took.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuBench runs fn n times on a locked thread and reports CPU ns per call.
func cpuBench(b *testing.B, fn func()) { cpuBenchN(b, 1, fn) }

// cpuBenchN is cpuBench for an fn that makes runs runs: it reports per run.
func cpuBenchN(b *testing.B, runs int, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadCPU()
	n := 0
	for b.Loop() {
		fn()
		n += runs
	}
	cpu := threadCPU() - start
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/run")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/run")
}
