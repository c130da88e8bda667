package vfiouser

import (
	"fmt"

	"github.com/xnic-dev/xnic/sim"
)

// Arenas. Behind a guest IOMMU, QEMU sends one DMA_MAP per guest IOMMU
// mapping (hw/vfio/listener.c: one per IOMMU notifier event; Linux's
// intel-iommu maps 4 KiB pages unless the memory is in huge pages), and
// IOVA-adjacent pages come from unrelated offsets of the guest's memory file.
// A ring or buffer that spans two of them must still be one slice for the
// model (sim.Memory.View). So the server reserves an arena of inaccessible
// address space per aligned IOVA window as it is first used, maps each
// DMA_MAP's descriptor at the arena address of its IOVA (MAP_FIXED), and hands
// it to the model with sim.Memory.MapArena: pieces adjacent by IOVA are
// adjacent in memory, and the model still refuses any byte no live piece
// covers (the holes stay PROT_NONE and are never in a view). DMA_UNMAP swaps
// the piece for zero pages, then after unmapGrace makes it PROT_NONE again;
// the arena is unmapped when the session ends.

const (
	// arenaWindow is the IOVA span (and alignment) of one arena: virtual
	// address space only, nothing is committed until a DMA_MAP is placed.
	arenaWindow = 1 << 30
	// maxArenas bounds the address space a client can make the server
	// reserve (64 GiB); DMA_MAPs beyond it are mapped on their own.
	maxArenas = 64
)

// dmaArena is one reservation. Immutable once made.
type dmaArena struct {
	base uint64 // IOVA of mem[0]
	mem  []byte // the reservation (PROT_NONE where nothing is mapped)
	sim  *sim.Arena
}

// arenaForLocked returns the arena that holds [iova, iova+size), reserving
// one for its window when none does, or nil when the range spans two arenas
// or maxArenas are in use (the range is then mapped on its own, and views
// across it and its neighbours are refused as before).
func (t *dmaTable) arenaForLocked(iova, size uint64) (*dmaArena, error) {
	lo := iova &^ (arenaWindow - 1)
	hi := (iova + size + arenaWindow - 1) &^ (arenaWindow - 1)
	if hi <= lo { // the window would wrap past 2^64
		return nil, nil
	}
	for _, a := range t.arenas {
		end := a.base + uint64(len(a.mem))
		if a.base <= iova && iova+size <= end {
			return a, nil
		}
		if a.base < hi && lo < end {
			return nil, nil // it shares a window with an arena that does not hold it
		}
	}
	if len(t.arenas) >= maxArenas || hi-lo > 1<<40 {
		return nil, nil
	}
	mem, err := reserve(int(hi - lo))
	if err != nil {
		return nil, fmt.Errorf("reserve %d MiB of address space for IOVAs [0x%x, 0x%x): %w", (hi-lo)>>20, lo, hi, err)
	}
	sa, err := sim.NewArena(lo, mem)
	if err != nil {
		release(mem)
		return nil, err
	}
	a := &dmaArena{base: lo, mem: mem, sim: sa}
	t.arenas = append(t.arenas, a)
	return a, nil
}

// piece is the part of a's reservation at [iova, iova+size).
func (a *dmaArena) piece(iova, size uint64) []byte {
	o := iova - a.base
	return a.mem[o : o+size : o+size]
}

// restoreLocked makes g's pages PROT_NONE again, except where a live range
// was mapped over them since (an IOVA reused within the grace period).
func (t *dmaTable) restoreLocked(g grave) {
	from, end := g.iova, g.iova+uint64(len(g.mem))
	for from < end {
		next := end
		for _, r := range t.ranges {
			if r.arena != g.arena {
				continue
			}
			if r.iova <= from && from < r.iova+r.size {
				from = r.iova + r.size // covered: skip past it
				next = 0
				break
			}
			if r.iova > from && r.iova < next {
				next = r.iova
			}
		}
		if next == 0 {
			continue
		}
		// On failure the zero pages stay: the guest's memory is gone either way.
		_ = protNone(g.arena.piece(from, next-from))
		from = next
	}
}
