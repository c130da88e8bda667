package simtest

import (
	"testing"
	"time"
)

// ZeroAlloc fails the test when f allocates, averaged over runs calls; what
// names the path in the failure.
func ZeroAlloc(t testing.TB, what string, runs int, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(runs, f); n != 0 {
		t.Fatalf("%s allocates: %.2f allocations per call", what, n)
	}
}

// BenchFrames runs step, which moves frames through a model and returns how
// many, in b's loop, and reports ns/frame and frames/s beside the allocations.
func BenchFrames(b *testing.B, step func() int) {
	b.Helper()
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		n += step()
	}
	el := time.Since(start)
	b.ReportMetric(float64(el.Nanoseconds())/float64(max(n, 1)), "ns/frame")
	b.ReportMetric(float64(n)/el.Seconds(), "frames/s")
}
