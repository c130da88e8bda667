package physmem

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/xnic-dev/xnic/dma"
)

// PageSource supplies the memory an Allocator carves regions from: locked,
// populated, zeroed pages whose physical address it can tell. HugePages is the
// real one; tests inject fakes.
type PageSource interface {
	// PageSize is the size of one page (a power of two).
	PageSize() int
	// Map returns size bytes (a multiple of PageSize), zeroed, populated and
	// locked in memory.
	Map(size int) ([]byte, error)
	// Unmap releases memory returned by Map.
	Unmap(mem []byte) error
	// Phys returns the physical address of mem[off], off a multiple of PageSize.
	Phys(mem []byte, off int) (uint64, error)
}

// Config sets up an Allocator. The zero value uses default huge pages, no
// address limit and the architecture's cache maintenance.
type Config struct {
	// Source supplies the pages. nil: HugePages of the system's default size.
	Source PageSource
	// Limit is the exclusive upper bound of physical addresses handed out
	// (1<<32 for the FEC). 0: none.
	Limit uint64
	// Coherent says the device snoops the CPU caches: Sync does nothing. The
	// i.MX8 MACs are not coherent; leave it false there.
	Coherent bool
	// SyncFunc replaces the cache maintenance Sync performs (tests count calls
	// with it). nil: DC CVAC / DC CIVAC on arm64, nothing on amd64.
	SyncFunc func(b []byte, dir dma.SyncDir)
	// CacheLine overrides the cache write-back granule CacheLine reports. 0:
	// the CPU's (CTR_EL0.CWG on arm64, 0 on amd64).
	CacheLine int
	// ContigTries is how many times Alloc asks for a fresh run of pages when a
	// region larger than one page came back physically scattered. 0: 4.
	ContigTries int
}

// Allocator is a dma.Allocator over physical memory: a Region's IOVA is its
// physical address. Safe for concurrent use.
//
// Small regions (rings) share a chunk of pages, handed out in order and never
// reused until the whole chunk is free (so memory is always returned zeroed).
// A region larger than a page gets its own chunk, which must be physically
// contiguous: Alloc checks every page's address.
type Allocator struct {
	src     PageSource                      // immutable
	page    int                             // immutable
	limit   uint64                          // immutable
	syncFn  func(b []byte, dir dma.SyncDir) // immutable; nil when coherent
	retries int                             // immutable
	line    int                             // immutable; see CacheLine

	mu      sync.Mutex
	chunks  []*chunk // live chunks; guarded by mu
	shared  *chunk   // chunk small regions are carved from; guarded by mu
	regions []*live  // live regions sorted by IOVA; guarded by mu
	closed  bool     // guarded by mu
}

var _ dma.Allocator = (*Allocator)(nil)

// chunk is one mapping from the page source: physically contiguous pages.
type chunk struct {
	mem  []byte
	phys uint64 // physical address of mem[0]
	used int    // bytes handed out from the start; guarded by Allocator.mu
	live int    // regions still allocated in it; guarded by Allocator.mu
}

type live struct {
	iova   uint64
	region *dma.Region
	chunk  *chunk
}

// ErrClosed is returned by an Allocator used after Close.
var ErrClosed = errors.New("physmem: allocator closed")

// ErrNoCacheMaintenance is returned by NewAllocator for cached memory shared
// with a device that does not snoop the caches, on a CPU whose user mode
// cannot clean or invalidate cache lines (32-bit ARM: sync_nomaint.go). The
// error it is wrapped in says what the board must provide instead.
var ErrNoCacheMaintenance = dma.ErrNoCacheMaintenance

// noMaintenanceHint is what a board without cache maintenance from user space
// needs for a non-coherent MAC.
const noMaintenanceHint = "ARMv7 user mode cannot clean or invalidate data cache lines (the CP15 c7 " +
	"operations by address are PL1-only), so every DMA buffer and ring of a non-coherent MAC must be " +
	"mapped uncached: reserve RAM below 4 GiB from the kernel (boot with mem= below it, or a " +
	"devicetree reserved-memory node with no-map) and name it with --platform NAME@ADDR,uncached=PHYS+SIZE " +
	"(physmem.OpenUncached)"

// NewAllocator makes an Allocator. With cfg.Source nil it opens huge pages of
// the default size, which fails (with a hint) when the kernel has none.
func NewAllocator(cfg Config) (*Allocator, error) {
	if !cfg.Coherent && cfg.SyncFunc == nil && !canSync {
		return nil, fmt.Errorf("%w (%s/%s): %s", ErrNoCacheMaintenance, runtime.GOOS, runtime.GOARCH, noMaintenanceHint)
	}
	src := cfg.Source
	if src == nil {
		hp, err := NewHugePages(HugePagesConfig{})
		if err != nil {
			return nil, err
		}
		src = hp
	}
	page := src.PageSize()
	if page <= 0 || page&(page-1) != 0 {
		return nil, fmt.Errorf("physmem: page size %d is not a power of two", page)
	}
	a := &Allocator{src: src, page: page, limit: cfg.Limit, retries: cfg.ContigTries}
	if a.retries <= 0 {
		a.retries = 4
	}
	if !cfg.Coherent {
		a.syncFn = cfg.SyncFunc
		a.line = cfg.CacheLine
		if a.syncFn == nil {
			a.syncFn = archSync
			if a.line == 0 {
				a.line = writebackGranule
			}
		}
	}
	return a, nil
}

// CacheLine is the granule in which the CPU's caches write memory back (0 when
// the memory is coherent): a driver keeping several descriptors in one line
// must not clean a line while the device may write another descriptor in it.
func (a *Allocator) CacheLine() int { return a.line }

// PageSize is the size of the pages regions are carved from.
func (a *Allocator) PageSize() int { return a.page }

// Alloc implements dma.Allocator. align 0 means the page size.
func (a *Allocator) Alloc(size, align int) (*dma.Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("physmem: allocation of %d bytes: size must be positive", size)
	}
	if align == 0 {
		align = a.page
	}
	if align < 0 || align&(align-1) != 0 || align > a.page {
		return nil, fmt.Errorf("physmem: alignment %d: want a power of two up to the page size %d", align, a.page)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	if c := a.shared; c != nil {
		off := (c.used + align - 1) &^ (align - 1)
		if off+size <= len(c.mem) {
			return a.carve(c, off, size), nil
		}
	}
	c, err := a.newChunk(size)
	if err != nil {
		return nil, err
	}
	a.chunks = append(a.chunks, c)
	r := a.carve(c, 0, size)
	if c.used < len(c.mem) && (a.shared == nil || len(c.mem)-c.used > len(a.shared.mem)-a.shared.used) {
		a.shared = c
	}
	return r, nil
}

// carve hands out [off, off+size) of c. Called with mu held.
func (a *Allocator) carve(c *chunk, off, size int) *dma.Region {
	r := &dma.Region{CPU: c.mem[off : off+size : off+size], IOVA: c.phys + uint64(off)}
	c.used = off + size
	c.live++
	l := &live{iova: r.IOVA, region: r, chunk: c}
	i, _ := slices.BinarySearchFunc(a.regions, r.IOVA, cmpLive)
	a.regions = slices.Insert(a.regions, i, l)
	return r
}

func cmpLive(l *live, iova uint64) int {
	switch {
	case l.iova < iova:
		return -1
	case l.iova > iova:
		return 1
	}
	return 0
}

// newChunk maps enough pages for size bytes and checks they are physically
// contiguous and below the limit. Called with mu held.
func (a *Allocator) newChunk(size int) (*chunk, error) {
	n := (size + a.page - 1) / a.page * a.page
	var held [][]byte // scattered runs kept mapped so the next try gets other pages
	defer func() {
		for _, m := range held {
			a.src.Unmap(m) //nolint:errcheck // best effort on an error path
		}
	}()
	for try := 0; try < a.retries; try++ {
		mem, err := a.src.Map(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %d bytes of huge pages: %w", dma.ErrNoMemory, n, err)
		}
		phys, contiguous, err := a.physRun(mem)
		if err != nil {
			a.src.Unmap(mem) //nolint:errcheck
			return nil, err
		}
		if a.limit != 0 && phys+uint64(n) > a.limit {
			a.src.Unmap(mem) //nolint:errcheck
			return nil, fmt.Errorf("%w: huge page at physical %#x-%#x is above the device's limit %#x: "+
				"reserve memory low for this device (boot with mem= below the limit, a reserved-memory region, "+
				"or CMA placed low) so huge pages come from there", dma.ErrTooHigh, phys, phys+uint64(n), a.limit)
		}
		if contiguous {
			return &chunk{mem: mem, phys: phys}, nil
		}
		held = append(held, mem)
	}
	return nil, fmt.Errorf("%w: no physically contiguous run of %d pages of %d bytes in %d tries: "+
		"ask for regions of at most one page (smaller pools or rings), or use larger huge pages",
		dma.ErrNoMemory, n/a.page, a.page, a.retries)
}

// physRun returns the physical address of mem[0] and whether every page
// follows the previous one.
func (a *Allocator) physRun(mem []byte) (uint64, bool, error) {
	base, err := a.src.Phys(mem, 0)
	if err != nil {
		return 0, false, fmt.Errorf("physmem: physical address of a new page: %w", err)
	}
	if base%uint64(a.page) != 0 {
		return 0, false, fmt.Errorf("physmem: page at physical %#x is not aligned to its size %d (the page source is not giving huge pages)", base, a.page)
	}
	for off := a.page; off < len(mem); off += a.page {
		p, err := a.src.Phys(mem, off)
		if err != nil {
			return 0, false, fmt.Errorf("physmem: physical address of a new page: %w", err)
		}
		if p != base+uint64(off) {
			return base, false, nil
		}
	}
	return base, true, nil
}

// Free implements dma.Allocator. A chunk is unmapped when its last region is
// freed.
func (a *Allocator) Free(r *dma.Region) error {
	if r == nil {
		return fmt.Errorf("physmem: free of a nil region")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i, found := slices.BinarySearchFunc(a.regions, r.IOVA, cmpLive)
	if !found || a.regions[i].region != r {
		return fmt.Errorf("physmem: free of the region at %#x: %w (not allocated here, or freed already)", r.IOVA, dma.ErrNotMapped)
	}
	c := a.regions[i].chunk
	a.regions = slices.Delete(a.regions, i, i+1)
	if c.live--; c.live > 0 {
		return nil
	}
	if a.shared == c {
		a.shared = nil
	}
	a.chunks = slices.DeleteFunc(a.chunks, func(x *chunk) bool { return x == c })
	if err := a.src.Unmap(c.mem); err != nil {
		return fmt.Errorf("physmem: unmapping %d bytes at physical %#x: %w", len(c.mem), c.phys, err)
	}
	return nil
}

// Sync implements dma.Allocator: cache maintenance over [off, off+n) of r
// (nothing on coherent memory). A range outside r is ignored: it is a caller
// bug, and Sync has no error to return.
func (a *Allocator) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	if a.syncFn == nil || r == nil || off < 0 || n <= 0 || off > len(r.CPU)-n {
		return
	}
	a.syncFn(r.CPU[off:off+n], dir)
}

// Check implements dma.Allocator: [iova, iova+n) must lie inside one live
// region.
func (a *Allocator) Check(iova uint64, n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, found := slices.BinarySearchFunc(a.regions, iova, cmpLive)
	if !found {
		i--
	}
	if i >= 0 && i < len(a.regions) && a.regions[i].region.Contains(iova, n) {
		return nil
	}
	return fmt.Errorf("physmem: [%#x, +%d) is not inside a region this allocator handed out: %w", iova, n, dma.ErrNotMapped)
}

// Limit implements dma.Allocator.
func (a *Allocator) Limit() uint64 { return a.limit }

// Chunks is the number of live mappings (for tests and diagnostics).
func (a *Allocator) Chunks() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.chunks)
}

// Close unmaps every chunk. Regions must not be used afterwards.
func (a *Allocator) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	for _, c := range a.chunks {
		if err := a.src.Unmap(c.mem); err != nil {
			errs = append(errs, err)
		}
	}
	a.chunks, a.regions, a.shared = nil, nil, nil
	if src, ok := a.src.(interface{ Close() error }); ok {
		if err := src.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
