package sim

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
)

// Default placement of model memory.
const (
	// DefaultBase is the first IOVA handed out: above 4 GiB, so a driver that
	// truncates addresses to 32 bits points the device at unmapped memory.
	DefaultBase uint64 = 0x1_0000_0000
	// Below4GBase is the first IOVA with MemoryConfig.Below4G.
	Below4GBase uint64 = 0x1000_0000
	// DefaultMaxBytes bounds the memory one Memory hands out.
	DefaultMaxBytes = 1 << 30
	// PageSize is the IOMMU page size of the model.
	PageSize = 4096
)

// ErrBusMaster is wrapped by device-side accesses refused because the device may
// not master the bus (PCI command bit 2 clear, or the model's own DMA gate shut).
var ErrBusMaster = errors.New("sim: DMA while bus mastering is disabled")

// MemoryConfig places and bounds a Memory.
type MemoryConfig struct {
	// Base is the first IOVA (rounded up to a page). 0: DefaultBase, or
	// Below4GBase with Below4G.
	Base uint64
	// Below4G places memory below 4 GiB and sets Limit to 1<<32 (for devices with
	// 32-bit DMA such as the FEC).
	Below4G bool
	// Limit is the exclusive upper bound of IOVAs, reported by Limit(). 0: none
	// (or 1<<32 with Below4G).
	Limit uint64
	// MaxBytes bounds the total size of live regions. 0: DefaultMaxBytes.
	MaxBytes int
	// NonCoherent gives the device its own copy of memory, reconciled only by Sync.
	NonCoherent bool
	// Cache, when set, makes the non-coherent mode a CPU cache model (see
	// cache.go) instead of copying exactly the bytes each Sync names. It
	// implies NonCoherent. An invalid one is recorded as a fault and the
	// Memory runs byte-exact; check it first with CacheConfig.Validate. nil
	// with NonCoherent: byte-exact, unless CacheEnv is set.
	Cache *CacheConfig
}

// mapping is one live Region as the device sees it. Immutable once published.
type mapping struct {
	iova   uint64
	end    uint64 // iova + len(cpu)
	cpu    []byte // the CPU's view (the Region's bytes)
	dev    []byte // the device's view: cpu itself when coherent, a copy otherwise
	shadow []byte // cache model: the CPU's view as last known clean; nil otherwise
	region *dma.Region
	arena  *Arena    // MapArena: dev is arena.b at iova-arena.base; nil otherwise
	msg    *msgRange // MapMessages: dev is a mirror fetched on View; nil otherwise

	uncached bool // from AllocUncached: dev is cpu in every mode
}

// Memory is DMA memory for a device model: an allocator on the CPU side and an
// IOMMU-like translation on the device side. Safe for concurrent use.
type Memory struct {
	cfg    MemoryConfig
	limit  uint64
	faults *Faults // immutable; shared with the model
	cache  *cache  // immutable; nil unless the cache model is on

	dmaOK atomic.Bool // bus mastering allowed; written by the Device base

	devLock atomic.Pointer[sync.Locker] // held by Sync in non-coherent mode; see SetDeviceLock

	snap atomic.Pointer[[]*mapping] // sorted by iova; replaced whole under mu

	wbMu   sync.Mutex  // one WriteBack at a time (msgmem.go); held while it sends
	wbList []*msgRange // guarded by wbMu

	mu     sync.Mutex
	next   uint64 // next free IOVA (never reused); guarded by mu
	used   int    // bytes in live regions; guarded by mu
	closed bool   // guarded by mu
}

// NewMemory returns an empty Memory that records refused accesses in faults
// (which may be shared with the model; nil makes a private log). DMA starts
// allowed; a Device base shuts it until bus mastering is enabled.
func NewMemory(cfg MemoryConfig, faults *Faults) *Memory {
	if faults == nil {
		faults = &Faults{}
	}
	if cfg.NonCoherent && cfg.Cache == nil {
		c, err := CacheFromEnv()
		if err != nil {
			faults.Add("config", "", 0, "%v", err)
		}
		cfg.Cache = c
	}
	m := &Memory{cfg: cfg, faults: faults}
	if cfg.Cache != nil {
		c, err := newCache(*cfg.Cache)
		if err != nil {
			faults.Add("config", "", 0, "%v: running without the cache model", err)
		}
		m.cache = c
		m.cfg.NonCoherent = true
	}
	base := cfg.Base
	if base == 0 {
		base = DefaultBase
		if cfg.Below4G {
			base = Below4GBase
		}
	}
	m.next = (base + PageSize - 1) &^ (PageSize - 1)
	m.limit = cfg.Limit
	if cfg.Below4G && (m.limit == 0 || m.limit > 1<<32) {
		m.limit = 1 << 32
	}
	if m.cfg.MaxBytes <= 0 {
		m.cfg.MaxBytes = DefaultMaxBytes
	}
	empty := []*mapping{}
	m.snap.Store(&empty)
	m.dmaOK.Store(true)
	return m
}

// Faults is the log this memory records refused accesses in.
func (m *Memory) Faults() *Faults { return m.faults }

// NonCoherent reports whether the device has its own copy of memory.
func (m *Memory) NonCoherent() bool { return m.cfg.NonCoherent }

// SetDeviceLock gives the lock the model holds while it accesses memory. In
// non-coherent mode Sync takes it while copying between the two views, so a Sync
// never copies bytes the device is writing at that moment (and the race detector
// sees the ordering). The lock must not be held by the goroutine calling Sync.
func (m *Memory) SetDeviceLock(l sync.Locker) {
	if l == nil {
		m.devLock.Store(nil)
		return
	}
	m.devLock.Store(&l)
}

// SetDMAEnabled opens or shuts the device's access to memory (bus mastering).
func (m *Memory) SetDMAEnabled(on bool) { m.dmaOK.Store(on) }

// DMAEnabled reports whether the device may access memory.
func (m *Memory) DMAEnabled() bool { return m.dmaOK.Load() }

// Alloc implements dma.Allocator.
func (m *Memory) Alloc(size, align int) (*dma.Region, error) {
	return m.alloc(size, align, false)
}

func (m *Memory) alloc(size, align int, uncached bool) (*dma.Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sim: alloc of %d bytes: size must be positive", size)
	}
	if align == 0 {
		align = PageSize
	}
	if align < 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("sim: alloc alignment %d: want a power of two", align)
	}
	if align < PageSize {
		align = PageSize
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("sim: alloc on closed memory: %w", dma.ErrNoMemory)
	}
	if m.used+size > m.cfg.MaxBytes {
		return nil, fmt.Errorf("sim: alloc of %d bytes with %d of %d in use: %w", size, m.used, m.cfg.MaxBytes, dma.ErrNoMemory)
	}
	iova := (m.next + uint64(align) - 1) &^ (uint64(align) - 1)
	end := iova + uint64(size)
	if end < iova || (m.limit != 0 && end > m.limit) {
		return nil, fmt.Errorf("sim: alloc of %d bytes at 0x%x would pass the limit 0x%x: %w", size, iova, m.limit, dma.ErrNoMemory)
	}
	cpu := make([]byte, size)
	mp := &mapping{iova: iova, end: end, cpu: cpu, dev: cpu, uncached: uncached}
	if m.cfg.NonCoherent && !uncached {
		mp.dev = make([]byte, size)
		if m.cache != nil {
			mp.shadow = make([]byte, size)
		}
	}
	mp.region = &dma.Region{CPU: cpu, IOVA: iova}
	// Leave at least one unmapped guard page after every region.
	m.next = ((end + PageSize - 1) &^ (PageSize - 1)) + PageSize
	m.used += size
	old := *m.snap.Load()
	ns := make([]*mapping, len(old), len(old)+1)
	copy(ns, old)
	ns = append(ns, mp) // IOVAs only grow: stays sorted
	m.snap.Store(&ns)
	return mp.region, nil
}

// Free implements dma.Allocator. Device accesses to the region fault afterwards.
func (m *Memory) Free(r *dma.Region) error {
	if r == nil {
		return fmt.Errorf("sim: free of a nil region: %w", dma.ErrNotMapped)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.snap.Load()
	for i, mp := range old {
		if mp.region == r {
			ns := make([]*mapping, 0, len(old)-1)
			ns = append(ns, old[:i]...)
			ns = append(ns, old[i+1:]...)
			m.snap.Store(&ns)
			m.used -= len(mp.cpu)
			return nil
		}
	}
	return fmt.Errorf("sim: free of region at 0x%x (%d bytes) that is not live here (double free or another allocator's): %w", r.IOVA, len(r.CPU), dma.ErrNotMapped)
}

// Close unmaps every region. Device accesses fault afterwards and Alloc fails.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	empty := []*mapping{}
	m.snap.Store(&empty)
	m.used = 0
	return nil
}

// find returns the mapping holding [iova, iova+n), or nil.
func (m *Memory) find(iova uint64, n int) *mapping {
	s := *m.snap.Load()
	i := firstEndingAfter(s, iova)
	if i == len(s) {
		return nil
	}
	mp := s[i]
	if iova < mp.iova || n < 0 || uint64(n) > mp.end-iova {
		return nil
	}
	return mp
}

// firstEndingAfter is the index of the first mapping of the sorted snapshot s
// that ends after iova (len(s) if none): a short binary search, as there are
// few mappings.
func firstEndingAfter(s []*mapping, iova uint64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s[mid].end > iova {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// devView is the device's bytes of [iova, iova+n): inside one mapping, or
// across IOVA-adjacent mappings of one Arena (whose bytes are adjacent too).
// Every byte must be covered by a live mapping: a hole, or a neighbour in
// another arena, refuses the whole range (nil, false).
func (m *Memory) devView(iova uint64, n int) ([]byte, bool) {
	v, _, ok := m.devViewMapping(iova, n)
	return v, ok
}

// devViewMapping is devView that also returns the first mapping of the view.
func (m *Memory) devViewMapping(iova uint64, n int) ([]byte, *mapping, bool) {
	if n < 0 {
		return nil, nil, false
	}
	s := *m.snap.Load()
	i := firstEndingAfter(s, iova)
	if i == len(s) || iova < s[i].iova {
		return nil, nil, false
	}
	mp := s[i]
	if uint64(n) <= mp.end-iova {
		o := iova - mp.iova
		return mp.dev[o : o+uint64(n) : o+uint64(n)], mp, true
	}
	end := iova + uint64(n)
	if mp.arena == nil || end < iova {
		return nil, nil, false
	}
	for at := mp.end; at < end; at = s[i].end {
		if i++; i == len(s) || s[i].iova != at || s[i].arena != mp.arena {
			return nil, nil, false
		}
	}
	o := iova - mp.arena.base
	return mp.arena.b[o : o+uint64(n) : o+uint64(n)], mp, true
}

// Sync implements dma.Allocator. Coherent memory: nothing to do beyond checking
// the range. Non-coherent: copy the range between the CPU's and the device's
// copies. A range outside the region, or a region not live, is a fault.
func (m *Memory) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	if !m.cfg.NonCoherent {
		if r == nil || off < 0 || n < 0 || off+n > len(r.CPU) {
			m.syncFault(r, off, n, dir)
		}
		return
	}
	if r == nil || off < 0 || n < 0 || off+n > len(r.CPU) {
		m.syncFault(r, off, n, dir)
		return
	}
	mp := m.find(r.IOVA, len(r.CPU))
	if mp == nil || mp.region != r {
		m.faults.Add("sync", "", r.IOVA, "%s sync of a region that is not live (freed, or from another allocator)", dir)
		return
	}
	if dir != dma.ForDevice && dir != dma.ForCPU {
		m.faults.Add("sync", "", r.IOVA, "unknown sync direction %s", dir)
		return
	}
	if l := m.lockDevice(); l != nil {
		defer l.Unlock()
	}
	if m.cache != nil {
		if mp.uncached {
			m.momentLocked()
		} else {
			m.cacheSync(mp, off, n, dir)
		}
		return
	}
	if mp.uncached {
		return
	}
	switch dir {
	case dma.ForDevice:
		copy(mp.dev[off:off+n], mp.cpu[off:off+n])
	case dma.ForCPU:
		copy(mp.cpu[off:off+n], mp.dev[off:off+n])
	default:
		m.faults.Add("sync", "", r.IOVA, "unknown sync direction %s", dir)
	}
}

func (m *Memory) syncFault(r *dma.Region, off, n int, dir dma.SyncDir) {
	if r == nil {
		m.faults.Add("sync", "", 0, "%s sync of a nil region", dir)
		return
	}
	m.faults.Add("sync", "", r.IOVA, "%s sync of [%d, %d+%d) outside the %d-byte region", dir, off, off, n, len(r.CPU))
}

// Check implements dma.Allocator (the CPU side's question; it records no
// fault). A range across IOVA-adjacent mappings of one Arena passes, as for View.
func (m *Memory) Check(iova uint64, n int) error {
	if _, ok := m.devView(iova, n); !ok {
		return fmt.Errorf("sim: [0x%x, +%d) is not inside one live mapping: %w", iova, n, dma.ErrNotMapped)
	}
	return nil
}

// Limit implements dma.Allocator.
func (m *Memory) Limit() uint64 { return m.limit }

// View returns the device's view of [iova, iova+n): the bytes themselves, valid
// until the region is freed. It refuses, records a fault and returns an error when
// the device may not master the bus or the range is not wholly inside one live
// mapping (or, for external memory, wholly covered by IOVA-adjacent mappings
// of one Arena: see MapArena). op names the access in the fault ("dma-read",
// "rx-buffer", ...). It never allocates on success, except for message-only
// memory (MapMessages), where it first fetches the bytes from their owner.
func (m *Memory) View(op string, iova uint64, n int) ([]byte, error) {
	if !m.dmaOK.Load() {
		m.faults.Add(op, "", iova, "%d-byte DMA while bus mastering is disabled", n)
		return nil, fmt.Errorf("sim: %s of %d bytes at 0x%x: %w", op, n, iova, ErrBusMaster)
	}
	v, mp, ok := m.devViewMapping(iova, n)
	if !ok {
		m.faults.Add(op, "", iova, "%d-byte DMA not inside a live mapping (IOMMU fault)", n)
		return nil, fmt.Errorf("sim: %s of %d bytes at 0x%x: %w", op, n, iova, dma.ErrNotMapped)
	}
	if mp.msg != nil {
		return m.viewMsg(op, mp, iova, v)
	}
	if mp.shadow != nil && m.cache != nil && m.cache.rate > 0 {
		m.deviceTouched(mp, int(iova-mp.iova), n)
	}
	return v, nil
}

// ReadDMA copies device memory at iova into dst, as a device's read.
func (m *Memory) ReadDMA(iova uint64, dst []byte) error {
	v, err := m.View("dma-read", iova, len(dst))
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

// WriteDMA copies src into device memory at iova, as a device's write.
func (m *Memory) WriteDMA(iova uint64, src []byte) error {
	v, err := m.View("dma-write", iova, len(src))
	if err != nil {
		return err
	}
	copy(v, src)
	return nil
}

// Regions is the number of live regions (for leak checks in tests).
func (m *Memory) Regions() int { return len(*m.snap.Load()) }

var _ dma.Allocator = (*Memory)(nil)
