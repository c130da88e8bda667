package sim

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

func TestExternalMapViewUnmap(t *testing.T) {
	f := &Faults{}
	m := NewMemory(MemoryConfig{}, f)
	low := make([]byte, 2*PageSize)
	high := make([]byte, PageSize)
	require.NoError(t, m.MapExternal(0x10_0000, high))
	require.NoError(t, m.MapExternal(0x1000, low), "inserted below an existing range")
	require.ErrorIs(t, m.MapExternal(0x2000, make([]byte, PageSize)), ErrExternalOverlap)
	require.ErrorIs(t, m.MapExternal(0xFF000, make([]byte, 2*PageSize)), ErrExternalOverlap)
	require.Error(t, m.MapExternal(^uint64(0)-10, make([]byte, 100)), "wraps")
	require.Error(t, m.MapExternal(0x5000, nil), "empty")

	v, err := m.View("rx-buffer", 0x1000+100, 50)
	require.NoError(t, err)
	v[0] = 0xAB
	require.Equal(t, byte(0xAB), low[100], "the device writes the external bytes themselves")
	require.NoError(t, m.WriteDMA(0x10_0000, []byte{1, 2, 3}))
	require.Equal(t, []byte{1, 2, 3}, high[:3])
	_, err = m.View("rx-buffer", 0x1000+2*PageSize-10, 20)
	require.ErrorIs(t, err, dma.ErrNotMapped, "a view running past the range")
	require.Equal(t, 1, f.Count())

	// Alloc keeps working above every external range, and the snapshot sorted.
	r, err := m.Alloc(100, 0)
	require.NoError(t, err)
	require.Greater(t, r.IOVA, uint64(0x10_0000+PageSize))
	require.NoError(t, m.WriteDMA(r.IOVA, []byte{9}))
	require.NoError(t, m.WriteDMA(0x1000, []byte{9}))

	_, _, err = m.UnmapExternal(0x1000, PageSize)
	require.ErrorIs(t, err, dma.ErrNotMapped, "size must match")
	_, _, err = m.UnmapExternal(r.IOVA, 100)
	require.ErrorIs(t, err, dma.ErrNotMapped, "an Alloc'd region is not external")
	b, quiesced, err := m.UnmapExternal(0x1000, 2*PageSize)
	require.NoError(t, err)
	require.False(t, quiesced, "no device lock: the caller must keep the bytes")
	require.Equal(t, &low[0], &b[0])
	_, err = m.View("rx-desc", 0x1000, 16)
	require.ErrorIs(t, err, dma.ErrNotMapped)
	require.Equal(t, 2, f.Count(), "logged as an IOMMU fault")
	require.Contains(t, f.List()[1].Detail, "IOMMU fault")
	require.Equal(t, 2, m.Regions())

	nc := NewMemory(MemoryConfig{NonCoherent: true}, nil)
	require.Error(t, nc.MapExternal(0x1000, low), "non-coherent memory cannot share external bytes")
	require.NoError(t, m.Close())
	require.Error(t, m.MapExternal(0x1000, low), "closed")
}

// TestExternalUnmapWaitsForDeviceLock: with a device lock, UnmapExternal returns
// only once an access holding the lock has finished.
func TestExternalUnmapWaitsForDeviceLock(t *testing.T) {
	m := NewMemory(MemoryConfig{}, nil)
	var mu sync.Mutex
	m.SetDeviceLock(&mu)
	require.NoError(t, m.MapExternal(0x1000, make([]byte, PageSize)))
	mu.Lock() // a device access in flight
	v, err := m.View("rx-buffer", 0x1000, 8)
	require.NoError(t, err)
	done := make(chan bool)
	go func() {
		_, q, err := m.UnmapExternal(0x1000, PageSize)
		require.NoError(t, err)
		done <- q
	}()
	select {
	case <-done:
		t.Fatal("UnmapExternal returned while the device held its lock")
	case <-time.After(20 * time.Millisecond):
	}
	copy(v, "in-flight")
	mu.Unlock()
	require.True(t, <-done, "quiesced")
}
