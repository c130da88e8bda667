package simtest

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// CacheSeeds are the seeds the cache-model tests run with: only when
// non-zero (a rerun of one failure), else the first n of 1..8.
func CacheSeeds(only uint64, n int) []uint64 {
	if only != 0 {
		return []uint64{only}
	}
	return []uint64{1, 2, 3, 4, 5, 6, 7, 8}[:min(n, 8)]
}

// cacheSeed is -cacheseed, in every test binary that imports simtest.
var cacheSeed = flag.Uint64("cacheseed", 0, "run the cache-model tests with this seed only (0: the built-in set)")

// FlagCacheConfigs are n of the cache models a driver must pass
// (CacheConfigs of CacheSeeds), or the one -cacheseed names.
func FlagCacheConfigs(n int) []sim.CacheConfig { return CacheConfigs(CacheSeeds(*cacheSeed, n)) }

// CacheConfigs are the cache models a driver must pass, one per seed, each
// decided by its seed alone so that rerunning one seed rebuilds the same
// model: invalidate for the CPU on even seeds (write back on odd), 128-byte
// lines on multiples of 4 (sim.DefaultCacheLine otherwise), refetches on (the
// tests drive each port from one goroutine).
func CacheConfigs(seeds []uint64) []sim.CacheConfig {
	var cs []sim.CacheConfig
	for _, s := range seeds {
		c := sim.CacheConfig{Seed: s, Refetch: true}
		if s%2 == 0 {
			c.ForCPU = sim.ForCPUInvalidate
		}
		if s%4 == 0 {
			c.Line = 128
		}
		cs = append(cs, c)
	}
	return cs
}

// CacheName names a cache model for a subtest.
func CacheName(c sim.CacheConfig) string {
	line := c.Line
	if line == 0 {
		line = sim.DefaultCacheLine
	}
	return fmt.Sprintf("seed=%d/line=%d/%s", c.Seed, line, c.ForCPU)
}

// ReportSeed makes a failing test say how to rerun it with its seed alone
// (-cacheseed).
func ReportSeed(t *testing.T, c sim.CacheConfig) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cache model seed %d: rerun with -run '%s' -cacheseed=%d", c.Seed, t.Name(), c.Seed)
		}
	})
}

// CachedAlloc is a model's memory as a platform without uncached memory
// offers it: no AllocUncached, everything else (Sync, NonCoherent) passing
// through. With HideLine it also reports no cache line, so a driver knows the
// memory needs its Syncs but not how wide a line is.
type CachedAlloc struct {
	M        *sim.Memory
	HideLine bool
}

func (a CachedAlloc) Alloc(size, align int) (*dma.Region, error) { return a.M.Alloc(size, align) }
func (a CachedAlloc) Free(r *dma.Region) error                   { return a.M.Free(r) }
func (a CachedAlloc) Sync(r *dma.Region, off, n int, d dma.SyncDir) {
	a.M.Sync(r, off, n, d)
}
func (a CachedAlloc) Check(iova uint64, n int) error { return a.M.Check(iova, n) }
func (a CachedAlloc) Limit() uint64                  { return a.M.Limit() }
func (a CachedAlloc) NonCoherent() bool              { return a.M.NonCoherent() }

// CacheLine is the memory's line, or 0 with HideLine.
func (a CachedAlloc) CacheLine() int {
	if a.HideLine {
		return 0
	}
	return a.M.CacheLine()
}

// BufferLines is one case of CheckBufferLines: a cache line, a frame size,
// and whether the driver must accept that frame size on that line.
type BufferLines struct {
	Line, Frame int
	OK          bool
}

// CheckBufferLines checks a driver's refusal of pool buffers that share
// cache lines: for each case open builds a model whose cache has the case's
// line and opens the driver with its frame size. A refusal must name the
// cache line; an accepted port is closed, then the model.
func CheckBufferLines(t *testing.T, cases []BufferLines, open func(line, frame int) (Model, nic.Port, error)) {
	t.Helper()
	for _, c := range cases {
		m, p, err := open(c.Line, c.Frame)
		if (err == nil) != c.OK {
			t.Errorf("line %d, frame %d: Open error %v, want ok=%v", c.Line, c.Frame, err, c.OK)
		}
		if err == nil {
			p.Close()
		} else if !strings.Contains(err.Error(), "cache line") {
			t.Errorf("the refusal does not name the cache line: %v", err)
		}
		m.Close()
	}
}
