package nic

import "github.com/xnic-dev/xnic/dma"

// TxRing is the transmit ring machine the drivers share: the slot table, the
// driver's indices, the reclaim batch, the sync policy and teardown. A driver's
// transmit queue embeds one and keeps its descriptor codec (how a frame is
// written, how a completion reads), its doorbell and its per-frame requests.
//
// Indices and ownership, for every family:
//
//   - Tail is the next descriptor the driver fills. Only the driver writes it;
//     it tells the device with its doorbell (igb TDT, the dwmac tail pointer,
//     fec TDAR) once per Send burst, after the burst's descriptors are written
//     and synced.
//   - Clean is the oldest descriptor in flight. Only the driver writes it, as
//     it takes completions in order by the descriptor's ownership word (igb DD,
//     dwmac OWN, fec R); it never reads the device's own position.
//   - Inflight counts the descriptors the device holds: [Clean, Tail) in ring
//     order, at most N-1.
//
// Buffers: Send moves each buffer to dma.OwnerTx and keeps it in Slots at the
// first descriptor of its frame; Complete moves it to the reclaim batch and
// PutDone gives the batch back to the buffers' own pools (which may be another
// port's).
//
// Sync policy: Coherent is decided once, at Init (dma.IsCoherent); the sync
// methods do nothing then.
//
// One goroutine owns the ring (the queue's sender and reclaimer, or Open and
// Close when nobody sends).
type TxRing struct {
	Alloc    dma.Allocator // immutable after Init
	Ring     *dma.Region   // N descriptors of DescSize bytes; nil after Release
	N        int           // immutable after Init
	DescSize int           // immutable after Init
	Coherent bool          // Alloc's memory needs no Sync; immutable after Init

	Slots    []*dma.Buf // the buffer of each frame in flight, at its first descriptor
	Tail     int        // next descriptor to fill; only the driver writes it
	Clean    int        // oldest descriptor in flight; only the driver writes it
	Inflight int        // descriptors the device holds

	done       []*dma.Buf // the reclaim batch, len N
	ndone      int        // entries of done in use
	unreported int        // frames Send reclaimed to make room (Hold); the next Report adds them
}

// Init sets r up over a ring of n descriptors of descSize bytes in ring. It
// allocates the slot tables; nothing else does.
func (r *TxRing) Init(alloc dma.Allocator, ring *dma.Region, n, descSize int) {
	r.Alloc, r.Ring, r.N, r.DescSize = alloc, ring, n, descSize
	r.Coherent = dma.IsCoherent(alloc)
	r.Slots, r.done = make([]*dma.Buf, n), make([]*dma.Buf, n)
	r.Tail, r.Clean, r.Inflight, r.ndone = 0, 0, 0, 0
}

// Room is how many more descriptors may be filled: N-1 in flight at most, so
// Tail never catches up with Clean from behind.
func (r *TxRing) Room() int { return r.N - 1 - r.Inflight }

// Desc is descriptor i's bytes in the CPU's view of the ring.
func (r *TxRing) Desc(i int) []byte {
	off := i * r.DescSize
	return r.Ring.CPU[off : off+r.DescSize]
}

// SyncDescs syncs count descriptors from first on (wrapping) in direction dir,
// nothing on coherent memory: a Send burst's descriptors, before the doorbell.
func (r *TxRing) SyncDescs(first, count int, dir dma.SyncDir) {
	if !r.Coherent && count > 0 {
		SyncRing(r.Alloc, r.Ring, r.DescSize, r.N, first, count, dir)
	}
}

// SyncBytes syncs n bytes of the ring at byte offset off in direction dir,
// nothing on coherent memory: the one word of a completion a reclaim reads.
func (r *TxRing) SyncBytes(off, n int, dir dma.SyncDir) {
	if !r.Coherent {
		r.Alloc.Sync(r.Ring, off, n, dir)
	}
}

// Post puts b, a frame of one descriptor that the driver has written at Tail,
// in flight: b moves to dma.OwnerTx and into Slots at Tail, Tail moves on
// (wrapping) and Inflight grows by one. The doorbell stays the driver's, once
// per burst.
func (r *TxRing) Post(b *dma.Buf) {
	b.SetOwner(dma.OwnerTx)
	r.Slots[r.Tail] = b
	if r.Tail++; r.Tail == r.N {
		r.Tail = 0
	}
	r.Inflight++
}

// Hold keeps n, frames a Send reclaimed to make room, for the next Report:
// Reclaim, not Send, tells the caller how many frames completed.
func (r *TxRing) Hold(n int) { r.unreported += n }

// Report is n, what a Reclaim took, plus what Hold kept since the last
// Report.
func (r *TxRing) Report(n int) int {
	n += r.unreported
	r.unreported = 0
	return n
}

// Complete takes the frame at Clean, which spans segs descriptors and which
// the device has finished: its buffer joins the reclaim batch, Clean moves past
// it and Inflight drops by segs. The caller gives the batch back with PutDone.
func (r *TxRing) Complete(segs int) {
	r.done[r.ndone] = r.Slots[r.Clean]
	r.ndone++
	r.Slots[r.Clean] = nil
	if r.Clean += segs; r.Clean >= r.N {
		r.Clean -= r.N
	}
	r.Inflight -= segs
}

// PutDone gives the reclaim batch back to the buffers' pools and reports how
// many frames it held.
func (r *TxRing) PutDone() int {
	n := r.ndone
	PutBufs(r.done[:n])
	r.ndone = 0
	return n
}

// Drop gives back every buffer still in flight (calling unsent, if not nil,
// on each first: a driver completes what the frame asked for, unanswered),
// and sets the indices back to 0; it reports how many frames it gave back.
// The device must not read the ring any more.
func (r *TxRing) Drop(unsent func(*dma.Buf)) int {
	for i, b := range r.Slots {
		if b != nil {
			if unsent != nil {
				unsent(b)
			}
			r.done[r.ndone] = b
			r.ndone++
			r.Slots[i] = nil
		}
	}
	n := r.PutDone()
	r.Tail, r.Clean, r.Inflight = 0, 0, 0
	return n
}

// Reset drops what is in flight and zeroes every descriptor (ZeroDescs),
// synced for the device: the ring as a device restarting from its base finds
// it, empty. It reports how many frames it gave back unsent.
func (r *TxRing) Reset(unsent func(*dma.Buf)) int {
	n := r.Drop(unsent)
	ZeroDescs(r.Ring.CPU)
	if !r.Coherent {
		r.Alloc.Sync(r.Ring, 0, r.Ring.Len(), dma.ForDevice)
	}
	return n
}

// Release drops what is in flight and frees the ring's memory; the device
// must be stopped. It may be called on a ring Init never finished (no ring
// yet) and more than once.
func (r *TxRing) Release(unsent func(*dma.Buf)) error {
	if r.Slots != nil {
		r.Drop(unsent)
	}
	if r.Ring == nil {
		return nil
	}
	err := r.Alloc.Free(r.Ring)
	r.Ring = nil
	return err
}
