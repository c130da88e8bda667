package nic

import (
	"fmt"

	"github.com/xnic-dev/xnic/dma"
)

// UncachedAllocator is an allocator that can also hand out memory the CPU
// maps non-cacheable (physmem's Uncached over reserved memory on a board,
// sim.Memory in the models): where a DMA that does not snoop the caches
// writes descriptors back into a ring whose other descriptors the CPU
// prepares, as dma_alloc_coherent gives Linux's drivers on a non-coherent
// arm64 device.
type UncachedAllocator interface {
	AllocUncached(size, align int) (*dma.Region, error)
}

// AllocatorNonCoherent reports whether a says its memory is not coherent with
// the device (optional NonCoherent() bool or CacheLine() int methods); an
// allocator that says nothing is taken as coherent.
func AllocatorNonCoherent(a dma.Allocator) bool {
	if nc, ok := a.(interface{ NonCoherent() bool }); ok && nc.NonCoherent() {
		return true
	}
	if cl, ok := a.(interface{ CacheLine() int }); ok && cl.CacheLine() > 0 {
		return true
	}
	return false
}

// CheckBufferLines refuses a pool frame size that would let two buffers share
// a cache line of a's (a CacheLine() int method): the clean or invalidate of
// one buffer would then act on its neighbour, which another owner may hold.
// The headroom is a whole number of lines for lines up to dma.Headroom.
func CheckBufferLines(a dma.Allocator, frameSize int) error {
	cl, ok := a.(interface{ CacheLine() int })
	if !ok || cl.CacheLine() <= 0 {
		return nil
	}
	if l := cl.CacheLine(); frameSize%l != 0 || dma.Headroom%l != 0 {
		return fmt.Errorf("frame size %d (headroom %d): want a multiple of the %d-byte cache line, so no two buffers share a line", frameSize, dma.Headroom, l)
	}
	return nil
}
