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

// DefaultBurst is the frames a driver moves per tail write in RxRepost and
// TxBurst when Burst is 0.
const DefaultBurst = 32

// RxRepost plays a driver's receive side on a model's ring of N descriptors
// for the per-frame benchmarks: each Step re-arms the next descriptor (Post)
// as soon as its frame is in, and every Burst steps moves the tail to the
// descriptor just re-armed (Tail), one register write per burst as a driver
// refills. Post and Tail are the family's descriptor and register codec.
type RxRepost struct {
	N     int
	Burst int // re-armed descriptors per tail write; 0: DefaultBurst
	Post  func(i int)
	Tail  func(i int)

	next, owed int
}

// Step re-arms the next descriptor, moving the tail when a burst is complete.
func (r *RxRepost) Step() {
	burst := r.Burst
	if burst == 0 {
		burst = DefaultBurst
	}
	i := r.next
	r.Post(i)
	r.next = (i + 1) % r.N
	if r.owed++; r.owed == burst {
		r.Tail(i)
		r.owed = 0
	}
}

// TxBurst plays a driver's transmit side on a model's ring of N descriptors:
// each Run writes Burst single-descriptor frames from the tail on (Put) and
// then rings the doorbell once with the new tail (Kick). Sent counts the
// frames put.
type TxBurst struct {
	N     int
	Burst int // frames per doorbell; 0: DefaultBurst
	Put   func(i int)
	Kick  func(tail int)
	Sent  int

	tail int
}

// Run sends one burst.
func (t *TxBurst) Run() {
	n := t.Burst
	if n == 0 {
		n = DefaultBurst
	}
	for k := 0; k < n; k++ {
		t.Put(t.tail)
		t.tail = (t.tail + 1) % t.N
	}
	t.Kick(t.tail)
	t.Sent += n
}

// ZeroAllocFrames fails t when a model's per-frame paths allocate: rx (one
// frame in and its descriptor re-armed, an RxRepost step; false when the
// model dropped the frame) over 2000 calls, and tx's bursts over 200 after a
// first one that sizes the model's scratch. Every frame tx put must have left
// (txFrames: the model's count of frames sent).
func ZeroAllocFrames(t testing.TB, rx func() bool, tx *TxBurst, txFrames func() uint64) {
	t.Helper()
	ZeroAlloc(t, "receive", 2000, func() {
		if !rx() {
			t.Fatal("frame dropped")
		}
	})
	tx.Run()
	ZeroAlloc(t, "transmit", 200, tx.Run)
	if got := txFrames(); got != uint64(tx.Sent) {
		t.Fatalf("the model sent %d frames of the %d put on the ring", got, tx.Sent)
	}
}

// BenchRx runs rx (as in ZeroAllocFrames) in BenchFrames, one frame a call.
func BenchRx(b *testing.B, rx func() bool) {
	b.Helper()
	BenchFrames(b, func() int {
		if !rx() {
			b.Fatal("frame dropped")
		}
		return 1
	})
}

// BenchTx runs tx's bursts in BenchFrames.
func BenchTx(b *testing.B, tx *TxBurst) {
	b.Helper()
	BenchFrames(b, func() int {
		n := tx.Sent
		tx.Run()
		return tx.Sent - n
	})
}
