package nic

import "github.com/xnic-dev/xnic/dma"

// Ordering of a descriptor handover, and where each of Linux's barriers is in
// xnic's drivers (igb, dwmac, fec). The word that hands a descriptor over (igb
// status with DD, dwmac DES3 with OWN, fec word 0 with E/R) and every device
// register are accessed with one aligned 32-bit sync/atomic operation (the
// drivers' desc_unsafe.go, physmem's and vfio's regs): never split, merged or
// elided by the compiler, as readl/writel and READ_ONCE/WRITE_ONCE are not in
// the kernel. On arm64 these are LDAR (load-acquire) and STLR (store-release)
// of a W register; on amd64 a MOVL load and an XCHGL store.
//
//   - dma_wmb before handing a descriptor over: the owner word is stored last,
//     with the release store, so the buffer address and length stored before it
//     are observed first.
//   - wmb before the tail/doorbell write (igb RDT/TDT, dwmac tail pointers, fec
//     RDAR/TDAR): on memory the device does not snoop, the descriptors and
//     buffers are cleaned with Allocator.Sync(ForDevice) first, which on arm64
//     ends with DSB SY (physmem), so the clean is complete before the register
//     store; the register store is itself a release, ordered after every
//     earlier store (Linux's arm64 writel puts a DMB OSHST before a plain STR).
//   - dma_rmb after reading an owner bit: the owner word is read with the
//     acquire load before any other field of the descriptor, and the other
//     fields only once it shows the device is done; on non-snooping memory
//     Sync(ForCPU) (DC CIVAC, DSB SY) runs before that load.
//
// Other descriptor fields are plain loads and stores: the driver writes them
// only while it owns the descriptor and reads them only after the acquire load
// said the device gave it back, so their width does not matter.

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

// HeldElsewhere reports whether a TX queue must refuse b because the caller
// handing it over does not own it: it is on a TX ring already (given twice,
// in one Send or while still in flight), posted on an RX ring, or back on its
// pool's free list. Send counts such a buffer and neither sends nor frees it:
// it belongs to someone else.
func HeldElsewhere(b *dma.Buf) bool {
	if b == nil {
		return false
	}
	switch b.Owner() {
	case dma.OwnerTx, dma.OwnerRx, dma.OwnerFree:
		return true
	}
	return false
}
