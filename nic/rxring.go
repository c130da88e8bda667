package nic

import (
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
)

// RxRing is the receive ring machine the drivers share: the slot table, the
// driver's indices, refill, the sync policy and teardown. A driver's receive
// queue embeds one and keeps only what is its own: the descriptor codec (how a
// buffer is posted, how a write-back reads), its registers (the doorbell
// written after a refill) and its bring-up.
//
// Indices and ownership, for every family:
//
//   - Next is the next descriptor the device completes. Only the driver writes
//     it, as it takes completed descriptors in order; it never reads the
//     device's own position (RDH, the current-descriptor register) on the fast
//     path, only the ownership word of the descriptor at Next.
//   - Tail is the next descriptor the driver posts a buffer on. Only the driver
//     writes it; the driver tells the device with its doorbell (igb RDT, the
//     dwmac tail pointer, fec RDAR) once per refill, after every descriptor of
//     the refill is written and synced.
//   - Posted counts the descriptors the device owns: [Next, Tail) in ring
//     order. A driver whose device tells "empty" from "full" by the indices
//     alone posts at most N-1 (igb, dwmac); one whose descriptors carry their
//     owner (fec's E bit) may post all N.
//
// Buffers: a posted buffer is dma.OwnerRx and sits in Slots[i] for its
// descriptor i; Take hands it out of the ring, the driver gives it to its
// caller (OwnerApp) or frees it. Refill takes fresh buffers from the pool.
//
// Sync policy: Coherent is decided once, at Init, from the allocator
// (dma.IsCoherent); the sync methods do nothing then, so a driver on coherent
// memory (VFIO on x86) pays no Sync call per descriptor or buffer, and one on
// non-coherent memory gets the cleans and invalidates at the points Linux's
// drivers call dma_sync_*.
//
// One goroutine owns the ring (the queue's poller, or Open and Close when
// nobody polls); only AllocFail and ResetDiscards may be read from another,
// atomically.
type RxRing struct {
	Alloc    dma.Allocator // immutable after Init
	Ring     *dma.Region   // N descriptors of DescSize bytes; nil after Free
	N        int           // immutable after Init
	DescSize int           // immutable after Init
	Region   *dma.Region   // the pool's memory; immutable after Init
	BufLen   int           // bytes the device may write into one buffer, from Headroom
	Coherent bool          // Alloc's memory needs no Sync; immutable after Init

	Slots  []*dma.Buf // the buffer posted at each descriptor; nil where none
	Next   int        // next descriptor the device completes; only the driver writes it
	Tail   int        // next descriptor to post on; only the driver writes it
	Posted int        // descriptors the device owns

	AllocFail atomic.Uint64 // refills that found the pool short
	// ResetDiscards counts the frames the device wrote whole that a reset
	// threw away before the driver took them (DiscardWritten).
	ResetDiscards atomic.Uint64

	pool    *dma.Pool  // where refills take buffers; nil after Free
	scratch []*dma.Buf // refill batch, len N
}

// Init sets r up over a ring of n descriptors of descSize bytes in ring and a
// pool of buffers the device may write bufLen bytes of. It allocates the slot
// tables; nothing else does.
func (r *RxRing) Init(alloc dma.Allocator, ring *dma.Region, n, descSize int, pool *dma.Pool, bufLen int) {
	r.Alloc, r.Ring, r.N, r.DescSize, r.pool, r.BufLen = alloc, ring, n, descSize, pool, bufLen
	r.Region = pool.Region()
	r.Coherent = dma.IsCoherent(alloc)
	r.Slots, r.scratch = make([]*dma.Buf, n), make([]*dma.Buf, n)
	r.Next, r.Tail, r.Posted = 0, 0, 0
}

// Pool is where the ring's buffers come from (nil after Free).
func (r *RxRing) Pool() *dma.Pool { return r.pool }

// Desc is descriptor i's bytes in the CPU's view of the ring.
func (r *RxRing) Desc(i int) []byte {
	off := i * r.DescSize
	return r.Ring.CPU[off : off+r.DescSize]
}

// SyncDesc syncs descriptor i in direction dir (nothing on coherent memory).
func (r *RxRing) SyncDesc(i int, dir dma.SyncDir) {
	if !r.Coherent {
		r.Alloc.Sync(r.Ring, i*r.DescSize, r.DescSize, dir)
	}
}

// SyncFrame makes the n bytes the device wrote at b's Headroom visible to the
// CPU (nothing on coherent memory): the frame, before anyone reads it.
func (r *RxRing) SyncFrame(b *dma.Buf, n int) {
	if !r.Coherent {
		r.Alloc.Sync(r.Region, int(b.IOVA-r.Region.IOVA)+dma.Headroom, n, dma.ForCPU)
	}
}

// Take removes the buffer of the descriptor at Next from the ring, advances
// Next and counts one descriptor fewer posted. The buffer (nil only if the ring
// was corrupted) is still OwnerRx: the caller hands it on or frees it.
func (r *RxRing) Take() *dma.Buf {
	b := r.Slots[r.Next]
	r.Slots[r.Next] = nil
	if r.Next++; r.Next == r.N {
		r.Next = 0
	}
	r.Posted--
	return b
}

// PostFunc writes the read format of descriptor i, whose bytes are d, for a
// buffer whose device address (past the headroom) is iova; it stores the word
// that hands the descriptor to the device last. It must not keep d.
type PostFunc func(d []byte, i int, iova uint64)

// Refill posts fresh buffers on free descriptors from Tail on, so that at most
// limit descriptors are posted, in multiples of group descriptors (1: any
// number; a non-coherent ring whose cache line holds several descriptors posts
// whole lines only). For each buffer it cleans the buffer for the device (dirty
// lines of its last life must not land over what the device writes), then
// calls post; then it syncs the descriptors for the device once. It returns
// how many it posted: the caller rings its doorbell when that is above 0.
// A pool short of buffers is counted in AllocFail; a later Refill retries.
func (r *RxRing) Refill(limit, group int, post PostFunc) int {
	want := limit - r.Posted
	if group > 1 {
		want -= want % group
	}
	if want <= 0 {
		return 0
	}
	k := r.pool.GetBurst(r.scratch[:want])
	if k < want {
		r.AllocFail.Add(1)
	}
	if group > 1 && k%group != 0 {
		r.pool.PutBurst(r.scratch[k-k%group : k])
		clear(r.scratch[k-k%group : k])
		k -= k % group
	}
	if k == 0 {
		return 0
	}
	// The ring's state in locals for the loop: stores through the buffers
	// would otherwise make the compiler reload every field per descriptor.
	region, ring, slots, scratch := r.Region, r.Ring.CPU, r.Slots, r.scratch[:k]
	n, size, coherent, bufLen := r.N, r.DescSize, r.Coherent, r.BufLen
	first, tail := r.Tail, r.Tail
	for i, b := range scratch {
		scratch[i] = nil
		b.SetOwner(dma.OwnerRx)
		if !coherent {
			r.Alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, bufLen, dma.ForDevice)
		}
		off := tail * size
		post(ring[off:off+size:off+size], tail, b.IOVA+dma.Headroom)
		slots[tail] = b
		if tail++; tail == n {
			tail = 0
		}
	}
	r.Tail = tail
	if !r.Coherent {
		SyncRing(r.Alloc, r.Ring, r.DescSize, r.N, first, k, dma.ForDevice)
	}
	r.Posted += k
	return k
}

// Written counts the frames the device has written whole to the ring and the
// driver has not taken: from Next, while written reports a descriptor the
// device wrote back, the descriptors for which it reports the last of a frame.
// Call it with the device stopped (it no longer writes the ring), before Drop
// or Reset throws those frames away, so that they are counted, not lost
// silently.
func (r *RxRing) Written(written func(d []byte) (done, last bool)) int {
	n, i := 0, r.Next
	for k := 0; k < r.Posted; k++ {
		r.SyncDesc(i, dma.ForCPU)
		done, last := written(r.Desc(i))
		if !done {
			break
		}
		if last {
			n++
		}
		if i++; i == r.N {
			i = 0
		}
	}
	return n
}

// DiscardWritten counts the frames Written finds into ResetDiscards: call it
// with the device stopped, right before Drop or Reset throws them away.
func (r *RxRing) DiscardWritten(written func(d []byte) (done, last bool)) {
	r.ResetDiscards.Add(uint64(r.Written(written)))
}

// RxCore is the ring itself, for code that holds a driver's queue embedding
// it (RingTotals).
func (r *RxRing) RxCore() *RxRing { return r }

// Drop frees every posted buffer and forgets them: the device must not write
// the ring any more (stopped, or about to be reset). Indices go back to 0.
func (r *RxRing) Drop() {
	for i, b := range r.Slots {
		if b != nil {
			b.Free()
			r.Slots[i] = nil
		}
	}
	r.Next, r.Tail, r.Posted = 0, 0, 0
}

// Reset drops the posted buffers and zeroes every descriptor (ZeroDescs),
// synced for the device: the ring as a device starting from its base finds
// it, with nothing posted. The device must not be using the ring.
func (r *RxRing) Reset() {
	r.Drop()
	ZeroDescs(r.Ring.CPU)
	if !r.Coherent {
		r.Alloc.Sync(r.Ring, 0, r.Ring.Len(), dma.ForDevice)
	}
}

// Free drops the posted buffers and frees the ring's memory and its pool; the
// device must be stopped. It may be called on a ring Init never finished
// (no ring or no pool yet) and more than once.
func (r *RxRing) Free() error {
	r.Drop()
	var err error
	if r.Ring != nil {
		err = r.Alloc.Free(r.Ring)
		r.Ring = nil
	}
	if r.pool != nil {
		if e := r.pool.Close(); e != nil && err == nil {
			err = e
		}
		r.pool = nil
	}
	return err
}
