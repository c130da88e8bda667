package sim

import "fmt"

// Arena is a stretch of another party's address space laid out by IOVA: byte
// i of B is the one the device reaches at IOVA Base+i. A vfio-user client
// maps guest memory in pieces (one DMA_MAP per guest IOMMU mapping: 4 KiB
// each when the guest's DMA memory is not in huge pages), and IOVA-adjacent
// pieces usually come from unrelated offsets of the guest's memory file; the
// server maps each piece at the place in one reserved arena that matches its
// IOVA, so the pieces are adjacent in the server's memory too. Pieces mapped
// with MapArena then give one View across them, as an IOMMU's page tables do
// for a device whose buffer spans several pages. The bytes of B between
// pieces are the caller's to keep inaccessible (PROT_NONE): the Memory never
// hands out a view that is not wholly covered by live pieces.
type Arena struct {
	base uint64 // immutable: the IOVA of b[0]
	b    []byte // immutable: the reservation
}

// NewArena describes the reservation b, which the device reaches from IOVA
// base up. b must stay mapped (if inaccessible) as long as a piece of it is
// mapped into a Memory.
func NewArena(base uint64, b []byte) (*Arena, error) {
	if len(b) == 0 || base+uint64(len(b)) < base {
		return nil, fmt.Errorf("sim: arena of %d bytes at IOVA 0x%x: empty or wrapping", len(b), base)
	}
	return &Arena{base: base, b: b}, nil
}

// Base is the IOVA of the arena's first byte.
func (a *Arena) Base() uint64 { return a.base }

// Size is the arena's length in bytes.
func (a *Arena) Size() uint64 { return uint64(len(a.b)) }

// MapArena makes [iova, iova+n) of arena a visible to the device, like
// MapExternal with the arena's bytes there; UnmapExternal removes it. A View
// across this piece and IOVA-adjacent pieces of the same arena is one slice
// of the arena; a View reaching a byte no live piece covers is refused.
func (m *Memory) MapArena(a *Arena, iova uint64, n int) error {
	if a == nil {
		return fmt.Errorf("sim: arena map at 0x%x: no arena", iova)
	}
	if n <= 0 || iova < a.base || iova-a.base > uint64(len(a.b)) || uint64(n) > uint64(len(a.b))-(iova-a.base) {
		return fmt.Errorf("sim: arena map of %d bytes at 0x%x: outside the arena [0x%x, +0x%x)", n, iova, a.base, len(a.b))
	}
	o := iova - a.base
	return m.mapExternal(iova, a.b[o:o+uint64(n):o+uint64(n)], a, nil)
}
