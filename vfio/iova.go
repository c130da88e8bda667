package vfio

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/xnic-dev/xnic/dma"
)

// IOVAAllocator hands out device addresses from a set of usable ranges (as
// VFIO_IOMMU_GET_INFO's IOVA-range capability reports them: on x86 the MSI window
// 0xfee00000-0xfeefffff and reserved regions are holes). It only does arithmetic:
// mapping the memory is the caller's business. It is safe for concurrent use.
//
// Allocation is first fit from the lowest address, so addresses are small and
// predictable; every block is a multiple of the granule (the page size) and
// aligned to at least the granule.
type IOVAAllocator struct {
	granule uint64

	mu    sync.Mutex
	free  []IOVARange       // sorted, disjoint, non-adjacent; guarded by mu
	inUse map[uint64]uint64 // start -> size of live blocks; guarded by mu
}

// NewIOVAAllocator makes an allocator over ranges, clipped to addresses below
// limit (exclusive; 0: no limit). granule is a power of two (the page size); range
// edges are trimmed inwards to it. Address 0 is never handed out, so a zeroed
// descriptor never points at live memory.
func NewIOVAAllocator(ranges []IOVARange, granule, limit uint64) (*IOVAAllocator, error) {
	if granule == 0 || granule&(granule-1) != 0 {
		return nil, fmt.Errorf("vfio: IOVA granule %#x is not a power of two", granule)
	}
	a := &IOVAAllocator{granule: granule, inUse: map[uint64]uint64{}}
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(x, y IOVARange) int {
		switch {
		case x.Start < y.Start:
			return -1
		case x.Start > y.Start:
			return 1
		}
		return 0
	})
	for _, r := range rs {
		if r.Last < r.Start {
			return nil, fmt.Errorf("vfio: IOVA range %v ends before it starts", r)
		}
		if r.Start == 0 {
			r.Start = granule // keep IOVA 0 unused
			if r.Last < r.Start {
				continue
			}
		}
		if limit != 0 {
			if r.Start >= limit {
				continue
			}
			r.Last = min(r.Last, limit-1)
		}
		start, ok := alignUp(r.Start, granule)
		if !ok {
			continue
		}
		// Round the end down to a whole granule. end is exclusive and wraps to 0
		// when the range reaches the top of the 64-bit space.
		end := (r.Last + 1) &^ (granule - 1)
		if end == 0 && r.Last != ^uint64(0) {
			continue // less than one granule
		}
		last := end - 1
		if last < start {
			continue
		}
		a.insertFree(IOVARange{Start: start, Last: last})
	}
	if len(a.free) == 0 {
		return nil, fmt.Errorf("%w: no usable IOVA range in %v (granule %#x, limit %#x)", dma.ErrNoMemory, ranges, granule, limit)
	}
	return a, nil
}

// alignUp rounds x up to a multiple of align (a power of two); ok is false on
// overflow.
func alignUp(x, align uint64) (uint64, bool) {
	y := (x + align - 1) &^ (align - 1)
	return y, y >= x
}

// Granule is the allocation unit.
func (a *IOVAAllocator) Granule() uint64 { return a.granule }

// Alloc reserves size bytes (rounded up to the granule) at an address aligned to
// align (a power of two; smaller than the granule means the granule). It returns
// the address and the reserved size. Errors wrap dma.ErrNoMemory.
func (a *IOVAAllocator) Alloc(size, align uint64) (iova, reserved uint64, err error) {
	if size == 0 {
		return 0, 0, fmt.Errorf("vfio: IOVA allocation of 0 bytes")
	}
	if align&(align-1) != 0 {
		return 0, 0, fmt.Errorf("vfio: IOVA alignment %#x is not a power of two", align)
	}
	align = max(align, a.granule)
	sz, ok := alignUp(size, a.granule)
	if !ok {
		return 0, 0, fmt.Errorf("%w: IOVA allocation of %#x bytes", dma.ErrNoMemory, size)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, r := range a.free {
		start, ok := alignUp(r.Start, align)
		if !ok || start > r.Last || r.Last-start+1 < sz {
			continue
		}
		last := start + sz - 1
		// Split r into the part before start and the part after last.
		var parts []IOVARange
		if start > r.Start {
			parts = append(parts, IOVARange{Start: r.Start, Last: start - 1})
		}
		if last < r.Last {
			parts = append(parts, IOVARange{Start: last + 1, Last: r.Last})
		}
		a.free = slices.Replace(a.free, i, i+1, parts...)
		a.inUse[start] = sz
		return start, sz, nil
	}
	return 0, 0, fmt.Errorf("%w: no free IOVA block of %#x bytes aligned to %#x (free: %v)", dma.ErrNoMemory, sz, align, a.free)
}

// Free gives back a block returned by Alloc. Freeing an address that is not the
// start of a live block is an error, and changes nothing.
func (a *IOVAAllocator) Free(iova uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	sz, ok := a.inUse[iova]
	if !ok {
		return fmt.Errorf("vfio: IOVA %#x is not an allocated block (double free?)", iova)
	}
	delete(a.inUse, iova)
	a.insertFree(IOVARange{Start: iova, Last: iova + sz - 1})
	return nil
}

// insertFree adds r to the free list, merging neighbours. r overlaps nothing free.
func (a *IOVAAllocator) insertFree(r IOVARange) {
	i, _ := slices.BinarySearchFunc(a.free, r.Start, func(x IOVARange, t uint64) int {
		switch {
		case x.Start < t:
			return -1
		case x.Start > t:
			return 1
		}
		return 0
	})
	// Merge with the previous range when adjacent (or overlapping, for ranges
	// given to the constructor that overlap).
	if i > 0 && (a.free[i-1].Last == ^uint64(0) || a.free[i-1].Last+1 >= r.Start) {
		i--
		r.Start = a.free[i].Start
		r.Last = max(r.Last, a.free[i].Last)
		a.free = slices.Delete(a.free, i, i+1)
	}
	for i < len(a.free) && r.Last != ^uint64(0) && a.free[i].Start <= r.Last+1 {
		r.Last = max(r.Last, a.free[i].Last)
		a.free = slices.Delete(a.free, i, i+1)
	}
	a.free = slices.Insert(a.free, i, r)
}

// FreeRanges returns a copy of the free list, for diagnostics and tests.
func (a *IOVAAllocator) FreeRanges() []IOVARange {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.free)
}

// InUse is the number of live blocks.
func (a *IOVAAllocator) InUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.inUse)
}

// Top is one past the highest usable address, 0 when that is 2^64.
func (a *IOVAAllocator) Top() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	top := uint64(0)
	for _, r := range a.free {
		top = max(top, r.Last+1)
		if r.Last == ^uint64(0) {
			return 0
		}
	}
	for s, sz := range a.inUse {
		if s+sz-1 == ^uint64(0) {
			return 0
		}
		top = max(top, s+sz)
	}
	return top
}

// log2 of a power of two.
func log2(x uint64) int { return bits.TrailingZeros64(x) }
