//go:build linux && (amd64 || arm64)

package bpf

// Native bpf_map_update_elem on arrays and per-CPU arrays
// (jit_amd64_update.go, jit_arm64_update.go), with hMapUpdate's steps and
// maps.Array.Update's results: r1 the map's handle (another: Go), the key
// and the value checked as loadSlice checks them (a failure: Go, which
// faults), flags above BPF_EXIST (EINVAL in Go), a key at or above
// max_entries -E2BIG, BPF_NOEXIST -EEXIST, else the value copied into
// the slot (CPU slot r.cpu of a per-CPU array; a CPU out of range: Go)
// and r0 = 0; r1-r5 are kept. The copy goes forward in words and then
// the tail, which is what copy does unless the value overlaps the slot
// from below: that case goes to Go, before anything is written. An
// array's Update takes no lock (maps.Array): the copy is the kernel's
// memcpy of array_map_update_elem and races with readers just as Go's.

// updateUnrolled is the largest value the copy unrolls; longer ones loop.
const updateUnrolled = 128

// arrayUpdateFor is arrayFor for bpf_map_update_elem: the map must also
// take updates from programs.
func (env jitEnv) arrayUpdateFor(k uint32) (jitArray, bool) {
	a, ok := env.arrayFor(k)
	if !ok || !env.mapRef(k).updateOK || env.mapRef(k).spec.SpinLock {
		return jitArray{}, false // a lock's value: Go copies around the lock word
	}
	return a, true
}

// copyPieces are the loads and stores of a forward copy of n bytes: words,
// then 4, 2 and 1 bytes, from offset 0 (or from the loop's end).
func copyPieces(n int32) []int32 {
	var p []int32
	for _, s := range []int32{8, 4, 2, 1} {
		for n >= s {
			p = append(p, s)
			n -= s
		}
	}
	return p
}

// The update flags (include/uapi/linux/bpf.h).
const (
	flagNoExist = 1 // BPF_NOEXIST
	flagExist   = 2 // BPF_EXIST
)

// hashUpdateFor is hashFor for bpf_map_update_elem and
// bpf_map_delete_elem, whose native code answers only what writes
// nothing: BPF_NOEXIST of a key present (-EEXIST), BPF_EXIST or a delete
// of a key absent (-ENOENT), found by the lock-free probe of the native
// lookup (the stripe's sequence even and unchanged across the walk, as
// Hash.get trusts it), which is linearisable with Go's writers as that
// lookup is. What writes takes the stripe's lock (jit_hashupd.go): a
// per-CPU slot written in place, inserts, replacements and deletes of a
// key present on both backends, those that link entries only while the
// collector's write barrier is off (linking entries writes Go pointers),
// else in Go.
//
// Keys may be as long as the backend's writes take (hashWriteKeyMax).
func (env jitEnv) hashUpdateFor(k uint32) (jitHash, bool) {
	h, ok := env.hashForKeys(k, hashWriteKeyMax)
	if !ok || !env.mapRef(k).updateOK {
		return jitHash{}, false
	}
	return h, true
}
