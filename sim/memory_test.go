package sim

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

func TestMemoryAllocPlacement(t *testing.T) {
	m := NewMemory(MemoryConfig{}, nil)
	r1, err := m.Alloc(100, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, r1.IOVA, uint64(1<<32), "default IOVAs lie above 4 GiB")
	require.Zero(t, r1.IOVA%PageSize)
	require.Len(t, r1.CPU, 100)
	r2, err := m.Alloc(64, 1<<16)
	require.NoError(t, err)
	require.Zero(t, r2.IOVA%(1<<16))
	require.Greater(t, r2.IOVA, r1.IOVA+PageSize, "a guard page separates regions")
	require.Zero(t, m.Limit())

	_, err = m.Alloc(10, 3)
	require.Error(t, err, "alignment must be a power of two")
	_, err = m.Alloc(0, 0)
	require.Error(t, err)

	low := NewMemory(MemoryConfig{Below4G: true}, nil)
	r, err := low.Alloc(4096, 0)
	require.NoError(t, err)
	require.Less(t, r.IOVA, uint64(1<<32))
	require.Equal(t, uint64(1<<32), low.Limit())

	small := NewMemory(MemoryConfig{MaxBytes: 8192}, nil)
	_, err = small.Alloc(8192, 0)
	require.NoError(t, err)
	_, err = small.Alloc(1, 0)
	require.ErrorIs(t, err, dma.ErrNoMemory)

	lim := NewMemory(MemoryConfig{Base: 0xFFFF_0000, Limit: 1 << 32}, nil)
	_, err = lim.Alloc(0x20000, 0)
	require.ErrorIs(t, err, dma.ErrNoMemory, "a region that would pass Limit is refused")
}

func TestMemoryDeviceAccessRefusals(t *testing.T) {
	f := &Faults{}
	m := NewMemory(MemoryConfig{}, f)
	r, err := m.Alloc(256, 0)
	require.NoError(t, err)
	copy(r.CPU, []byte("hello"))

	buf := make([]byte, 5)
	require.NoError(t, m.ReadDMA(r.IOVA, buf))
	require.Equal(t, "hello", string(buf))
	require.NoError(t, m.WriteDMA(r.IOVA+251, []byte("world")))
	require.Equal(t, "world", string(r.CPU[251:]))
	require.NoError(t, f.Err())
	require.NoError(t, m.Check(r.IOVA, 256))

	cases := []struct {
		name string
		iova uint64
		n    int
	}{
		{"straddles the end", r.IOVA + 250, 10},
		{"guard page after", r.IOVA + 256, 1},
		{"below the region", r.IOVA - 1, 2},
		{"32-bit truncated address", r.IOVA & 0xFFFFFFFF, 4},
		{"zero address", 0, 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Clear()
			err := m.ReadDMA(c.iova, make([]byte, c.n))
			require.ErrorIs(t, err, dma.ErrNotMapped)
			require.Error(t, m.WriteDMA(c.iova, make([]byte, c.n)))
			require.Equal(t, 2, f.Count())
			require.ErrorIs(t, f.Err(), ErrFault)
			require.ErrorIs(t, m.Check(c.iova, c.n), dma.ErrNotMapped)
		})
	}

	f.Clear()
	require.NoError(t, m.Free(r))
	require.Error(t, m.ReadDMA(r.IOVA, buf), "use after free is refused")
	require.Equal(t, 1, f.Count())
	require.ErrorIs(t, m.Free(r), dma.ErrNotMapped, "double free")
	require.Zero(t, m.Regions())

	f.Clear()
	r, err = m.Alloc(64, 0)
	require.NoError(t, err)
	m.SetDMAEnabled(false)
	require.ErrorIs(t, m.ReadDMA(r.IOVA, buf), ErrBusMaster)
	require.Equal(t, 1, f.Count())
}

func TestMemoryNonCoherent(t *testing.T) {
	f := &Faults{}
	m := NewMemory(MemoryConfig{NonCoherent: true}, f)
	require.True(t, m.NonCoherent())
	r, err := m.Alloc(4096, 0)
	require.NoError(t, err)

	copy(r.CPU[100:], "fresh")
	got := make([]byte, 5)
	require.NoError(t, m.ReadDMA(r.IOVA+100, got))
	require.Equal(t, make([]byte, 5), got, "without Sync(ForDevice) the device sees stale memory")
	m.Sync(r, 100, 5, dma.ForDevice)
	require.NoError(t, m.ReadDMA(r.IOVA+100, got))
	require.Equal(t, "fresh", string(got))

	require.NoError(t, m.WriteDMA(r.IOVA+200, []byte("dev")))
	require.Equal(t, []byte{0, 0, 0}, r.CPU[200:203], "without Sync(ForCPU) the CPU sees stale memory")
	m.Sync(r, 200, 3, dma.ForCPU)
	require.Equal(t, "dev", string(r.CPU[200:203]))
	require.NoError(t, f.Err())

	m.Sync(r, 4000, 200, dma.ForCPU)
	require.Equal(t, 1, f.Count(), "a sync past the region's end is a fault")
	other := &dma.Region{CPU: make([]byte, 10), IOVA: 0x1234000}
	m.Sync(other, 0, 10, dma.ForDevice)
	require.Equal(t, 2, f.Count(), "a sync of a foreign region is a fault")

	coh := NewMemory(MemoryConfig{}, f)
	rc, err := coh.Alloc(64, 0)
	require.NoError(t, err)
	copy(rc.CPU, "x")
	v, err := coh.View("test", rc.IOVA, 1)
	require.NoError(t, err)
	require.Equal(t, byte('x'), v[0], "coherent memory needs no sync")
}

func TestMemoryDevicePathZeroAlloc(t *testing.T) {
	m := NewMemory(MemoryConfig{}, nil)
	var regs []*dma.Region
	for i := 0; i < 8; i++ {
		r, err := m.Alloc(8192, 0)
		require.NoError(t, err)
		regs = append(regs, r)
	}
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		for _, r := range regs {
			if err := m.ReadDMA(r.IOVA+64, buf); err != nil {
				t.Fatal(err)
			}
			if err := m.WriteDMA(r.IOVA+128, buf); err != nil {
				t.Fatal(err)
			}
		}
		m.Sync(regs[0], 0, 64, dma.ForDevice)
	})
	require.Zero(t, allocs)
}

func BenchmarkMemoryView(b *testing.B) {
	m := NewMemory(MemoryConfig{}, nil)
	var regs []*dma.Region
	for i := 0; i < 4; i++ {
		r, err := m.Alloc(1<<20, 0)
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := regs[i&3]
		if _, err := m.View("bench", r.IOVA+uint64(i&0xFFF)*16, 16); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func TestFaultsErr(t *testing.T) {
	var f Faults
	require.NoError(t, f.Err())
	for i := 0; i < maxFaults+5; i++ {
		f.Add("write32", "CTRL", 0, "bad %d", i)
	}
	err := f.Err()
	require.True(t, errors.Is(err, ErrFault))
	require.Equal(t, maxFaults+5, f.Count())
	require.Len(t, f.List(), maxFaults)
	require.True(t, bytes.Contains([]byte(err.Error()), []byte("CTRL (0x0): bad 0")))
}
