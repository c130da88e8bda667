package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// TestTxRing: frames in flight complete in order, spanning several
// descriptors where they do, and go back to their pool; Room keeps one
// descriptor free; Reset gives back what is in flight (telling unsent of
// each) and zeroes the ring; Release frees it, twice safely.
func TestTxRing(t *testing.T) {
	a := &countingAlloc{Memory: sim.NewMemory(sim.MemoryConfig{NonCoherent: true}, nil)}
	ring, err := a.Alloc(8*16, 64)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := dma.NewPool(a, 16, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &nic.TxRing{}
	r.Init(a, ring, 8, 16)
	if r.Coherent || r.Room() != 7 {
		t.Fatalf("coherent %v, room %d", r.Coherent, r.Room())
	}
	// Three frames: 1, 3 (split) and 2 descriptors.
	for _, segs := range []int{1, 3, 2} {
		b := pool.Get()
		b.SetOwner(dma.OwnerTx)
		r.Slots[r.Tail] = b
		r.Tail = (r.Tail + segs) % r.N
		r.Inflight += segs
	}
	r.SyncDescs(0, 6, dma.ForDevice)
	if r.Room() != 1 || a.syncs == 0 {
		t.Fatalf("room %d after 6 descriptors, %d syncs", r.Room(), a.syncs)
	}
	r.Complete(1)
	r.Complete(3)
	if r.Clean != 4 || r.Inflight != 2 {
		t.Fatalf("Clean %d, Inflight %d after two completions", r.Clean, r.Inflight)
	}
	if n := r.PutDone(); n != 2 || pool.Stats().ByOwner[dma.OwnerTx] != 1 {
		t.Fatalf("PutDone %d, %d still OwnerTx", n, pool.Stats().ByOwner[dma.OwnerTx])
	}
	unsent := 0
	r.Desc(5)[0] = 0xFF
	if n := r.Reset(func(*dma.Buf) { unsent++ }); n != 1 || unsent != 1 {
		t.Fatalf("Reset gave back %d (unsent told %d), want 1", n, unsent)
	}
	if r.Desc(5)[0] != 0 || r.Tail != 0 || r.Clean != 0 || r.Inflight != 0 || pool.Stats().ByOwner[dma.OwnerTx] != 0 {
		t.Fatal("Reset left the ring dirty or buffers in flight")
	}
	if err := r.Release(nil); err != nil || r.Ring != nil || a.Regions() != 1 { // the pool remains
		t.Fatalf("Release: %v, ring %v, %d regions", err, r.Ring, a.Regions())
	}
	if err := r.Release(nil); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

// TestTxRingPostWrapsAndReports: Post moves a buffer to OwnerTx at Tail and
// wraps Tail at N; Hold's count is added to the next Report only.
func TestTxRingPostWrapsAndReports(t *testing.T) {
	a := &countingAlloc{Memory: sim.NewMemory(sim.MemoryConfig{}, nil)}
	ring, err := a.Alloc(4*16, 64)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := dma.NewPool(a, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &nic.TxRing{}
	r.Init(a, ring, 4, 16)
	for i := 0; i < 3; i++ {
		b := pool.Get()
		r.Post(b)
		if r.Slots[i] != b || b.Owner() != dma.OwnerTx {
			t.Fatalf("post %d: slot %p, owner %v", i, r.Slots[i], b.Owner())
		}
		r.Complete(1)
		r.PutDone()
	}
	r.Post(pool.Get())
	if r.Tail != 0 || r.Inflight != 1 || r.Slots[3] == nil {
		t.Fatalf("Tail %d, Inflight %d after the fourth post: want 0 (wrapped), 1", r.Tail, r.Inflight)
	}
	r.Hold(2)
	r.Hold(1)
	if n := r.Report(4); n != 7 {
		t.Fatalf("Report(4) after Hold(2), Hold(1) = %d, want 7", n)
	}
	if n := r.Report(1); n != 1 {
		t.Fatalf("second Report(1) = %d, want 1", n)
	}
	if err := r.Release(nil); err != nil {
		t.Fatal(err)
	}
}
