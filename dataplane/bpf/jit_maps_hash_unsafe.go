//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"
	"unsafe"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// offHS is the native hash lookup's scratch (jitState.hs): slot i at
// offHS + 8*i.
var offHS = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.hs))

// The scratch slots of the hash lookup.
const (
	hsHash = iota
	hsW0
	hsW1
	hsSeq
	hsStripe
)

// hsWord is the scratch slot of key word i: hsW0, hsW1, then the slots
// past the map-in-map cache (5 and 6).
func hsWord(i int) int32 {
	if i < 2 {
		return int32(hsW0 + i)
	}
	return int32(7 + i - 2)
}

// jitHash is a hash map (HASH, PERCPU_HASH, LRU_HASH, LRU_PERCPU_HASH)
// whose bpf_map_lookup_elem a backend runs in native code, walking the
// map's table as maps.HashTable describes it, with the result
// hMapLookup computes through maps.Hash.Lookup. The handle and
// collection checks are jitArray's; the table's addresses stay valid as
// long as the collection holds the map, which outlives the program's code
// (see jitArray).
type jitHash struct {
	handle   uint64  // regionMap<<32 | map number
	coll     uintptr // the *Collection the number resolves in
	t        maps.HashTable
	size     uint64  // value_size: the length of the value's region
	writable bool    // the value's region is writable (no BPF_F_RDONLY_PROG)
	dyn      bool    // an inner map's: the per-map figures read from its mimDesc
	mimTab   uintptr // a HASH_OF_MAPS' slots: the value is an inner map id (mimTableAddr)
	first    int32   // jitArray.first: a hash's values are never global data
}

// plainLookup is map number k of env's collection when programs may look
// it up and get its value itself (no array storage, no inner map).
func (env jitEnv) plainLookup(k uint32) (*mapRef, bool) {
	m := env.mapRef(k)
	if m == nil || m.arr != nil || !m.lookupOK || m.outer != nil || m.valueSize == 0 || m.valueSize > math.MaxInt32 {
		return nil, false
	}
	return m, true
}

// hashFor returns the native lookup of map number k of env's collection,
// when it is a hash map maps.NativeHash describes and its figures fit the
// code's 32-bit immediates; ok is false otherwise (the lookup then
// returns to Go).
func (env jitEnv) hashFor(k uint32) (h jitHash, ok bool) {
	return env.hashForKeys(k, hashKeyMax)
}

// hashForKeys is hashFor for code that takes keys of up to maxKey bytes.
func (env jitEnv) hashForKeys(k uint32, maxKey uint32) (h jitHash, ok bool) {
	m, ok := env.plainLookup(k)
	if !ok {
		return h, false
	}
	t, ok := maps.NativeHash(m.m)
	if !ok {
		return h, false
	}
	return env.hashOfTable(k, m, t, maxKey)
}

// heapHashFor is hashForKeys for a hash map made BPF_F_NO_PREALLOC
// (maps.NativeHeapHash): t.Heap is set, and the native lookup answers only
// misses, a key found going to Go.
func (env jitEnv) heapHashFor(k uint32, maxKey uint32) (h jitHash, ok bool) {
	m, ok := env.plainLookup(k)
	if !ok {
		return h, false
	}
	t, ok := maps.NativeHeapHash(m.m)
	if !ok {
		return h, false
	}
	return env.hashOfTable(k, m, t, maxKey)
}

// hashOfTable is the jitHash of map number k (m) described by t, when its
// figures fit the code's 32-bit immediates and its keys maxKey bytes.
func (env jitEnv) hashOfTable(k uint32, m *mapRef, t maps.HashTable, maxKey uint32) (h jitHash, ok bool) {
	if t.KeySize != m.keySize || t.KeySize > maxKey {
		return h, false
	}
	for _, v := range []uint64{t.MaxWalk, t.Entries, t.ElemSize, t.NCPU, uint64(t.StripeSize), t.NExtra} {
		if v > math.MaxInt32 {
			return h, false
		}
	}
	for _, off := range []uintptr{t.NextOff, t.HashOff, t.KeyOff, t.ValOff, t.IdxOff, t.RefOff, t.SeqOff, t.LockOff, t.LiveOff} {
		if off > math.MaxInt32 {
			return h, false
		}
	}
	return jitHash{
		handle:   mapHandle(k),
		coll:     uintptrOf(env.coll),
		t:        t,
		size:     uint64(m.valueSize),
		writable: m.progWritable,
		first:    firstRegion(env.coll, nil),
	}, true
}

// jitLPM is an LPM trie whose bpf_map_lookup_elem a backend runs in native
// code, walking the trie as maps.LPMTable describes it, with the result
// hMapLookup computes through maps.LPMTrie.Lookup.
type jitLPM struct {
	handle   uint64
	coll     uintptr
	t        maps.LPMTable
	size     uint64 // value_size
	writable bool
	dyn      bool // an inner map's: the root read from its mimDesc
	first    int32
}

// lpmFor is hashFor for LPM tries.
func (env jitEnv) lpmFor(k uint32) (l jitLPM, ok bool) {
	m, ok := env.plainLookup(k)
	if !ok {
		return l, false
	}
	t, ok := maps.NativeLPM(m.m)
	if !ok || m.keySize != 4+t.DataSize {
		return l, false
	}
	for _, off := range []uintptr{t.ChildOff + 8, t.ImOff, t.PrefixOff, t.DataOff, t.ValueOff} {
		if off > math.MaxInt32 {
			return l, false
		}
	}
	return jitLPM{handle: mapHandle(k), coll: uintptrOf(env.coll), t: t, size: uint64(m.valueSize), writable: m.progWritable,
		first: firstRegion(env.coll, nil)}, true
}

// sum is the total of v (the key-word loaders' piece offsets).
func sum(v []int32) int32 {
	s := int32(0)
	for _, x := range v {
		s += x
	}
	return s
}

// csumNativeMax is the longest buffer the native bpf_csum_diff sums
// (jit_amd64_csum.go, jit_arm64_csum.go): csum_partial's 64-byte rounds
// (two chains, their carries counted apart), then one pass of 32-, 16- and
// 8-byte chains and a 4-byte tail (or one 40-byte chain), which the code
// follows exactly; a size with no bit of ^csumNativeMax|3 set is native.
const csumNativeMax = 1<<16 - 4
