//go:build linux && (amd64 || arm64)

package bpf

import "math"

// The native LRU eviction's scratch slots (jitState.hs), shared by the
// backends (jit_amd64_hashevict.go, jit_arm64_hashevict.go).
const (
	hsEvE     = hsEvict + iota // the entry looked at
	hsEvHash                   // its hash, read before its stripe's lock
	hsEvV                      // its stripe's lock word
	hsEvTries                  // compare-and-swaps left on a lock (amd64)
)

// hashEvicts says h's full-map insert evicts natively: an LRU map whose
// slab's figures fit the code's 32-bit immediates.
func hashEvicts(h jitHash) bool {
	return h.t.LRU && h.t.Hand != 0 && h.t.SlabLen > 0 && h.t.SlabLen <= math.MaxInt32/3 && h.t.EntrySize <= math.MaxInt32
}
