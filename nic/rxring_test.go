package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// countingAlloc counts the Syncs that reach the memory.
type countingAlloc struct {
	*sim.Memory
	syncs int
}

func (a *countingAlloc) Sync(r *dma.Region, off, n int, d dma.SyncDir) {
	a.syncs++
	a.Memory.Sync(r, off, n, d)
}

func newRing(t *testing.T, nonCoherent bool, n, poolSize int) (*nic.RxRing, *countingAlloc) {
	t.Helper()
	a := &countingAlloc{Memory: sim.NewMemory(sim.MemoryConfig{NonCoherent: nonCoherent}, nil)}
	ring, err := a.Alloc(n*16, 64)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := dma.NewPool(a, poolSize, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &nic.RxRing{}
	r.Init(a, ring, n, 16, pool, 2048-dma.Headroom)
	return r, a
}

// TestRxRingRefillTakeFree: Refill posts up to the limit, in whole groups,
// handing each descriptor's bytes, index and buffer address to the codec in
// ring order; Take returns them in the same order; Free gives every buffer
// back and frees the ring.
func TestRxRingRefillTakeFree(t *testing.T) {
	r, a := newRing(t, true, 8, 32)
	var posted []int
	post := func(d []byte, i int, iova uint64) {
		if len(d) != 16 || &d[0] != &r.Desc(i)[0] {
			t.Fatalf("descriptor %d: wrong bytes", i)
		}
		if b := r.Slots[i]; b != nil {
			t.Fatalf("descriptor %d posted twice", i)
		}
		posted = append(posted, i)
		if iova%64 != 0 {
			t.Fatalf("buffer address %#x not past an aligned headroom", iova)
		}
	}
	if k := r.Refill(r.N-1, 1, post); k != 7 || r.Posted != 7 || r.Tail != 7 {
		t.Fatalf("refill of an empty 8-ring to 7: posted %d (Posted %d, Tail %d)", k, r.Posted, r.Tail)
	}
	for i, b := range r.Slots[:7] {
		if b == nil || b.Owner() != dma.OwnerRx || posted[i] != i {
			t.Fatalf("slot %d: %v", i, b)
		}
	}
	for i := 0; i < 5; i++ {
		b := r.Take()
		if b == nil || r.Next != i+1 {
			t.Fatalf("take %d: %v, Next %d", i, b, r.Next)
		}
		b.Free()
	}
	posted = nil
	// Groups of 4: 6 free descriptors, 4 posted (a whole group), wrapping.
	if k := r.Refill(r.N, 4, post); k != 4 || r.Tail != 3 || r.Posted != 6 {
		t.Fatalf("grouped refill: %d (Tail %d, Posted %d), want 4, 3, 6", k, r.Tail, r.Posted)
	}
	if posted[0] != 7 || posted[1] != 0 || posted[3] != 2 {
		t.Fatalf("refill order %v, want 7 0 1 2", posted)
	}
	if a.syncs == 0 {
		t.Fatal("no Sync on non-coherent memory")
	}
	pool := r.Pool()
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.ByOwner[dma.OwnerRx] != 0 {
		t.Fatalf("buffers still posted after Free: %+v", s)
	}
	if r.Ring != nil || r.Pool() != nil || a.Regions() != 0 {
		t.Fatalf("Free left memory: ring %v, %d regions", r.Ring, a.Regions())
	}
	if err := r.Free(); err != nil {
		t.Fatalf("second Free: %v", err)
	}
}

// TestRxRingShortPool: a pool short of buffers posts what it has, counts the
// shortage, and a later Refill fills the rest.
func TestRxRingShortPool(t *testing.T) {
	r, _ := newRing(t, false, 16, 4)
	post := func([]byte, int, uint64) {}
	if k := r.Refill(15, 1, post); k != 4 || r.AllocFail.Load() != 1 {
		t.Fatalf("refill from a pool of 4: %d, AllocFail %d", k, r.AllocFail.Load())
	}
	r.Take().Free()
	if k := r.Refill(15, 1, post); k != 1 || r.Posted != 4 {
		t.Fatalf("retry: %d, Posted %d", k, r.Posted)
	}
}

// TestRxRingCoherentSkipsSync: on coherent memory the ring makes no Sync
// call, per descriptor or buffer; Reset zeroes every descriptor.
func TestRxRingCoherentSkipsSync(t *testing.T) {
	r, a := newRing(t, false, 8, 16)
	if !r.Coherent {
		t.Fatal("coherent memory not seen as such")
	}
	r.Refill(7, 1, func(d []byte, _ int, _ uint64) { d[0] = 0xEE })
	r.SyncDesc(0, dma.ForCPU)
	b := r.Take()
	r.SyncFrame(b, 100)
	b.Free()
	if a.syncs != 0 {
		t.Fatalf("%d Syncs on coherent memory", a.syncs)
	}
	r.Reset()
	for i, c := range r.Ring.CPU {
		if c != 0 {
			t.Fatalf("byte %d is %#x after Reset", i, c)
		}
	}
	if r.Posted != 0 || r.Next != 0 || r.Tail != 0 || r.Pool().Stats().ByOwner[dma.OwnerRx] != 0 {
		t.Fatal("Reset left buffers posted")
	}
}

// TestRxRingWritten: Written counts the frames the device finished on the
// ring from Next, stopping at the first descriptor it did not write, counting
// only descriptors that end a frame, and only among the posted ones.
func TestRxRingWritten(t *testing.T) {
	r, _ := newRing(t, false, 8, 32) // the test writes as the device: coherent
	post := func(d []byte, i int, iova uint64) { d[0] = 0 }
	if k := r.Refill(r.N-1, 1, post); k != 7 {
		t.Fatalf("posted %d", k)
	}
	// done: bit 0, last: bit 1 of byte 0 (a codec of the test's own).
	written := func(d []byte) (bool, bool) { return d[0]&1 != 0, d[0]&2 != 0 }
	if n := r.Written(written); n != 0 {
		t.Fatalf("nothing written: %d", n)
	}
	// Descriptors 0..4 written: frames end at 0, 2 and 4 (1 is the first
	// part of the frame ending at 2); 5 not written, 6 written after it
	// (cannot be counted: the device writes in order).
	for i, v := range []byte{3, 1, 3, 1, 3, 0, 3} {
		r.Desc(i)[0] = v
	}
	if n := r.Written(written); n != 3 {
		t.Fatalf("Written = %d, want 3", n)
	}
	// Taken frames are not counted again; the count wraps around the ring.
	r.Take()
	r.Take()
	r.Take()
	if n := r.Written(written); n != 1 {
		t.Fatalf("after taking 3: Written = %d, want 1", n)
	}
	r.Desc(5)[0] = 3
	r.Desc(7)[0] = 3 // not posted: Tail is 7
	if n := r.Written(written); n != 3 {
		t.Fatalf("Written = %d, want 3 (3, 4 wait; 5, 6 ended frames)", n)
	}
	r.Reset()
	if n := r.Written(written); n != 0 {
		t.Fatalf("after Reset: Written = %d", n)
	}
}
