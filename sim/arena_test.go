package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

// TestArenaViewAcrossPieces: pieces mapped at IOVA-adjacent places of one
// arena give one view across them; a hole, a piece of another arena or an
// unmapped piece in the middle refuses the whole range.
func TestArenaViewAcrossPieces(t *testing.T) {
	f := &Faults{}
	m := NewMemory(MemoryConfig{}, f)
	const base = 0x4000_0000
	back := make([]byte, 16*PageSize)
	a, err := NewArena(base, back)
	require.NoError(t, err)
	for _, pg := range []uint64{0, 1, 2, 4} { // page 3 stays a hole
		require.NoError(t, m.MapArena(a, base+pg*PageSize, PageSize))
	}
	v, err := m.View("rx-desc", base+PageSize-8, 2*PageSize)
	require.NoError(t, err, "pages 0..2 are adjacent: one view")
	require.Len(t, v, 2*PageSize)
	v[0], v[len(v)-1] = 0xA1, 0xA2
	require.Equal(t, byte(0xA1), back[PageSize-8])
	require.Equal(t, byte(0xA2), back[3*PageSize-9], "the view is the arena's bytes")
	require.NoError(t, m.Check(base, 3*PageSize))

	_, err = m.View("rx-desc", base+2*PageSize, 2*PageSize+1)
	require.ErrorIs(t, err, dma.ErrNotMapped, "page 3 is a hole")
	require.Error(t, m.Check(base+3*PageSize-1, 2))
	_, err = m.View("rx-desc", base+3*PageSize, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped, "inside the hole")
	require.Equal(t, 2, f.Count(), "both refusals are IOMMU faults")

	// A piece of another arena right after page 4 is adjacent by IOVA only.
	other, err := NewArena(base+5*PageSize, make([]byte, PageSize))
	require.NoError(t, err)
	require.NoError(t, m.MapArena(other, base+5*PageSize, PageSize))
	_, err = m.View("tx-buffer", base+5*PageSize-4, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped, "two arenas: not one slice")
	// A plain external range is never joined either.
	require.NoError(t, m.MapExternal(base+6*PageSize, make([]byte, PageSize)))
	_, err = m.View("tx-buffer", base+6*PageSize-4, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped)

	// Unmapping the middle page cuts the view.
	_, _, err = m.UnmapExternal(base+PageSize, PageSize)
	require.NoError(t, err)
	_, err = m.View("rx-desc", base, 2*PageSize)
	require.ErrorIs(t, err, dma.ErrNotMapped, "page 1 was unmapped")
	_, err = m.View("rx-desc", base+2*PageSize, 16)
	require.NoError(t, err, "page 2 alone is still mapped")

	require.ErrorIs(t, m.MapArena(a, base+2*PageSize, PageSize), ErrExternalOverlap)
	require.Error(t, m.MapArena(a, base+15*PageSize, 2*PageSize), "past the arena's end")
	require.Error(t, m.MapArena(a, base-PageSize, PageSize), "below the arena")
	require.Error(t, m.MapArena(nil, base, PageSize))
	_, err = NewArena(^uint64(0)-10, make([]byte, 100))
	require.Error(t, err, "wraps")
}

// TestArenaViewAllocs: a view across pieces allocates nothing.
func TestArenaViewAllocs(t *testing.T) {
	m := NewMemory(MemoryConfig{}, nil)
	a, err := NewArena(0x1000_0000, make([]byte, 4*PageSize))
	require.NoError(t, err)
	for pg := uint64(0); pg < 4; pg++ {
		require.NoError(t, m.MapArena(a, 0x1000_0000+pg*PageSize, PageSize))
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := m.View("rx-buffer", 0x1000_0000+100, 3*PageSize); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, n)
}
