package dma

// Cache coherence probe. Allocator.Sync is where a driver makes CPU writes
// visible to the device and device writes visible to the CPU; on a coherent
// platform it does nothing but still costs an interface call per descriptor and
// per buffer. An allocator may say that its memory is coherent through one of
// these optional methods, and drivers then skip Sync on the fast path:
//
//	Coherent() bool    // true when Sync is a no-op (vfio's type1 allocator)
//	NonCoherent() bool // false when the device shares the CPU's view (sim.Memory, physmem)
//
// An allocator with neither is treated as non-coherent: Sync is always called.
// A driver probes once per ring or pool; an allocator's coherence must not
// change while it has live regions.

// Coherent is the optional interface an allocator implements to say that its
// memory needs no Sync.
type Coherent interface {
	Coherent() bool
}

// IsCoherent reports whether a's memory is known to need no Sync.
func IsCoherent(a Allocator) bool {
	switch p := a.(type) {
	case Coherent:
		return p.Coherent()
	case interface{ NonCoherent() bool }:
		return !p.NonCoherent()
	}
	return false
}
