package physmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dma"
)

// Uncached memory for descriptor rings.
//
// A MAC that is not cache coherent writes descriptors back into lines the CPU
// also caches; the Linux drivers keep their rings in dma_alloc_coherent
// memory, which on such a device is remapped non-cacheable (arm64: Normal
// Non-cacheable, pgprot_dmacoherent). User space cannot remap RAM, but
// /dev/mem can map a physical range, and arm64's phys_mem_access_prot
// (arch/arm64/mm/mmu.c) decides the memory type:
//
//   - a range outside the kernel's linear map (a reserved-memory node with
//     no-map, or RAM above a mem= limit) is mapped Device-nGnRnE
//     (pgprot_noncached): uncached; it is not "System RAM", so a kernel with
//     CONFIG_STRICT_DEVMEM still allows it (devmem_is_allowed refuses RAM
//     only). Device memory takes naturally aligned accesses only: the
//     descriptor accessors of the drivers are aligned 16/32-bit loads and
//     stores; Go's copy and clear are not (and DC ZVA faults), so nothing
//     else may touch it;
//   - a range inside the linear map opened with O_SYNC is mapped Normal
//     Non-cacheable (pgprot_writecombine), the type the kernel gives coherent
//     DMA memory. It is System RAM, so CONFIG_STRICT_DEVMEM must be off, and it
//     must be reserved (a reserved-memory node without no-map: /proc/iomem
//     lists it as "reserved" inside "System RAM"), or the kernel may hand the
//     same pages to someone else.
//
// On 32-bit ARM, arch/arm/mm/mmu.c's phys_mem_access_prot gives a pfn the
// kernel does not map pgprot_noncached (Strongly-ordered) and, with O_SYNC,
// mapped RAM pgprot_writecombine (Normal Non-cacheable). There no user
// maintenance can clean the cacheable alias of reserved RAM still in the
// linear map, so only RAM outside it is taken (above mem=, or no-map), and the
// one-time flush below is not needed (nothing maps it cacheable).
//
// OpenUncached checks the range against /proc/iomem, maps it with O_SYNC, and
// cleans and invalidates it once (DC CIVAC), as arch_dma_prep_coherent does,
// so no line a cacheable alias may hold is written back over it later. The CPU
// and the device then see the same bytes: Sync on it does nothing.

// Errors of OpenUncached, wrapped with context and a hint.
var (
	// ErrNotReserved: the range is RAM the kernel may use.
	ErrNotReserved = errors.New("physmem: the range is not reserved from the kernel")
	// ErrRangeClaimed: a kernel driver or firmware claimed the range.
	ErrRangeClaimed = errors.New("physmem: the range is claimed")
)

// UncachedConfig describes a physical range for uncached memory.
type UncachedConfig struct {
	// Phys and Size are the range: page-aligned, below Limit.
	Phys uint64
	Size int
	// Limit is the exclusive upper bound of device addresses (1<<32 for the
	// FEC). 0: none.
	Limit uint64
	// MemPath replaces "/dev/mem" (tests map a plain file: Phys is then a
	// file offset).
	MemPath string
	// IOMemPath replaces "/proc/iomem".
	IOMemPath string
	// SyncFunc replaces the one-time clean and invalidate (tests). nil: DC
	// CIVAC on arm64, nothing elsewhere.
	SyncFunc func(b []byte, dir dma.SyncDir)
}

// Uncached hands out regions of one uncached physical range: memory the CPU
// and the device see alike. Regions are carved in order and the range is
// reused from its start once every region is free. Safe for concurrent use.
type Uncached struct {
	cfg    UncachedConfig // immutable
	mem    []byte         // the mapping; immutable until Close
	sysRAM bool           // mapped Normal Non-cacheable (System RAM), else Device; immutable

	mu     sync.Mutex
	used   int           // bytes carved from the start; guarded by mu
	live   []*dma.Region // sorted by IOVA; guarded by mu
	closed bool          // guarded by mu
}

// OpenUncached checks and maps cfg's range.
func OpenUncached(cfg UncachedConfig) (*Uncached, error) {
	page := os.Getpagesize()
	if cfg.Size <= 0 || cfg.Size%page != 0 || cfg.Phys%uint64(page) != 0 {
		return nil, fmt.Errorf("physmem: uncached range %#x+%#x: want a page-aligned start and a positive multiple of %d bytes", cfg.Phys, cfg.Size, page)
	}
	end := cfg.Phys + uint64(cfg.Size)
	if end < cfg.Phys || (cfg.Limit != 0 && end > cfg.Limit) {
		return nil, fmt.Errorf("physmem: uncached range %#x-%#x ends above the device's limit %#x: %w (reserve memory lower)", cfg.Phys, end-1, cfg.Limit, dma.ErrTooHigh)
	}
	if cfg.MemPath == "" {
		cfg.MemPath = "/dev/mem"
	}
	if cfg.IOMemPath == "" {
		cfg.IOMemPath = "/proc/iomem"
	}
	sysRAM, err := classifyRange(cfg.IOMemPath, cfg.Phys, uint64(cfg.Size))
	if err != nil {
		return nil, err
	}
	if sysRAM && !canSync && cfg.SyncFunc == nil {
		// Reserved RAM inside the linear map keeps a cacheable alias in the
		// kernel: lines it holds (or prefetches) could be written back over
		// the device's data later, and without user cache maintenance they
		// cannot be cleaned away first (sync_nomaint.go).
		return nil, fmt.Errorf("%w: %#x+%#x is reserved System RAM, which the kernel also maps cacheable, and %s/%s user space cannot "+
			"clean those lines: use RAM outside the kernel's map (a reserved-memory node with no-map, or RAM above a mem= limit)",
			ErrNoCacheMaintenance, cfg.Phys, cfg.Size, runtime.GOOS, runtime.GOARCH)
	}
	fd, err := unix.Open(cfg.MemPath, unix.O_RDWR|unix.O_SYNC|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: open %s: %v (run as root: it needs CAP_SYS_RAWIO)", ErrNoPermission, cfg.MemPath, err)
		}
		return nil, fmt.Errorf("physmem: open %s: %w (a kernel without CONFIG_DEVMEM has no /dev/mem)", cfg.MemPath, err)
	}
	defer unix.Close(fd) //nolint:errcheck // the mapping outlives the descriptor
	mem, err := mmapShared(fd, int64(cfg.Phys), cfg.Size)
	if err != nil {
		hint := "the kernel refuses it"
		if sysRAM {
			hint = "the range is System RAM, which a kernel with CONFIG_STRICT_DEVMEM never maps: give the reserved-memory node no-map (then it is mapped Device-nGnRnE and allowed) or run a kernel without STRICT_DEVMEM"
		} else if errors.Is(err, unix.EPERM) {
			hint = "with CONFIG_IO_STRICT_DEVMEM a range a driver requested is refused: check /proc/iomem"
		}
		return nil, fmt.Errorf("%w: mmap of %s at %#x (%#x bytes): %v: %s", ErrDevMemDenied, cfg.MemPath, cfg.Phys, cfg.Size, err, hint)
	}
	flush := cfg.SyncFunc
	if flush == nil {
		flush = archSync
	}
	flush(mem, dma.ForCPU) // drop whatever a cacheable alias left in the caches
	return &Uncached{cfg: cfg, mem: mem, sysRAM: sysRAM}, nil
}

// classifyRange reads /proc/iomem: it reports whether [phys, +n) is System RAM
// (then it must lie inside one "reserved" entry nested in it) and refuses a
// range a driver claimed. An unreadable file, or one without addresses (read
// without root), passes: the mmap of /dev/mem is the final word.
func classifyRange(path string, phys, n uint64) (sysRAM bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	var reserved bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		raw := sc.Text()
		depth := len(raw) - len(strings.TrimLeft(raw, " "))
		rng, name, ok := strings.Cut(strings.TrimSpace(raw), " : ")
		if !ok {
			continue
		}
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		a, e1 := strconv.ParseUint(lo, 16, 64)
		b, e2 := strconv.ParseUint(hi, 16, 64)
		if e1 != nil || e2 != nil || (a == 0 && b == 0) || a >= phys+n || b < phys {
			continue
		}
		inside := a <= phys && phys+n-1 <= b
		switch {
		case name == "System RAM":
			sysRAM = true
		case name == "reserved" && inside:
			reserved = true
		case name == "reserved":
			return false, fmt.Errorf("%w: %#x+%#x only partly inside the reserved range %s (/proc/iomem)", ErrNotReserved, phys, n, rng)
		case depth > 0 && strings.HasPrefix(name, "Kernel "):
			return false, fmt.Errorf("%w: %#x+%#x overlaps the kernel image (%s: %s in /proc/iomem)", ErrRangeClaimed, phys, n, rng, name)
		default:
			return false, fmt.Errorf("%w: %#x+%#x overlaps %s: %s (/proc/iomem): pick memory nothing else uses", ErrRangeClaimed, phys, n, rng, name)
		}
	}
	if sysRAM && !reserved {
		return false, fmt.Errorf("%w: %#x+%#x is System RAM the kernel allocates from: reserve it with a reserved-memory "+
			"devicetree node (no-map maps it uncached even under STRICT_DEVMEM) or boot with mem= below it", ErrNotReserved, phys, n)
	}
	return sysRAM, nil
}

var _ dma.Allocator = (*Uncached)(nil)

// CacheMaintenance reports whether a user process on this CPU can make cached
// memory coherent with a device that does not snoop (arm64: DC CVAC/CIVAC;
// x86: DMA snoops). False on 32-bit ARM (sync_nomaint.go): a non-coherent
// MAC's DMA memory must then all come from an Uncached range.
func CacheMaintenance() bool { return canSync }

// Alloc implements dma.Allocator with uncached memory (AllocUncached): on a
// CPU without user cache maintenance (32-bit ARM) an Uncached range is the
// whole DMA allocator of a non-coherent MAC, buffers included.
func (u *Uncached) Alloc(size, align int) (*dma.Region, error) { return u.AllocUncached(size, align) }

// Sync implements dma.Allocator: nothing, the CPU and the device see the same
// bytes.
func (u *Uncached) Sync(*dma.Region, int, int, dma.SyncDir) {}

// Limit implements dma.Allocator.
func (u *Uncached) Limit() uint64 { return u.cfg.Limit }

// SystemRAM reports whether the range is reserved System RAM (mapped Normal
// Non-cacheable) rather than memory outside the kernel's map (Device-nGnRnE).
func (u *Uncached) SystemRAM() bool { return u.sysRAM }

// AllocUncached returns zeroed uncached memory of size bytes whose device
// address is aligned to align (a power of two up to the page size; 0: the page
// size).
func (u *Uncached) AllocUncached(size, align int) (*dma.Region, error) {
	page := os.Getpagesize()
	if size <= 0 {
		return nil, fmt.Errorf("physmem: uncached allocation of %d bytes: size must be positive", size)
	}
	if align == 0 {
		align = page
	}
	if align < 0 || align&(align-1) != 0 || align > page {
		return nil, fmt.Errorf("physmem: alignment %d: want a power of two up to the page size %d", align, page)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, ErrClosed
	}
	off := (u.used + align - 1) &^ (align - 1)
	if off+size > len(u.mem) {
		return nil, fmt.Errorf("physmem: uncached allocation of %d bytes with %d of %d in use: %w (reserve a larger range)", size, u.used, len(u.mem), dma.ErrNoMemory)
	}
	b := u.mem[off : off+size : off+size]
	zeroAligned(b)
	r := &dma.Region{CPU: b, IOVA: u.cfg.Phys + uint64(off)}
	u.used = off + size
	i, _ := slices.BinarySearchFunc(u.live, r.IOVA, func(l *dma.Region, iova uint64) int {
		return cmpU64(l.IOVA, iova)
	})
	u.live = slices.Insert(u.live, i, r)
	return r, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// find returns the index of live region r, or -1. Called with mu held.
func (u *Uncached) find(r *dma.Region) int {
	if r == nil {
		return -1
	}
	i, ok := slices.BinarySearchFunc(u.live, r.IOVA, func(l *dma.Region, iova uint64) int {
		return cmpU64(l.IOVA, iova)
	})
	if !ok || u.live[i] != r {
		return -1
	}
	return i
}

// Owns reports whether r is a live region of u.
func (u *Uncached) Owns(r *dma.Region) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.find(r) >= 0
}

// Free releases a region. Once none is live the range is reused from its
// start.
func (u *Uncached) Free(r *dma.Region) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	i := u.find(r)
	if i < 0 {
		return fmt.Errorf("physmem: free of a region that is not live in this uncached range: %w", dma.ErrNotMapped)
	}
	u.live = slices.Delete(u.live, i, i+1)
	if len(u.live) == 0 {
		u.used = 0
	}
	return nil
}

// Check returns nil when [iova, +n) lies inside one live region.
func (u *Uncached) Check(iova uint64, n int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range u.live {
		if r.Contains(iova, n) {
			return nil
		}
	}
	return fmt.Errorf("physmem: [%#x, +%d) is not inside a live uncached region: %w", iova, n, dma.ErrNotMapped)
}

// Close unmaps the range. Regions must not be used afterwards.
func (u *Uncached) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	u.closed = true
	u.live = nil
	return munmap(u.mem)
}

// WithUncached is the allocator of a non-coherent platform MAC: packet
// buffers from a cached Allocator (synced), descriptor rings from Uncached
// memory (AllocUncached, never synced). The dwmac and fec drivers take their
// rings from AllocUncached when the allocator offers it.
type WithUncached struct {
	*Allocator
	u *Uncached
}

var _ dma.Allocator = (*WithUncached)(nil)

// NewWithUncached combines a and u. u's range must lie below a's limit.
func NewWithUncached(a *Allocator, u *Uncached) (*WithUncached, error) {
	if a == nil || u == nil {
		return nil, errors.New("physmem: WithUncached needs an allocator and an uncached range")
	}
	if l := a.Limit(); l != 0 && u.cfg.Phys+uint64(len(u.mem)) > l {
		return nil, fmt.Errorf("physmem: uncached range %#x+%#x passes the allocator's limit %#x: %w", u.cfg.Phys, len(u.mem), l, dma.ErrTooHigh)
	}
	return &WithUncached{Allocator: a, u: u}, nil
}

// AllocUncached returns uncached memory (see Uncached).
func (w *WithUncached) AllocUncached(size, align int) (*dma.Region, error) {
	return w.u.AllocUncached(size, align)
}

// NonCoherent reports whether the cached memory needs Syncs (the MAC does not
// snoop the caches).
func (w *WithUncached) NonCoherent() bool { return w.syncFn != nil }

// Free implements dma.Allocator for both kinds of region.
func (w *WithUncached) Free(r *dma.Region) error {
	if w.u.Owns(r) {
		return w.u.Free(r)
	}
	return w.Allocator.Free(r)
}

// Sync implements dma.Allocator: nothing on uncached regions.
func (w *WithUncached) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	if w.u.Owns(r) {
		return
	}
	w.Allocator.Sync(r, off, n, dir)
}

// Check implements dma.Allocator for both kinds of region.
func (w *WithUncached) Check(iova uint64, n int) error {
	if w.u.Check(iova, n) == nil {
		return nil
	}
	return w.Allocator.Check(iova, n)
}

// Close closes both.
func (w *WithUncached) Close() error {
	return errors.Join(w.Allocator.Close(), w.u.Close())
}
