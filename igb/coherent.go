package igb

import "github.com/xnic-dev/xnic/dma"

// Cache coherence probe. dma.Allocator.Sync is where a driver makes CPU writes
// visible to the device and device writes visible to the CPU; on a coherent
// platform it does nothing but still costs an interface call per descriptor and
// per buffer. An allocator may say that its memory is coherent through one of
// these optional methods, and the queues then skip Sync on the fast path:
//
//	Coherent() bool    // this package's probe: true when Sync is a no-op
//	NonCoherent() bool // sim.Memory's: false when the device shares the CPU's view
//
// An allocator with neither is treated as non-coherent: Sync is always called.
// The probe runs once per ring (and once per pool a TX queue trusts); an
// allocator's coherence must not change while it has live regions.

// Coherent is the optional interface an allocator implements to say that its
// memory needs no Sync (the answer must not change while it has live regions).
type Coherent interface {
	Coherent() bool
}

// nonCoherent is the probe sim.Memory answers.
type nonCoherent interface {
	NonCoherent() bool
}

// isCoherent reports whether a's memory is known to need no Sync.
func isCoherent(a dma.Allocator) bool {
	switch p := a.(type) {
	case Coherent:
		return p.Coherent()
	case nonCoherent:
		return !p.NonCoherent()
	}
	return false
}
