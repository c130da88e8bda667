package fec

import (
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Ring memory.
//
// The ENET writes each descriptor back (E or R cleared, status, length) while
// the CPU prepares others of the same ring, and a 64-byte cache line holds
// eight legacy or two enhanced descriptors. Where the DMA does not snoop the
// caches (every i.MX), a CPU write-back of such a line stores the CPU's stale
// copy of the neighbours over what the device wrote. Linux's fec driver never
// meets this: fec_enet_alloc_queue takes its rings from dma_alloc_coherent,
// which on a non-coherent arm64 device maps them non-cacheable.
//
// The driver does the same when it can: when the allocator is not coherent
// (NonCoherent() true, or a CacheLine() above 0) and offers AllocUncached
// (physmem's Uncached over reserved memory on a board, sim.Memory in the
// model), the rings are uncached and need no line discipline. Otherwise they
// are cached, and the driver falls back to the discipline in rx.go and tx.go
// (Config.CacheLine): RX posted in whole lines, TX never writing a line with a
// descriptor in flight, at the cost doc.go states. Uncached rings are
// preferred because the discipline holds back up to a line of RX descriptors
// and serialises small TX bursts; the descriptor Syncs stay in place (they do
// nothing on uncached memory).
//
// Packet buffers stay cached and are synced in whole lines where Linux calls
// dma_sync_single_for_device / _for_cpu: dma.Pool slots are multiples of 64
// bytes carved from page-aligned regions, so no two buffers share a line.

// checkCacheMaintenance refuses cached memory the MAC does not snoop when the
// allocator says its Sync cannot maintain the cache (a CacheMaintenance() bool
// method returning false: 32-bit ARM user space, sim's ARMv7 cache model).
// Uncached rings would not save it: the packet buffers come from Alloc too.
func checkCacheMaintenance(a dma.Allocator) error {
	cm, ok := a.(interface{ CacheMaintenance() bool })
	if !ok || cm.CacheMaintenance() || !nic.AllocatorNonCoherent(a) {
		return nil
	}
	return fmt.Errorf("fec: the DMA memory is cached, the MAC does not snoop it, and it cannot be cleaned or invalidated "+
		"from user mode here: %w; give the port uncached memory for buffers and rings (physmem.Uncached over reserved RAM: "+
		"--platform ...,uncached=PHYS+SIZE)", dma.ErrNoCacheMaintenance)
}

// ringsUncached reports whether the rings of a port on a go in uncached
// memory.
func ringsUncached(a dma.Allocator) bool {
	_, ok := a.(nic.UncachedAllocator)
	return ok && nic.AllocatorNonCoherent(a)
}

// allocRing allocates a descriptor ring of size bytes, aligned to 64 (the
// ENET wants 8; 64 starts the ring on a cache line).
func (p *Port) allocRing(size int) (*dma.Region, error) {
	if p.uncachedRings {
		return p.alloc.(nic.UncachedAllocator).AllocUncached(size, 64)
	}
	return p.alloc.Alloc(size, 64)
}

// UncachedRings reports whether the descriptor rings are in uncached memory
// (then no ring discipline is needed: LineDescriptors is 1).
func (p *Port) UncachedRings() bool { return p.uncachedRings }

// LineDescriptors is the number of descriptors the rings treat as one unit:
// descriptors per cache line with cached rings on a non-coherent platform, 1
// otherwise.
func (p *Port) LineDescriptors() int { return p.lineBDs }
