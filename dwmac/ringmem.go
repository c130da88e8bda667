package dwmac

import (
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Ring memory.
//
// The DMA writes descriptors back (RX status and length, TX completion) into
// the ring while the CPU prepares other descriptors of the same ring, and four
// 16-byte descriptors share one 64-byte line of the i.MX8MP's Cortex-A53 data
// cache. Where the DMA does not snoop the caches, any write-back of such a line
// by the CPU (the clean after refilling one descriptor, or an eviction at a
// moment nobody chooses) stores the CPU's stale copy of the neighbours over what
// the DMA wrote into them: a received frame's status lost, a descriptor handed
// back to the DMA twice. stmmac never meets this: it allocates its rings with
// dma_alloc_coherent (stmmac_main.c, alloc_dma_rx_desc_resources), which on a
// non-coherent arm64 device maps them non-cacheable (dma-direct with
// arch_dma_prep_coherent and pgprot_dmacoherent).
//
// This driver does the same. When the allocator is not coherent (it reports
// NonCoherent() true or a CacheLine() above 0) the rings come from its
// AllocUncached(size, align) method: memory the CPU maps non-cacheable, where
// CPU and DMA see the same bytes and no line is ever written back (physmem's
// Uncached over a reserved-memory region on a board, sim.Memory in the
// models). An allocator that is not coherent and has no uncached memory is
// refused at Open with an error saying what the board must provide. The
// other way out, a ring discipline that never lets the CPU hold a dirty line
// the DMA may write (the fec driver's fallback), would cost this driver whole
// lines of RX descriptors and serialised TX bursts, or padded descriptors
// (DMA_CHx_Control.DSL), which stmmac does not use and no model here checks;
// uncached rings cost neither.
//
// The descriptor Syncs stay where stmmac has its barriers; on uncached memory
// they do nothing. Packet buffers stay cached and are synced in whole lines at
// the points stmmac calls dma_sync_single_for_device / _for_cpu (rx.go, tx.go):
// dma.Pool slots are multiples of 64 bytes from page-aligned regions, so a
// buffer never shares a line with another buffer.

// ErrCachedRings is wrapped by Open when the DMA is not cache-coherent and the
// allocator has no uncached memory for the descriptor rings.
var ErrCachedRings = fmt.Errorf("descriptor rings would share cache lines with the DMA's write-backs: %w", nic.ErrNotSupported)

// chooseRingMemory decides where the rings go (p.uncachedRings) before any is
// allocated.
func (p *Port) chooseRingMemory() error {
	if !nic.AllocatorNonCoherent(p.alloc) {
		return nil
	}
	if err := nic.CheckBufferLines(p.alloc, p.cfg.FrameSize); err != nil {
		return err
	}
	if _, ok := p.alloc.(nic.UncachedAllocator); ok {
		p.uncachedRings = true
		return nil
	}
	if p.cfg.cachedRings {
		return nil
	}
	return fmt.Errorf("the DMA is not cache-coherent and the allocator (%T) offers no uncached memory: "+
		"on an i.MX8MP give the port physmem.Uncached over RAM the kernel does not use "+
		"(a reserved-memory node with no-map, or mem= below the end of RAM): %w", p.alloc, ErrCachedRings)
}

// allocRing allocates a descriptor ring of size bytes, uncached when the
// platform needs it.
func (p *Port) allocRing(size int) (*dma.Region, error) {
	if p.uncachedRings {
		return p.alloc.(nic.UncachedAllocator).AllocUncached(size, ringAlign)
	}
	return p.alloc.Alloc(size, ringAlign)
}

// ringAlign is the alignment of a ring: more than the 4 bytes the DMA needs,
// so a ring starts on a cache line (of up to 128 bytes) wherever it lives.
const ringAlign = 128

// UncachedRings reports whether the descriptor rings are in uncached memory
// (the DMA is not coherent and the allocator provided it).
func (p *Port) UncachedRings() bool { return p.uncachedRings }
