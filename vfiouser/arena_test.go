package vfiouser_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
)

// TestDMAMapPagesOneView maps guest memory as a vIOMMU with 4 KiB pages does:
// one DMA_MAP per page, IOVA-adjacent pages at unrelated (here reversed) file
// offsets. The model sees one view across them, in IOVA order; a page never
// mapped, or unmapped, refuses any view that reaches it.
func TestDMAMapPagesOneView(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	const pg, pages, iova = 4096, 4, 0x7_ff00_0000
	ram, err := vfiousertest.NewMemfd(pages * pg)
	require.NoError(t, err)
	defer ram.Close()
	rw := vfiouser.DMAFlagRead | vfiouser.DMAFlagWrite
	for k := uint64(0); k < pages; k++ {
		off := (pages - 1 - k) * pg // IOVA page k is file page 3-k
		ram.Mem[off] = byte('A' + k)
		require.NoError(t, s.c.DMAMap(iova+k*pg, pg, off, ram.Fd, rw))
	}
	require.NoError(t, s.dev.EnableBusMaster())
	mem := s.dev.Memory()
	v, err := mem.View("rx-buffer", iova, pages*pg)
	require.NoError(t, err, "four IOVA-adjacent pages are one view")
	for k := 0; k < pages; k++ {
		require.Equal(t, byte('A'+k), v[k*pg], "IOVA page %d", k)
	}
	v[2*pg-1], v[2*pg] = 0x11, 0x22 // a write across the page boundary
	require.Equal(t, byte(0x11), ram.Mem[3*pg-1], "IOVA page 1 is file page 2")
	require.Equal(t, byte(0x22), ram.Mem[pg], "IOVA page 2 is file page 1")

	// A fifth page after a hole: adjacent views stop at the hole.
	require.NoError(t, s.c.DMAMap(iova+5*pg, pg, 0, ram.Fd, rw))
	faults := s.dev.Faults().Count()
	_, err = mem.View("rx-buffer", iova+3*pg, 3*pg)
	require.ErrorIs(t, err, dma.ErrNotMapped, "IOVA page 4 was never mapped")
	require.Equal(t, faults+1, s.dev.Faults().Count(), "an IOMMU fault")

	require.NoError(t, s.c.DMAUnmap(iova+pg, pg))
	_, err = mem.View("rx-buffer", iova, 2*pg)
	require.ErrorIs(t, err, dma.ErrNotMapped, "page 1 unmapped")
	require.Equal(t, make([]byte, pg), v[pg:2*pg], "the old view of page 1 reads zero pages")
	v[pg] = 'X'
	require.Equal(t, byte(0x11), ram.Mem[3*pg-1], "and no longer reaches the guest")
	require.NoError(t, s.end())
}

// TestDMAMapReuseInGrace: an IOVA unmapped and mapped again before the unmap's
// grace period ends keeps its new mapping when the grace ends (the restore to
// PROT_NONE skips it; an access would fault the process otherwise).
func TestDMAMapReuseInGrace(t *testing.T) {
	s := negotiated(t, igbsim.Config{})
	const pg, iova = 4096, 0x1_0000_0000
	ram, err := vfiousertest.NewMemfd(4 * pg)
	require.NoError(t, err)
	defer ram.Close()
	rw := vfiouser.DMAFlagRead | vfiouser.DMAFlagWrite
	require.NoError(t, s.c.DMAMap(iova, 2*pg, 0, ram.Fd, rw))
	require.NoError(t, s.c.DMAMap(iova+4*pg, pg, 3*pg, ram.Fd, rw))
	require.NoError(t, s.c.DMAUnmap(iova, 2*pg))
	require.NoError(t, s.c.DMAMap(iova+pg, pg, 2*pg, ram.Fd, rw), "half of the released range, reused at once")
	time.Sleep(150 * time.Millisecond) // past unmapGrace
	require.NoError(t, s.c.DMAUnmap(iova+4*pg, pg), "an unmap sweeps the expired graves")
	require.NoError(t, s.dev.EnableBusMaster())
	require.NoError(t, s.dev.Memory().WriteDMA(iova+pg+8, []byte("reused")))
	require.Equal(t, "reused", string(ram.Mem[2*pg+8:2*pg+14]))
	_, err = s.dev.Memory().View("rx-buffer", iova, 8)
	require.ErrorIs(t, err, dma.ErrNotMapped, "the other half stays unmapped")
	require.NoError(t, s.end())
}
