package sim

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

// cached returns a Memory with the cache model and no random moments, and one
// region of n bytes.
func cached(t *testing.T, cfg CacheConfig, n int) (*Memory, *dma.Region) {
	t.Helper()
	if cfg.Rate == 0 {
		cfg.Rate = -1
	}
	m := NewMemory(MemoryConfig{Cache: &cfg}, nil)
	require.NoError(t, m.Faults().Err())
	r, err := m.Alloc(n, 0)
	require.NoError(t, err)
	return m, r
}

func devRead(t *testing.T, m *Memory, iova uint64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, m.ReadDMA(iova, b))
	return b
}

func TestCacheCleanWritesWholeDirtyLines(t *testing.T) {
	m, r := cached(t, CacheConfig{}, 256)
	require.True(t, m.NonCoherent())
	require.Equal(t, DefaultCacheLine, m.CacheLine())

	// The device writes byte 10 of line 0; the CPU (whose copy of the line is
	// stale) writes byte 0 and cleans only byte 0: the whole line goes back,
	// so the device's byte is overwritten with the CPU's stale zero.
	require.NoError(t, m.WriteDMA(r.IOVA+10, []byte{0xDD}))
	r.CPU[0] = 0xC0
	require.Equal(t, []byte{0}, devRead(t, m, r.IOVA, 1), "a CPU write is not in memory before a clean")
	m.Sync(r, 0, 1, dma.ForDevice)
	got := devRead(t, m, r.IOVA, 64)
	require.Equal(t, byte(0xC0), got[0])
	require.Equal(t, byte(0), got[10], "clean writes back the whole line, stale bytes too")

	// A clean line is not written back: the device's write to line 1 survives a
	// clean of the range holding it.
	require.NoError(t, m.WriteDMA(r.IOVA+70, []byte{0xEE}))
	m.Sync(r, 64, 64, dma.ForDevice)
	require.Equal(t, []byte{0xEE}, devRead(t, m, r.IOVA+70, 1))
	require.Equal(t, byte(0), r.CPU[70], "the CPU's copy stays stale until an invalidate")

	// A one-byte clean at the end of line 2 cleans all of line 2 and nothing
	// of line 3.
	r.CPU[130] = 1
	r.CPU[200] = 2
	m.Sync(r, 191, 1, dma.ForDevice)
	require.Equal(t, []byte{1}, devRead(t, m, r.IOVA+130, 1))
	require.Equal(t, []byte{0}, devRead(t, m, r.IOVA+200, 1))
	s := m.CacheStats()
	require.Equal(t, uint64(2), s.Cleaned)
	require.Zero(t, s.Moments)
	require.NoError(t, m.Faults().Err())
}

func TestCacheForCPU(t *testing.T) {
	for _, op := range []ForCPUOp{ForCPUCleanInvalidate, ForCPUInvalidate} {
		t.Run(op.String(), func(t *testing.T) {
			m, r := cached(t, CacheConfig{ForCPU: op}, 128)
			// Line 0: the device writes byte 5; the CPU wrote byte 1 and did not
			// clean. Line 1: the device writes, the CPU did not touch it.
			require.NoError(t, m.WriteDMA(r.IOVA+5, []byte{0xD5}))
			require.NoError(t, m.WriteDMA(r.IOVA+100, []byte{0xD6}))
			r.CPU[1] = 0xC1
			require.Zero(t, r.CPU[100], "a cached line reads stale before the invalidate")
			m.Sync(r, 100, 1, dma.ForCPU)
			require.Equal(t, byte(0xD6), r.CPU[100])
			require.Zero(t, r.CPU[5], "line 0 was not in the range")
			m.Sync(r, 5, 1, dma.ForCPU)
			s := m.CacheStats()
			if op == ForCPUCleanInvalidate {
				// The dirty line went back whole over the device's byte 5.
				require.Equal(t, byte(0xC1), r.CPU[1])
				require.Zero(t, r.CPU[5], "the write-back of the dirty line overwrote the device's byte")
				require.Equal(t, []byte{0, 0xC1}, devRead(t, m, r.IOVA, 2))
				require.Equal(t, uint64(1), s.Cleaned)
				require.Zero(t, s.Discarded)
			} else {
				require.Zero(t, r.CPU[1], "invalidate dropped the CPU's write")
				require.Equal(t, byte(0xD5), r.CPU[5])
				require.Equal(t, uint64(1), s.Discarded)
				require.Zero(t, s.Cleaned)
			}
			require.Equal(t, uint64(2), s.Invalidate)
		})
	}
}

func TestCacheLineSizeAndTail(t *testing.T) {
	// 128-byte lines over a region whose last line is partial.
	m, r := cached(t, CacheConfig{Line: 128}, 300)
	require.Equal(t, 128, m.CacheLine())
	r.CPU[299] = 9
	r.CPU[130] = 8
	m.Sync(r, 256, 1, dma.ForDevice)
	require.Equal(t, []byte{9}, devRead(t, m, r.IOVA+299, 1))
	require.Equal(t, []byte{0}, devRead(t, m, r.IOVA+130, 1))
	m.Sync(r, 255, 1, dma.ForDevice) // the line [128, 256)
	require.Equal(t, []byte{8}, devRead(t, m, r.IOVA+130, 1))
	require.NoError(t, m.Faults().Err())
}

func TestCacheUncached(t *testing.T) {
	m, r := cached(t, CacheConfig{}, 64)
	u, err := m.AllocUncached(256, 0)
	require.NoError(t, err)
	require.True(t, m.Uncached(u))
	require.False(t, m.Uncached(r))
	u.CPU[3] = 7
	require.Equal(t, []byte{7}, devRead(t, m, u.IOVA+3, 1), "uncached: the device sees CPU stores at once")
	require.NoError(t, m.WriteDMA(u.IOVA+200, []byte{5}))
	require.Equal(t, byte(5), u.CPU[200], "uncached: the CPU sees device stores at once")
	m.Sync(u, 0, 256, dma.ForCPU)
	m.Sync(u, 0, 256, dma.ForDevice)
	require.Equal(t, CacheStats{}, m.CacheStats(), "Syncs on uncached memory touch no line")
	m.Sync(u, 200, 100, dma.ForDevice)
	require.Error(t, m.Faults().Err(), "the range is still checked")

	// Byte-exact non-coherent mode offers uncached memory too.
	b := NewMemory(MemoryConfig{NonCoherent: true}, nil)
	u2, err := b.AllocUncached(64, 0)
	require.NoError(t, err)
	u2.CPU[0] = 1
	require.Equal(t, []byte{1}, devRead(t, b, u2.IOVA, 1))
	require.True(t, b.Uncached(u2))
	require.Zero(t, b.CacheLine())
}

func TestCacheMomentsEvictAndRefetch(t *testing.T) {
	m, r := cached(t, CacheConfig{Rate: 1, Seed: 42, Refetch: true}, 64)
	// Rate 1 and one line: every moment evicts the dirty line or refetches
	// the clean one.
	r.CPU[0] = 0xC0
	m.cpuMoment()
	require.Equal(t, []byte{0xC0}, devRead(t, m, r.IOVA, 1), "a dirty line reaches memory when evicted, without a clean")
	require.NoError(t, m.WriteDMA(r.IOVA+1, []byte{0xD1}))
	m.cpuMoment()
	require.Equal(t, byte(0xD1), r.CPU[1], "a clean line refetched shows memory")
	s := m.CacheStats()
	require.Equal(t, CacheStats{Moments: 2, Evictions: 1, Refetches: 1}, s)

	// Syncs are moments too; so are register accesses through the Device base.
	m.Sync(r, 0, 1, dma.ForDevice)
	require.Equal(t, uint64(3), m.CacheStats().Moments)
	d := NewDevice(DeviceConfig{BARSize: 16}, m, nopModel{})
	regs, err := d.Regs(0)
	require.NoError(t, err)
	regs.Read32(0)
	regs.Write32(4, 1)
	require.Equal(t, uint64(5), m.CacheStats().Moments)
}

type nopModel struct{}

func (nopModel) Read32(uint32) uint32   { return 0 }
func (nopModel) Write32(uint32, uint32) {}
func (nopModel) Reset()                 {}

// run does the same CPU writes and moments on a fresh cached memory and
// returns what the device saw after each moment.
func momentTrace(t *testing.T, seed uint64) ([]byte, CacheStats) {
	m, r := cached(t, CacheConfig{Rate: 0.5, Seed: seed, Refetch: true}, 16*64)
	var trace []byte
	for i := 0; i < 200; i++ {
		r.CPU[(i*37)%len(r.CPU)] = byte(i)
		m.cpuMoment()
		trace = append(trace, devRead(t, m, r.IOVA, len(r.CPU))...)
	}
	return trace, m.CacheStats()
}

func TestCacheMomentsReproducible(t *testing.T) {
	a, sa := momentTrace(t, 7)
	b, sb := momentTrace(t, 7)
	require.True(t, bytes.Equal(a, b), "the same seed gives the same evictions")
	require.Equal(t, sa, sb)
	require.NotZero(t, sa.Evictions)
	require.NotZero(t, sa.Refetches)
	c, _ := momentTrace(t, 8)
	require.False(t, bytes.Equal(a, c), "another seed gives other moments")
	// Rate 0.5 over 200 moments: about 100 lines lost, far from 0 or 200.
	require.InDelta(t, 100, float64(sa.Evictions+sa.Refetches), 40)
}

func TestCacheConfigErrors(t *testing.T) {
	for _, c := range []CacheConfig{{Line: 48}, {Line: 8}, {Line: 2 * PageSize}, {Rate: 1.5}, {ForCPU: 9}} {
		require.Error(t, c.Validate(), "%+v", c)
		m := NewMemory(MemoryConfig{Cache: &c}, nil)
		require.Error(t, m.Faults().Err(), "an invalid cache config is a fault: %+v", c)
		require.Zero(t, m.CacheLine())
	}
	require.NoError(t, CacheConfig{}.Validate())
	require.NoError(t, CacheConfig{Line: 128, Rate: -1}.Validate())
}

func TestCacheSyncZeroAlloc(t *testing.T) {
	m := NewMemory(MemoryConfig{Cache: &CacheConfig{Rate: 0.5}}, nil)
	r, err := m.Alloc(4096, 0)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		r.CPU[100]++
		m.Sync(r, 64, 512, dma.ForDevice)
		m.Sync(r, 64, 512, dma.ForCPU)
		m.cpuMoment()
	})
	require.Zero(t, allocs)
}

func TestCacheFromEnv(t *testing.T) {
	for v, want := range map[string]*CacheConfig{
		"":                   nil,
		"7":                  {Seed: 7},
		"3,128":              {Seed: 3, Line: 128},
		"0x10,64,invalidate": {Seed: 16, Line: 64, ForCPU: ForCPUInvalidate},
		"9,refetch,128":      {Seed: 9, Line: 128, Refetch: true},
		"2,armv7":            {Seed: 2, NoMaintenance: true},
	} {
		t.Setenv(CacheEnv, v)
		got, err := CacheFromEnv()
		require.NoError(t, err, v)
		require.Equal(t, want, got, v)
	}
	for _, v := range []string{"x", "1,48", "1,64,clean", "1,64,128", "1,refetch,x"} {
		t.Setenv(CacheEnv, v)
		_, err := CacheFromEnv()
		require.Error(t, err, v)
		m := NewMemory(MemoryConfig{NonCoherent: true}, nil)
		require.Error(t, m.Faults().Err(), v)
	}
	t.Setenv(CacheEnv, "5")
	m := NewMemory(MemoryConfig{NonCoherent: true}, nil)
	require.Equal(t, uint64(5), m.CacheSeed())
	require.Equal(t, DefaultCacheLine, m.CacheLine())
	require.Zero(t, NewMemory(MemoryConfig{}, nil).CacheLine(), "coherent memory stays coherent")
}

// TestCacheNoRefetchByDefault: without Refetch a moment never writes the
// CPU's view (a clean line stays as it was, stale or not); dirty lines are
// still evicted.
func TestCacheNoRefetchByDefault(t *testing.T) {
	m, r := cached(t, CacheConfig{Rate: 1, Seed: 42}, 64)
	require.NoError(t, m.WriteDMA(r.IOVA+1, []byte{0xD1}))
	for i := 0; i < 20; i++ {
		m.cpuMoment()
	}
	require.Zero(t, r.CPU[1], "a moment refreshed a clean line without Refetch")
	r.CPU[0] = 0xC0
	m.cpuMoment()
	require.Equal(t, []byte{0xC0, 0}, devRead(t, m, r.IOVA, 2), "the evicted line went back whole: the CPU's stale byte 1 over the device's")
}

// TestCacheOverwritesDirtyLinesTheDeviceWrote: a line the CPU dirtied and did
// not clean before the device wrote it is written back over the device's bytes
// at a later moment (at some seed of a handful), while a line cleaned first
// never is. The first is a recycled RX buffer posted without its clean.
func TestCacheOverwritesDirtyLinesTheDeviceWrote(t *testing.T) {
	frame := bytes.Repeat([]byte{0xDD}, 200)
	overwritten := 0
	for seed := uint64(1); seed <= 16; seed++ {
		for _, clean := range []bool{false, true} {
			cfg := CacheConfig{Seed: seed, Rate: 1e-12} // moments, but no random evictions
			m := NewMemory(MemoryConfig{Cache: &cfg}, nil)
			r, err := m.Alloc(4096, 0)
			require.NoError(t, err)
			other, err := m.Alloc(64, 0)
			require.NoError(t, err)
			for i := range r.CPU[:256] {
				r.CPU[i] = 0xC0 // the CPU wrote the buffer in its last life
			}
			if clean {
				m.Sync(r, 0, 256, dma.ForDevice)
			}
			require.NoError(t, m.WriteDMA(r.IOVA, frame))
			m.Sync(other, 0, 64, dma.ForDevice) // a moment, after the device's write
			got := devRead(t, m, r.IOVA, len(frame))
			s := m.CacheStats()
			if clean {
				require.Equal(t, frame, got, "seed %d: a cleaned line was written back over the device's bytes", seed)
				require.Zero(t, s.Overwrites)
				continue
			}
			if !bytes.Equal(got, frame) {
				overwritten++
				require.NotZero(t, s.Overwrites)
				require.Contains(t, got, byte(0xC0), "what landed is the CPU's stale line")
			}
			require.NoError(t, m.Faults().Err())
		}
	}
	require.Greater(t, overwritten, 3, "dirty lines over the device's write were written back at %d of 16 seeds", overwritten)
}

// TestCacheMaintenanceCounts: CleanLines and InvalLines count every line a
// Sync covers, dirty or not.
func TestCacheMaintenanceCounts(t *testing.T) {
	m, r := cached(t, CacheConfig{}, 4096)
	m.Sync(r, 10, 100, dma.ForDevice) // lines 0 and 1
	m.Sync(r, 64, 64, dma.ForDevice)  // line 1
	m.Sync(r, 0, 4096, dma.ForCPU)    // all 64
	s := m.CacheStats()
	require.Equal(t, uint64(3), s.CleanLines)
	require.Equal(t, uint64(64), s.InvalLines)
	require.Zero(t, s.Cleaned, "nothing was dirty")
}

// TestCacheARMv7NoMaintenance: in the ARMv7 variant a Sync of cached memory
// cleans and invalidates nothing (the CPU's write never reaches the device,
// the device's never reaches the CPU) and is recorded as a fault once;
// uncached memory works as everywhere; CacheMaintenance says so up front.
func TestCacheARMv7NoMaintenance(t *testing.T) {
	m, r := cached(t, CacheConfig{NoMaintenance: true}, 256)
	require.False(t, m.CacheMaintenance())
	require.True(t, NewMemory(MemoryConfig{Cache: &CacheConfig{}}, nil).CacheMaintenance())
	require.True(t, NewMemory(MemoryConfig{}, nil).CacheMaintenance())

	r.CPU[3] = 0xC3
	m.Sync(r, 0, 64, dma.ForDevice)
	require.Equal(t, []byte{0}, devRead(t, m, r.IOVA+3, 1), "a clean reached memory on a CPU that cannot clean")
	require.NoError(t, m.WriteDMA(r.IOVA+70, []byte{0xD7}))
	m.Sync(r, 64, 64, dma.ForCPU)
	require.Zero(t, r.CPU[70], "an invalidate reached the CPU on a CPU that cannot invalidate")
	err := m.Faults().Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "AllocUncached")
	require.Len(t, m.Faults().List(), 1, "one fault, not one per Sync")

	u, err := m.AllocUncached(64, 0)
	require.NoError(t, err)
	u.CPU[0] = 0xAA
	m.Sync(u, 0, 64, dma.ForDevice)
	require.Equal(t, []byte{0xAA}, devRead(t, m, u.IOVA, 1))
	require.NoError(t, m.WriteDMA(u.IOVA+1, []byte{0xBB}))
	require.Equal(t, byte(0xBB), u.CPU[1])
}
