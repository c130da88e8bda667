//go:build linux && (amd64 || arm64)

package bpf

import "math"

// Native bpf_map_update_elem and bpf_map_delete_elem on LPM tries of up to
// 8 data bytes (jit_amd64_lpmupd.go, jit_arm64_lpmupd.go): what both
// backends share.

// The scratch slots of the LPM writes (jitState.hs; 5 and 6 are the
// map-in-map cache's, left alone).
const (
	luPlen   = 0  // the key's prefix length
	luData   = 1  // the key's data, big-endian from bit 63 down
	luRaw    = 2  // the key's data as stored (a little-endian word)
	luVal    = 3  // the value's address
	luSlot   = 4  // the address of the link to the node walked to
	luM      = 7  // the bits the node and the key share
	luTrim2  = 8  // delete: the link to the node's parent
	luParent = 9  // delete: the node's parent (0: none)
	luNode   = 10 // the node walked to
	luNew    = 11 // update: the new key's node
	luIm     = 12 // update: the new intermediate node
)

// lpmUpdateFor is lpmFor for bpf_map_update_elem and bpf_map_delete_elem:
// the map must also take updates, and its figures fit 32-bit immediates.
func (env jitEnv) lpmUpdateFor(k uint32) (jitLPM, bool) {
	l, ok := env.lpmFor(k)
	if !ok || !env.mapRef(k).updateOK || l.t.MaxEntries > math.MaxInt32 || l.t.Lock == 0 || l.t.Spare == 0 {
		return jitLPM{}, false
	}
	return l, true
}
