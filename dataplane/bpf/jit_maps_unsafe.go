//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"
	"unsafe"
)

// More offsets for native code: the map lookup reads the Runner's
// collection and CPU slot, the region table's capacity and a region's
// buffer length.
var (
	offColl         = int32(unsafe.Offsetof(Runner{}.coll))
	offCPU          = int32(unsafe.Offsetof(Runner{}.cpu))
	offRegionsCap   = offRegions + 2*int32(unsafe.Sizeof(uintptr(0)))
	offRegionBufLen = offRegionBuf + int32(unsafe.Sizeof(uintptr(0)))
)

// regionSearchBack is how many entries back from the end of the region
// table addRegion looks for the one a lookup of the same value made.
const regionSearchBack = 4

// jitArray is an array map (BPF_MAP_TYPE_ARRAY or PERCPU_ARRAY) whose
// bpf_map_lookup_elem a backend runs in native code, with the values
// helpers.go's callHelper and mapRef.arrayValue compute, fixed at load:
// the map's storage never moves or changes size (maps.Array allocates it
// once), and a map number names the same mapRef for the collection's life.
// r1 holds handle and the Runner is bound to coll whenever the native
// code runs (mapChecksProof in jit_first.go), so these values hold then.
//
// coll and data are addresses of Go heap objects that the program keeps
// alive (Program.coll, then Collection.mapRefs, then mapRef.arr) for as
// long as its code is mapped, and the Go collector does not move heap
// objects: the same assumption as for the Runner (see jit_unsafe.go).
type jitArray struct {
	handle   uint64  // regionMap<<32 | map number
	coll     uintptr // the *Collection the number resolves in
	data     uintptr // &mapRef.arr[0]
	max      uint64  // max_entries: a key at or above it finds nothing
	elem     uint64  // stride between slots: value_size rounded up to 8
	ncpu     uint64  // CPU slots: 1 for a plain array
	size     uint64  // value_size: the length of the value's region
	writable bool    // the value's region is writable (no BPF_F_RDONLY_PROG)
	dyn      bool    // an inner map's: data, max, elem, ncpu read from its mimDesc
	// first is the region number the run's first lookup gets when it
	// returns a value not yet in the table (regionStatic+len(coll.statics),
	// the entry just past the fixed part), when none of the statics
	// addRegion would search then (the last regionSearchBack) is in this
	// map's storage, so that a table still at its fixed length has no
	// entry of the value; 0 when unknown (valueRegion then searches).
	first int32
}

// arrayFor returns the native lookup of map number k of env's collection,
// when it is an array of the layout arrayValue reads (mapRef.arr set) and
// every figure fits a 32-bit immediate; ok is false otherwise (the lookup
// then returns to Go).
func (env jitEnv) arrayFor(k uint32) (a jitArray, ok bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.arr == nil || !m.lookupOK || m.outer != nil || m.keySize != 4 || m.valueSize == 0 {
		return a, false
	}
	for _, v := range []uint64{m.arrMax, m.arrElem, m.arrNCPU, uint64(m.valueSize), m.arrMax * m.arrNCPU} {
		if v == 0 || v > math.MaxInt32 {
			return a, false
		}
	}
	if uint64(len(m.arr)) != m.arrElem*m.arrMax*m.arrNCPU || m.arrElem < uint64(m.valueSize) {
		return a, false
	}
	return jitArray{
		handle:   mapHandle(k),
		coll:     uintptrOf(c),
		data:     uintptr(unsafe.Pointer(unsafe.SliceData(m.arr))),
		max:      m.arrMax,
		elem:     m.arrElem,
		ncpu:     m.arrNCPU,
		size:     uint64(m.valueSize),
		writable: m.progWritable,
		first:    firstRegion(c, m.arr),
	}, true
}

// firstRegion is jitArray.first for a map whose storage is data (nil for
// a hash or LPM trie: never a static's).
func firstRegion(c *Collection, data []byte) int32 {
	n := len(c.statics)
	if regionStatic+n+1 >= maxRegions {
		return 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	hi := lo + uintptr(len(data))
	for _, rg := range c.statics[max(0, n-regionSearchBack):] {
		if len(rg.buf) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(rg.buf)))
		if p < hi && p+uintptr(len(rg.buf)) > lo {
			return 0 // a static of this map (an array's first value)
		}
	}
	return int32(regionStatic + n)
}

// uintptrOf is the address of c, which native code compares Runner.coll
// with (never dereferenced through it).
func uintptrOf(c *Collection) uintptr { return uintptr(unsafe.Pointer(c)) }

// offFirst is Runner.jit.first (jit_first.go).
var offFirst = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.first))

// offPCPU is Runner.jit.pcpu (jit_first.go).
var offPCPU = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.pcpu))
