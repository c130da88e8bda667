package vfio

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dma"
)

// Type1Allocator is the dma.Allocator of a VFIO type1 container: anonymous memory,
// populated and mlocked, mapped into the container's IOMMU domain with
// VFIO_IOMMU_MAP_DMA at an IOVA an IOVAAllocator picks inside the ranges the
// kernel reports usable. It is safe for concurrent use.
//
// Ownership: the allocator owns every Region it returned until Free; the caller
// owns the bytes' contents. Check accepts only bytes of live Regions (not the
// padding up to the page boundary, which is mapped but belongs to nobody).
type Type1Allocator struct {
	mapper    dmaMapper                       // immutable
	iova      *IOVAAllocator                  // immutable pointer; safe for concurrent use
	page      uint64                          // CPU allocation unit: host page, IOMMU granule or huge page; immutable
	hugeShift int                             // log2 of the huge page size, 0 without; immutable
	limit     uint64                          // exclusive IOVA limit, 0 none; immutable
	syncFn    func(b []byte, dir dma.SyncDir) // immutable
	ownSync   bool                            // the caller supplied syncFn (WithSync); immutable

	mu     sync.Mutex
	maps   []*mapping // sorted by IOVA; guarded by mu
	closed bool       // guarded by mu
}

var _ dma.Allocator = (*Type1Allocator)(nil)

type mapping struct {
	iova   uint64 // device address of mem[0]
	mem    []byte // the whole mmapped block (a multiple of page)
	region *dma.Region
}

// dmaMapper is what the allocator asks of the IOMMU: the container in real use, a
// recording fake in tests.
type dmaMapper interface {
	mapDMA(vaddr, iova, size uint64) error
	unmapDMA(iova, size uint64) error
}

// containerMapper issues VFIO_IOMMU_MAP_DMA / UNMAP_DMA on a container fd.
type containerMapper struct{ fd int }

func (c containerMapper) mapDMA(vaddr, iova, size uint64) error {
	_, err := ioctl(c.fd, reqIOMMUMapDMA, dmaMapBuf(vaddr, iova, size))
	return err
}

func (c containerMapper) unmapDMA(iova, size uint64) error {
	b := dmaUnmapBuf(iova, size)
	if _, err := ioctl(c.fd, reqIOMMUUnmapDMA, b); err != nil {
		return err
	}
	// The kernel writes back how much it unmapped.
	if got := ne.Uint64(b[16:]); got != size {
		return fmt.Errorf("unmapped %#x of %#x bytes", got, size)
	}
	return nil
}

func noSync([]byte, dma.SyncDir) {}

// allocConfig is what Open passes to newType1Allocator.
type allocConfig struct {
	hugePage uint64 // huge page size, 0 for normal pages
	limit    uint64 // exclusive IOVA limit, 0 none
	sync     func([]byte, dma.SyncDir)
}

// defaultIOVARanges is used when the kernel does not report usable ranges
// (kernels before 5.4): 1 MiB to 512 GiB (39 bits, what every VT-d and SMMU
// supports), minus the x86 MSI window.
var defaultIOVARanges = []IOVARange{{Start: 1 << 20, Last: 0xFEDFFFFF}, {Start: 0xFEF00000, Last: 1<<39 - 1}}

func newType1Allocator(m dmaMapper, info iommuInfo, cfg allocConfig) (*Type1Allocator, error) {
	page := uint64(os.Getpagesize())
	if info.PageSizes != 0 {
		// The smallest IOMMU page is the finest granule of a mapping.
		page = max(page, info.PageSizes&-info.PageSizes)
	}
	shift := 0
	if cfg.hugePage != 0 {
		if cfg.hugePage&(cfg.hugePage-1) != 0 || cfg.hugePage < page {
			return nil, fmt.Errorf("vfio: huge page size %#x is not a power of two of at least %#x", cfg.hugePage, page)
		}
		page, shift = cfg.hugePage, log2(cfg.hugePage)
	}
	ranges := info.Ranges
	if ranges == nil {
		ranges = defaultIOVARanges
	}
	ia, err := NewIOVAAllocator(ranges, page, cfg.limit)
	if err != nil {
		return nil, err
	}
	fn := cfg.sync
	if fn == nil {
		fn = archSync
	}
	return &Type1Allocator{mapper: m, iova: ia, page: page, hugeShift: shift, limit: cfg.limit, syncFn: fn,
		ownSync: cfg.sync != nil}, nil
}

// PageSize is the unit in which memory is allocated and mapped.
func (a *Type1Allocator) PageSize() int { return int(a.page) }

// IOVA is the allocator's address space, for diagnostics.
func (a *Type1Allocator) IOVA() *IOVAAllocator { return a.iova }

// Alloc implements dma.Allocator.
func (a *Type1Allocator) Alloc(size, align int) (*dma.Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("vfio: DMA allocation of %d bytes", size)
	}
	if align < 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("vfio: DMA alignment %d is not a power of two", align)
	}
	msize, ok := alignUp(uint64(size), a.page)
	if !ok || msize > 1<<40 {
		return nil, fmt.Errorf("%w: DMA allocation of %d bytes", dma.ErrNoMemory, size)
	}
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("vfio: DMA allocation: allocator closed")
	}
	mem, err := mmapAnon(int(msize), a.hugeShift)
	if err != nil {
		hint := ""
		if a.hugeShift != 0 {
			hint = fmt.Sprintf("; reserve huge pages: echo N > /sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", a.page>>10)
		}
		return nil, fmt.Errorf("%w: mmap %d bytes: %v%s", dma.ErrNoMemory, msize, err, hint)
	}
	if err := mlock(mem); err != nil {
		munmap(mem)
		return nil, fmt.Errorf("%w: mlock %d bytes: %v (raise the locked-memory limit: ulimit -l, or LimitMEMLOCK= in a systemd unit)", dma.ErrNoMemory, msize, err)
	}
	iova, _, err := a.iova.Alloc(msize, max(uint64(align), a.page))
	if err != nil {
		munmap(mem)
		return nil, fmt.Errorf("vfio: DMA allocation of %d bytes: %w", size, err)
	}
	if err := a.mapper.mapDMA(addrOf(mem), iova, msize); err != nil {
		a.iova.Free(iova)
		munmap(mem)
		hint := ""
		if errnoIs(err, unix.ENOMEM) {
			hint = " (VFIO counts pinned memory against RLIMIT_MEMLOCK: raise it with ulimit -l)"
		}
		return nil, fmt.Errorf("%w: VFIO_IOMMU_MAP_DMA of %#x bytes at IOVA %#x: %v%s", dma.ErrNoMemory, msize, iova, err, hint)
	}
	r := &dma.Region{CPU: mem[:size:size], IOVA: iova}
	m := &mapping{iova: iova, mem: mem, region: r}
	a.mu.Lock()
	i, _ := slices.BinarySearchFunc(a.maps, iova, cmpMapping)
	a.maps = slices.Insert(a.maps, i, m)
	a.mu.Unlock()
	return r, nil
}

func cmpMapping(m *mapping, iova uint64) int {
	switch {
	case m.iova < iova:
		return -1
	case m.iova > iova:
		return 1
	}
	return 0
}

// Free implements dma.Allocator: VFIO_IOMMU_UNMAP_DMA, then munmap.
func (a *Type1Allocator) Free(r *dma.Region) error {
	if r == nil {
		return fmt.Errorf("vfio: free of a nil region")
	}
	a.mu.Lock()
	i, found := slices.BinarySearchFunc(a.maps, r.IOVA, cmpMapping)
	if !found || a.maps[i].region != r {
		a.mu.Unlock()
		return fmt.Errorf("vfio: free of region at IOVA %#x: %w (not allocated here, or already freed)", r.IOVA, dma.ErrNotMapped)
	}
	m := a.maps[i]
	a.maps = slices.Delete(a.maps, i, i+1)
	a.mu.Unlock()
	return a.release(m)
}

// release unmaps one mapping from the IOMMU and the process.
func (a *Type1Allocator) release(m *mapping) error {
	if err := a.mapper.unmapDMA(m.iova, uint64(len(m.mem))); err != nil {
		// The device may still reach the memory: keep it out of reuse rather than
		// hand the IOVA or the pages to someone else.
		return fmt.Errorf("vfio: VFIO_IOMMU_UNMAP_DMA at IOVA %#x: %w (memory kept pinned)", m.iova, err)
	}
	if err := a.iova.Free(m.iova); err != nil {
		return err
	}
	if err := munmap(m.mem); err != nil {
		return fmt.Errorf("vfio: munmap DMA memory: %w", err)
	}
	return nil
}

// Sync implements dma.Allocator. VFIO type1 memory is cache coherent (see
// archSync); the call costs a function call and a bounds check.
func (a *Type1Allocator) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	if r == nil || off < 0 || n <= 0 || off > len(r.CPU) || n > len(r.CPU)-off {
		return
	}
	a.syncFn(r.CPU[off:off+n], dir)
}

// Coherent reports that Sync may be skipped: VFIO type1 memory is cache
// coherent on every architecture, because the kernel admits a device to a type1
// container only when its IOMMU domain reports IOMMU_CAP_CACHE_COHERENCY
// (drivers/vfio: the group is refused otherwise, and every mapping is made with
// IOMMU_CACHE). Drivers probe for this method (igb.Coherent) and then leave the
// Sync calls out of their fast paths. An allocator built with WithSync, whose
// caller asked for cache maintenance of its own, reports false so that its
// function still runs.
func (a *Type1Allocator) Coherent() bool { return !a.ownSync }

// Check implements dma.Allocator.
func (a *Type1Allocator) Check(iova uint64, n int) error {
	if n < 0 {
		return fmt.Errorf("vfio: check of %d bytes at IOVA %#x: %w", n, iova, dma.ErrNotMapped)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The last mapping starting at or below iova is the only candidate.
	i, found := slices.BinarySearchFunc(a.maps, iova, cmpMapping)
	if !found {
		i--
	}
	if i >= 0 && i < len(a.maps) && a.maps[i].region.Contains(iova, n) {
		return nil
	}
	return fmt.Errorf("vfio: [%#x, +%d) is not inside a live DMA region: %w", iova, n, dma.ErrNotMapped)
}

// Limit implements dma.Allocator: the configured limit, else the top of the
// usable IOVA ranges.
func (a *Type1Allocator) Limit() uint64 {
	if a.limit != 0 {
		return a.limit
	}
	return a.iova.Top()
}

// Mapped is the number of live regions.
func (a *Type1Allocator) Mapped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.maps)
}

// close frees every region; the allocator refuses allocations afterwards.
func (a *Type1Allocator) close() error {
	a.mu.Lock()
	maps := a.maps
	a.maps = nil
	a.closed = true
	a.mu.Unlock()
	var first error
	for _, m := range maps {
		if err := a.release(m); err != nil && first == nil {
			first = err
		}
	}
	return first
}
