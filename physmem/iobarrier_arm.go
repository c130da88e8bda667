package physmem

// ioWriteBarrier is DSB ST: every earlier store, to descriptors and buffers
// too, has completed before the register store that follows it (Linux's
// writel on ARMv7: __iowmb() is wmb(), dsb(st) then outer_sync(),
// arch/arm/include/asm/io.h and barrier.h). Go's atomic.StoreUint32 on arm
// only puts a DMB ISH before its STR, which orders for the inner shareable
// domain, not for a DMA master reading Normal Non-cacheable memory through a
// write buffer. (outer_sync, the PL310 L2 controller's cache sync on the
// i.MX6Q/6SX, cannot be done from user space: with the DMA memory mapped
// Strongly-ordered, RAM above mem=, no store is held in that buffer.)
//
//go:noescape
func ioWriteBarrier()
