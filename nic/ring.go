package nic

import "github.com/xnic-dev/xnic/dma"

// SyncRing syncs count descriptors of size bytes each, starting at descriptor
// first of a ring of n held in region ring, in direction dir: one Sync call,
// or two when the range wraps past the end of the ring. It is called once per
// burst on the fast path and does not allocate.
func SyncRing(a dma.Allocator, ring *dma.Region, size, n, first, count int, dir dma.SyncDir) {
	if first+count <= n {
		a.Sync(ring, first*size, count*size, dir)
		return
	}
	a.Sync(ring, first*size, (n-first)*size, dir)
	a.Sync(ring, 0, (first+count-n)*size, dir)
}

// PutBufs gives buffers back to their pools (dma.Pool.PutBurst), one call per
// run of consecutive buffers from the same pool, and clears bs. Buffers with no
// pool are dropped. A TX queue calls it on the buffers Reclaim collected; it
// does not allocate.
func PutBufs(bs []*dma.Buf) {
	for start := 0; start < len(bs); {
		p := bs[start].Pool()
		end := start + 1
		for end < len(bs) && bs[end].Pool() == p {
			end++
		}
		if p != nil {
			p.PutBurst(bs[start:end])
		}
		start = end
	}
	clear(bs)
}

// RxQueueAt returns qs[i] as a RxQueue, or nil when i is out of range (a true
// nil, never an interface holding a nil pointer). It is the body of every
// driver's Port.RxQueue.
func RxQueueAt[Q RxQueue](qs []Q, i int) RxQueue {
	if i < 0 || i >= len(qs) {
		return nil
	}
	return qs[i]
}

// TxQueueAt returns qs[i] as a TxQueue, or nil when i is out of range, as
// RxQueueAt does.
func TxQueueAt[Q TxQueue](qs []Q, i int) TxQueue {
	if i < 0 || i >= len(qs) {
		return nil
	}
	return qs[i]
}
