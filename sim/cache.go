package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
)

// The cache model: a non-coherent Memory whose CPU side behaves like a
// write-back data cache in front of memory, line by line, as on the Cortex-A53
// of the i.MX8M (64-byte lines, the DMA masters not snooping it).
//
// Representation. Every cached mapping has three buffers of its size:
//
//   - the CPU's view (the Region's bytes, what the driver reads and writes
//     directly or through descriptor accessors): what a CPU load returns, the
//     cache's copy of a line merged with memory;
//   - memory (what the device reads and writes, View, ReadDMA, WriteDMA);
//   - a shadow: for each line, the bytes the CPU's view held when the line was
//     last known to agree with memory (after a clean, an invalidate, an
//     eviction or a refetch).
//
// A line is dirty when the CPU wrote it since then, which the model sees as
// the CPU's view differing from the shadow; otherwise it is clean (it may be
// stale: the device may have written memory since).
//
// Operations, each on whole lines (a range is widened to the lines it touches):
//
//   - clean (Sync ForDevice; DC CVAC): every dirty line is written to memory
//     whole, including bytes the CPU never wrote (stale copies of what the
//     device wrote meanwhile); clean lines are left alone.
//   - invalidate (Sync ForCPU with CacheConfig.ForCPU = ForCPUInvalidate; DC
//     IVAC, the kernel's arch_sync_dma_for_cpu): every line is re-read from
//     memory into the CPU's view; what the CPU wrote and did not clean is lost.
//   - clean and invalidate (Sync ForCPU by default, as physmem does on arm64
//     with DC CIVAC): dirty lines are written back whole, then every line is
//     re-read from memory.
//
// Moments. At unpredictable moments a dirty line is evicted (written back
// whole, then clean) and, with CacheConfig.Refetch, a clean line is refetched
// (the cache dropped it and the CPU read it again, so its view now shows
// memory). Lines the device accessed since the last moment get a closer look:
// each of them that is dirty is evicted with probability 1/2 (Overwrites in
// CacheStats), so a line the CPU dirtied and never cleaned before handing its
// memory to the device (a recycled RX buffer the program wrote, a buffer the
// CPU zeroed) lands over what the device wrote there, at a moment after the
// device's write, as a real cache evicts it whenever it needs the way; a
// random line out of a large pool would almost never be that one. A moment
// happens at
// every register access through the Device base and at every Sync, before the
// Sync's own work; at each, every cached mapping has probability
// CacheConfig.Rate of losing one line chosen at random. The choices come from a
// PCG generator seeded with CacheConfig.Seed, so a run is reproducible from the
// seed (CacheSeed reports it; tests print it when they fail) as long as the
// driver makes the same calls in the same order.
//
// Uncached memory (AllocUncached) is the same bytes for CPU and device, as a
// non-cacheable mapping is; its Syncs do nothing.
//
// The ARMv7 variant (CacheConfig.NoMaintenance; "armv7" in CacheEnv): the
// 32-bit cores of the i.MX6, i.MX7 and Vybrid (Cortex-A9, A7, A5) have the
// same kind of write-back cache, but their cache maintenance by address is
// PL1-only (physmem/sync_nomaint.go), so a user-space driver's Sync on
// cached memory cannot do anything there. The model does no line operation
// for it, records the fault once, and reports CacheMaintenance false so a
// driver can refuse cached memory up front; only uncached memory works.
//
// Limits, all on the side of accepting behaviour a real cache could show:
//
//   - A CPU write of the bytes a line already held leaves it looking clean;
//     a real cache would mark it dirty (and write back its stale neighbours
//     later). Drivers rewrite descriptors with new contents, so this rarely
//     hides a bug; it never invents one.
//   - Moments are not taken at device DMA accesses: the device side may run
//     on a goroutine of its own (an asynchronous model, a wire's receiver),
//     and a moment reads (and with Refetch writes) the CPU's view, which
//     only the driver's goroutines touch.
//   - Refetch is off by default. Refreshing the CPU's view of a clean line
//     writes bytes another goroutine may be storing to at that moment (a
//     buffer the dataplane owns on another port's goroutine), which would
//     lose its store: no cache does that. Tests that drive the memory from
//     one goroutine turn it on. Without it a stale clean line stays stale
//     until an invalidate, the case a driver must handle anyway.
//   - An eviction reads the CPU's view of a dirty line; with several
//     goroutines writing cached memory the race detector reports that read
//     (the result is still right: a torn copy goes to memory and to the
//     shadow alike, and the rest of the line stays dirty).
//   - Speculative prefetch into lines the CPU never touches and the order of
//     write-backs within one moment are not modelled beyond what a refetch of
//     a clean line already shows.

// DefaultCacheLine is the line size of the cache model when CacheConfig.Line
// is 0: the Cortex-A53's (and Cortex-A7's) data cache line.
const DefaultCacheLine = 64

// maxTouched bounds the device accesses remembered between two moments; later
// ones go unexamined until the next moment (the random evictions still
// cover them).
const maxTouched = 256

// DefaultCacheRate is the per-mapping probability of a moment losing a line
// when CacheConfig.Rate is 0.
const DefaultCacheRate = 1.0 / 16

// ForCPUOp is what a Sync(ForCPU) does to the lines of the range.
type ForCPUOp uint8

const (
	// ForCPUCleanInvalidate writes dirty lines back, then re-reads every line
	// (DC CIVAC: what physmem does on arm64, where EL0 may not invalidate).
	ForCPUCleanInvalidate ForCPUOp = iota
	// ForCPUInvalidate re-reads every line, dropping what the CPU wrote and did
	// not clean (DC IVAC: the kernel's arch_sync_dma_for_cpu).
	ForCPUInvalidate
)

func (o ForCPUOp) String() string {
	switch o {
	case ForCPUCleanInvalidate:
		return "clean+invalidate"
	case ForCPUInvalidate:
		return "invalidate"
	}
	return fmt.Sprintf("ForCPUOp(%d)", uint8(o))
}

// CacheConfig turns a Memory into the cache model (MemoryConfig.Cache; it
// implies NonCoherent).
type CacheConfig struct {
	// Line is the cache line size in bytes: a power of two from 16 to
	// PageSize. 0: DefaultCacheLine.
	Line int
	// Seed seeds the moments at which lines are evicted or refetched.
	Seed uint64
	// Rate is the probability, at each moment, that a cached mapping loses
	// one line: from 0 to 1. 0: DefaultCacheRate; negative: no moments (only
	// the Syncs move lines).
	Rate float64
	// ForCPU is what Sync(ForCPU) does. The zero value is clean+invalidate.
	ForCPU ForCPUOp
	// Refetch lets moments refresh clean lines from memory too. Only for
	// tests whose cached memory one goroutine at a time touches (see the
	// limits above).
	Refetch bool
	// NoMaintenance is the ARMv7 variant: the CPU cannot clean or invalidate
	// from user mode, so Sync on cached memory moves no line and is a fault.
	NoMaintenance bool
}

// Validate returns the error a Memory would record for cfg, nil when it is
// usable. Models check it in their constructors.
func (cfg CacheConfig) Validate() error {
	_, err := newCache(cfg)
	return err
}

// CacheStats counts what the cache model did to lines.
type CacheStats struct {
	Moments    uint64 // moments taken
	Evictions  uint64 // dirty lines written back at a moment
	Refetches  uint64 // clean lines re-read from memory at a moment
	Cleaned    uint64 // dirty lines written back by a Sync
	Discarded  uint64 // dirty lines whose CPU writes an invalidate dropped
	Invalidate uint64 // lines re-read from memory by a Sync(ForCPU)
	Overwrites uint64 // dirty lines the device had accessed, written back at a moment
	// Maintenance counts the lines each Sync operated on, dirty or not:
	// what the cache maintenance instructions cost the CPU (DC CVAC or DC
	// CIVAC per line on arm64), the figure a driver keeps small by syncing
	// what a burst used rather than whole rings.
	CleanLines uint64 // lines covered by Syncs ForDevice
	InvalLines uint64 // lines covered by Syncs ForCPU (also in Invalidate)
}

// touch is a device access of [off, off+n) in a cached mapping.
type touch struct {
	mp     *mapping
	off, n int
}

// cache is the state of the cache model shared by a Memory's mappings.
type cache struct {
	line    int      // immutable
	rate    float64  // immutable; <= 0: no moments
	refetch bool     // immutable
	seed    uint64   // immutable
	forCPU  ForCPUOp // immutable
	noMaint bool     // immutable: the ARMv7 variant

	noMaintSeen atomic.Bool // the NoMaintenance fault was recorded

	mu      sync.Mutex // guards rng, stats and touched; taken inside the device lock
	rng     *rand.Rand
	stats   CacheStats
	touched [maxTouched]touch // device accesses since the last moment
	ntouch  int               // entries of touched in use
}

// newCache checks cfg and builds the model's state.
func newCache(cfg CacheConfig) (*cache, error) {
	line := cfg.Line
	if line == 0 {
		line = DefaultCacheLine
	}
	if line < 16 || line > PageSize || line&(line-1) != 0 {
		return nil, fmt.Errorf("sim: cache line of %d bytes: want a power of two from 16 to %d", line, PageSize)
	}
	rate := cfg.Rate
	switch {
	case rate == 0:
		rate = DefaultCacheRate
	case rate > 1 || rate != rate:
		return nil, fmt.Errorf("sim: cache rate %v: want a probability from 0 to 1 (negative: no moments)", cfg.Rate)
	}
	if cfg.ForCPU > ForCPUInvalidate {
		return nil, fmt.Errorf("sim: cache ForCPU operation %s: unknown", cfg.ForCPU)
	}
	return &cache{line: line, rate: rate, seed: cfg.Seed, forCPU: cfg.ForCPU, refetch: cfg.Refetch, noMaint: cfg.NoMaintenance,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}, nil
}

// CacheLine is the cache model's line size, 0 when the Memory has no cache
// model. Drivers that lay rings out in whole lines ask for it (the fec
// driver's CacheLine() int convention, which physmem follows too).
func (m *Memory) CacheLine() int {
	if m.cache == nil {
		return 0
	}
	return m.cache.line
}

// CacheMaintenance reports whether Sync can make the Memory's cached regions
// coherent with the device: false in the cache model's ARMv7 variant, where
// only AllocUncached memory is coherent (true without a cache model). physmem
// has the same answer for the real CPU (physmem.CacheMaintenance).
func (m *Memory) CacheMaintenance() bool { return m.cache == nil || !m.cache.noMaint }

// CacheSeed is the seed of the cache model's moments (0 without one), for a
// test to print when it fails.
func (m *Memory) CacheSeed() uint64 {
	if m.cache == nil {
		return 0
	}
	return m.cache.seed
}

// CacheStats reports what the cache model did so far (zero without one).
func (m *Memory) CacheStats() CacheStats {
	if m.cache == nil {
		return CacheStats{}
	}
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	return m.cache.stats
}

// AllocUncached returns memory that the CPU maps non-cacheable: the CPU and
// the device see the same bytes, with no Sync needed (Sync accepts the range
// and does nothing). It is what a kernel's dma_alloc_coherent gives a
// non-coherent device on arm64, and what physmem's reserved-memory mapping
// gives on a board. Without a cache model and in byte-exact non-coherent mode
// it is offered too: the region is shared by both sides. Same arguments and
// errors as Alloc.
func (m *Memory) AllocUncached(size, align int) (*dma.Region, error) {
	return m.alloc(size, align, true)
}

// Uncached reports whether r was allocated with AllocUncached (and is live).
func (m *Memory) Uncached(r *dma.Region) bool {
	if r == nil {
		return false
	}
	mp := m.find(r.IOVA, len(r.CPU))
	return mp != nil && mp.region == r && mp.uncached
}

// lockDevice takes the model's device lock, if one was set, and returns its
// unlock (nil when none).
func (m *Memory) lockDevice() sync.Locker {
	if l := m.devLock.Load(); l != nil {
		(*l).Lock()
		return *l
	}
	return nil
}

// cpuMoment takes a moment (see the cache model above) when the Memory has a
// cache model; the Device base calls it on every register access. It takes
// the device lock, which the caller must not hold.
func (m *Memory) cpuMoment() {
	if m.cache == nil || m.cache.rate <= 0 {
		return
	}
	if l := m.lockDevice(); l != nil {
		defer l.Unlock()
	}
	m.momentLocked()
}

// momentLocked is a moment; the caller holds the device lock (if any).
func (m *Memory) momentLocked() {
	c := m.cache
	if c.rate <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Moments++
	m.overwriteTouchedLocked()
	for _, mp := range *m.snap.Load() {
		if mp.shadow == nil || c.rng.Float64() >= c.rate {
			continue
		}
		lines := (len(mp.cpu) + c.line - 1) / c.line
		lo := c.rng.IntN(lines) * c.line
		hi := min(lo+c.line, len(mp.cpu))
		if !bytes.Equal(mp.cpu[lo:hi], mp.shadow[lo:hi]) {
			copy(mp.dev[lo:hi], mp.cpu[lo:hi])
			copy(mp.shadow[lo:hi], mp.dev[lo:hi]) // what went to memory, even if the view changed meanwhile
			c.stats.Evictions++
			continue
		}
		if !c.refetch {
			continue
		}
		copy(mp.cpu[lo:hi], mp.dev[lo:hi])
		copy(mp.shadow[lo:hi], mp.dev[lo:hi])
		c.stats.Refetches++
	}
}

// deviceTouched records that the device accessed [off, off+n) of the cached
// mapping mp; the next moment looks at those lines (overwriteTouchedLocked).
func (m *Memory) deviceTouched(mp *mapping, off, n int) {
	c := m.cache
	c.mu.Lock()
	if c.ntouch < maxTouched {
		c.touched[c.ntouch] = touch{mp: mp, off: off, n: n}
		c.ntouch++
	}
	c.mu.Unlock()
}

// overwriteTouchedLocked evicts, each with probability 1/2, the dirty lines
// among those the device accessed since the last moment, and forgets the
// accesses. The caller holds c.mu (and the device lock, if any). A mapping
// freed since its access is skipped: its bytes are no longer the model's.
func (m *Memory) overwriteTouchedLocked() {
	c := m.cache
	for i := range c.touched[:c.ntouch] {
		t := c.touched[i]
		c.touched[i] = touch{}
		mp := t.mp
		if mp.shadow == nil || m.find(mp.iova, len(mp.cpu)) != mp {
			continue
		}
		lo := t.off &^ (c.line - 1)
		hi := min(t.off+t.n, len(mp.cpu))
		for a := lo; a < hi; a += c.line {
			b := min(a+c.line, len(mp.cpu))
			if bytes.Equal(mp.cpu[a:b], mp.shadow[a:b]) || c.rng.IntN(2) == 0 {
				continue
			}
			copy(mp.dev[a:b], mp.cpu[a:b])
			copy(mp.shadow[a:b], mp.dev[a:b])
			c.stats.Overwrites++
		}
	}
	c.ntouch = 0
}

// cacheSync is Sync on a cached mapping: a moment, then the line operations
// for dir over the lines [off, off+n) touches. The caller holds the device
// lock (if any) and has checked the range.
func (m *Memory) cacheSync(mp *mapping, off, n int, dir dma.SyncDir) {
	c := m.cache
	m.momentLocked()
	if c.noMaint {
		if !c.noMaintSeen.Swap(true) {
			m.faults.Add("sync", "", mp.iova+uint64(off), "%s sync of cached memory on a CPU without user cache maintenance "+
				"(ARMv7: the CP15 c7 operations are PL1-only): nothing is cleaned or invalidated; DMA memory must be uncached "+
				"(AllocUncached)", dir)
		}
		return
	}
	if n == 0 {
		return
	}
	lo := off &^ (c.line - 1) // regions start on a page, so region lines are memory lines
	hi := min((off+n+c.line-1)&^(c.line-1), len(mp.cpu))
	var cleaned, discarded, inval uint64
	for a := lo; a < hi; a += c.line {
		b := min(a+c.line, hi)
		dirty := !bytes.Equal(mp.cpu[a:b], mp.shadow[a:b])
		switch {
		case dir == dma.ForDevice:
			if dirty {
				copy(mp.dev[a:b], mp.cpu[a:b])
				copy(mp.shadow[a:b], mp.cpu[a:b])
				cleaned++
			}
		case dir == dma.ForCPU:
			if dirty && c.forCPU == ForCPUCleanInvalidate {
				copy(mp.dev[a:b], mp.cpu[a:b])
				cleaned++
			} else if dirty {
				discarded++
			}
			copy(mp.cpu[a:b], mp.dev[a:b])
			copy(mp.shadow[a:b], mp.dev[a:b])
			inval++
		}
	}
	c.mu.Lock()
	c.stats.Cleaned += cleaned
	c.stats.Discarded += discarded
	c.stats.Invalidate += inval
	if dir == dma.ForDevice {
		c.stats.CleanLines += uint64((hi - lo + c.line - 1) / c.line)
	} else {
		c.stats.InvalLines += inval
	}
	c.mu.Unlock()
}

// CacheEnv names the environment variable that puts every non-coherent
// Memory made without MemoryConfig.Cache under the cache model, so a whole
// test suite of a non-coherent driver runs there: "SEED" followed by any of
// ",LINE", ",invalidate" (ForCPUInvalidate), ",refetch" (Refetch) and ",armv7"
// (NoMaintenance), e.g.
// XNIC_SIM_CACHE=3,128,refetch.
const CacheEnv = "XNIC_SIM_CACHE"

// CacheFromEnv parses CacheEnv: nil when it is unset or empty.
func CacheFromEnv() (*CacheConfig, error) {
	v := os.Getenv(CacheEnv)
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	seed, err := strconv.ParseUint(parts[0], 0, 64)
	if err != nil {
		return nil, fmt.Errorf("sim: %s=%q: seed: %w", CacheEnv, v, err)
	}
	c := &CacheConfig{Seed: seed}
	for _, f := range parts[1:] {
		switch {
		case f == "invalidate":
			c.ForCPU = ForCPUInvalidate
		case f == "refetch":
			c.Refetch = true
		case f == "armv7":
			c.NoMaintenance = true
		case c.Line == 0 && f != "" && f[0] >= '0' && f[0] <= '9':
			if c.Line, err = strconv.Atoi(f); err != nil {
				return nil, fmt.Errorf("sim: %s=%q: line: %w", CacheEnv, v, err)
			}
		default:
			return nil, fmt.Errorf("sim: %s=%q: want SEED[,LINE][,invalidate][,refetch][,armv7]", CacheEnv, v)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sim: %s=%q: %w", CacheEnv, v, err)
	}
	return c, nil
}
