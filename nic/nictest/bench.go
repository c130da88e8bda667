package nictest

import (
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Bounce moves one burst from RX to TX: it receives up to len(bufs) frames
// from rq, sends them back out on tq, and frees the ones tq did not take. It
// returns how many were received and how many sent. It does not allocate.
func Bounce(rq nic.RxQueue, tq nic.TxQueue, bufs []*dma.Buf) (received, sent int) {
	n := rq.Recv(bufs)
	k := tq.Send(bufs[:n])
	for _, x := range bufs[k:n] {
		x.Free()
	}
	return n, k
}

// RxTxCounts is what BenchRxTx counted.
type RxTxCounts struct {
	Packets  int    // loop iterations: one packet each
	Received int    // frames Recv returned
	Sent     int    // frames Send took
	Mallocs  uint64 // heap allocations during the loop (runtime.MemStats)
}

// BenchRxTx runs b.Loop with one packet per iteration: every burst-th
// iteration it calls inject (which delivers burst frames to rq's ring), bounces
// them to tq (Bounce), calls complete when it is not nil (a fake whose DMA side
// the benchmark plays finishes the TX descriptors), and reclaims tq. It turns
// on b.ReportAllocs and returns what it counted, for the caller to check and
// report (b.ReportMetric).
func BenchRxTx(b *testing.B, rq nic.RxQueue, tq nic.TxQueue, burst int, inject, complete func()) RxTxCounts {
	var c RxTxCounts
	bufs := make([]*dma.Buf, burst)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		if c.Packets%burst == 0 {
			inject()
			n, k := Bounce(rq, tq, bufs)
			c.Received += n
			c.Sent += k
			if complete != nil {
				complete()
			}
			tq.Reclaim()
		}
		c.Packets++
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	c.Mallocs = ms1.Mallocs - ms0.Mallocs
	return c
}

// Timed wraps f so each call adds its duration to *total: for benchmarks that
// report a model's share of the time (the model's Inject), without charging the
// clock reads to benchmarks that do not.
func Timed(total *time.Duration, f func()) func() {
	return func() {
		t0 := time.Now()
		f()
		*total += time.Since(t0)
	}
}

// PerPacket divides a total by the packet count (at least 1), for per-packet
// metrics.
func (c RxTxCounts) PerPacket(total float64) float64 { return total / float64(max(c.Packets, 1)) }

// ZeroAllocBounce fails the test when the RX-to-TX path allocates: runs
// rounds each have deliver put a burst of 16 frames on rq's ring, Bounce them
// from rq to tq, complete (nil: nothing) let the device finish sending, and
// Reclaim. Every frame must go round: a loop that moves nothing proves
// nothing.
func ZeroAllocBounce(t *testing.T, runs int, rq nic.RxQueue, tq nic.TxQueue, deliver, complete func()) {
	t.Helper()
	bufs := make([]*dma.Buf, 16)
	moved := 0
	allocs := testing.AllocsPerRun(runs, func() {
		deliver()
		_, k := Bounce(rq, tq, bufs)
		if complete != nil {
			complete()
		}
		tq.Reclaim()
		moved += k
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per burst of 16, want 0", allocs)
	}
	if moved < runs*16 {
		t.Fatalf("only %d of %d frames went round", moved, runs*16)
	}
}
