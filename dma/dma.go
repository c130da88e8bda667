package dma

import (
	"errors"
	"fmt"
)

// SyncDir says which side's writes a Sync makes visible to the other.
type SyncDir uint8

const (
	// ForDevice makes CPU writes visible to the device (clean the cache; the
	// kernel's dma_sync_*_for_device). Call it after filling a buffer or descriptor
	// and before handing it to the device.
	ForDevice SyncDir = iota + 1
	// ForCPU makes device writes visible to the CPU (invalidate; the kernel's
	// dma_sync_*_for_cpu). Call it before reading what the device wrote.
	ForCPU
)

func (d SyncDir) String() string {
	switch d {
	case ForDevice:
		return "for-device"
	case ForCPU:
		return "for-cpu"
	}
	return fmt.Sprintf("SyncDir(%d)", uint8(d))
}

// Region is DMA memory seen from both sides. CPU and IOVA describe the same bytes;
// both are immutable for the life of the Region. A Region stays valid until the
// Allocator that made it frees it or is closed.
type Region struct {
	CPU  []byte // the CPU's view; len(CPU) is the size of the region
	IOVA uint64 // the device's address of CPU[0]
}

// Len is the size of the region in bytes.
func (r *Region) Len() int { return len(r.CPU) }

// Contains reports whether [iova, iova+n) lies inside the region.
func (r *Region) Contains(iova uint64, n int) bool {
	return n >= 0 && iova >= r.IOVA && iova-r.IOVA+uint64(n) <= uint64(len(r.CPU))
}

// Allocator hands out DMA memory for one device.
//
// Implementations must be safe for concurrent use by several goroutines.
type Allocator interface {
	// Alloc returns zeroed memory of size bytes whose IOVA is aligned to align
	// (a power of two; 0 means the allocator's page size). The memory stays mapped
	// for the device until Free or the allocator's device is closed.
	Alloc(size, align int) (*Region, error)
	// Free unmaps and releases a Region returned by Alloc.
	Free(r *Region) error
	// Sync makes [off, off+n) of r coherent in direction dir. On cache-coherent
	// platforms it does nothing; on others (i.MX8) it performs cache maintenance,
	// and the device models in non-coherent mode copy, so a missing Sync is seen.
	Sync(r *Region, off, n int, dir SyncDir)
	// Check returns an error wrapping ErrNotMapped unless every byte of
	// [iova, iova+n) is memory this allocator mapped for the device. Drivers call it
	// on addresses that did not come from their own pools before a descriptor
	// carries them to the device.
	Check(iova uint64, n int) error
	// Limit is the highest device address (exclusive) the allocator may return,
	// 0 when unlimited. A driver whose device has fewer address bits (FEC: 32)
	// refuses an allocator whose memory can lie above its limit.
	Limit() uint64
}

// Errors returned by allocators and pools. They are wrapped with context.
var (
	ErrNotMapped = errors.New("dma: address not mapped for the device")
	ErrNoMemory  = errors.New("dma: out of DMA memory")
	ErrTooHigh   = errors.New("dma: memory above the device's address limit")
	// ErrNoCacheMaintenance: cached memory the device does not snoop, on a
	// CPU whose user mode cannot clean or invalidate cache lines (32-bit ARM).
	// Such memory can never be made coherent; only uncached memory works.
	ErrNoCacheMaintenance = errors.New("dma: user space cannot maintain the data cache on this CPU")
)

// An allocator whose Sync cannot make its cached memory coherent says so with
// an optional method CacheMaintenance() bool returning false (sim's ARMv7 cache
// model; physmem refuses to build such an allocator at all). A driver given
// one refuses with ErrNoCacheMaintenance unless all its memory is uncached.
