package bpf

import (
	"math"
	"unsafe"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native map-in-map lookups (jit_amd64_mim.go, jit_arm64_mim.go).
//
// An outer lookup (bpf_map_lookup_elem on an ARRAY_OF_MAPS or a
// HASH_OF_MAPS that r1 is loaded with) reads the inner map's id from the
// slot (the array's, or the value the hash lookup of the slots finds) and
// returns the handle innerLookup returns; an inner lookup (bpf_map_lookup_elem whose r1
// is not loaded with a map in a straight line) finds, at run time, the
// native descriptor (mimDesc) of the inner map its handle names and runs
// the array, hash or LPM lookup with the map's own figures read from the
// descriptor instead of the immediates a lookup of a known map has.
//
// The descriptors of a collection are published in a table (mimEnt) next
// to its inner mapRefs: innerRef publishes one whenever it makes a ref, so
// "the table has the id" is "the collection has a ref for it", which is
// what mapArg and innerLookup ask. The table is copy-on-write: Go builds a
// new one under innerRefs.mu and stores its address atomically (a release
// store); native code loads the address once per lookup and reads only
// what that table and its descriptors hold, which never change once
// published. A table or descriptor native code still reads stays
// allocated: every descriptor is also held by the collection (innerRefs
// keeps them all), and a table dropped by a newer one is freed only by a
// garbage collection cycle that starts after the drop (the store's write
// barrier shades it in a cycle in progress), whose stop-the-world phase
// waits for the goroutine in native code to return to Go (native code has
// no safe point): the argument maps.LPMTable gives for its nodes. The
// inner maps themselves stay reachable from maps' id registry, which never
// forgets a map, and from the descriptor; their storage (an Array's bytes,
// a preallocated Hash's buckets, stripes and slab) never moves or changes
// size.
//
// Replacing an inner map while programs run (maps.MapOfMaps.Update from
// Go) stores the slot's new id with one atomic 32-bit store, which native
// code and the interpreter read with one 32-bit load: a lookup sees the
// old map or the new one, never a mix, and then reads that map's
// descriptor. A lookup in a hash inner map runs under the map's stripe
// sequence as any native hash lookup does.
//
// A Runner caches the last handle it resolved (hsMimID).
//
// What the native code cannot vouch for goes to the slow path before
// anything is written, where Go runs the helper from the start: an id not
// published yet (the first lookup that gives a map makes its ref), an id
// at or above innerHandle, a handle that is not an inner map's, another
// collection, an inner map whose shape (mimShape) is not one the call site
// was compiled for (a hash with keys over 16 bytes, one not preallocated,
// ...), and what the array, hash and LPM lookups themselves send there.

// mimDesc is the native descriptor of an inner map: its shape and the
// figures of its storage the lookup code reads (the words the lookups of
// known maps have as immediates).
type mimDesc struct {
	shape uint64 // mimShapeOf; 0: no native lookup
	// Arrays (mapRef.arrayValue): storage, max_entries, stride, CPU slots.
	data, max, elem, ncpu uint64
	// Hashes (maps.HashTable): seeds, stripe index mask (Mask&StripeMask),
	// the address of the first stripe's sequence word,
	// the bucket mask and address, the walk's limit and the per-CPU
	// figures.
	s0, s1, smask, seq, mask, buckets, maxWalk uint64
	entries, elemSize, pcpu, hncpu             uint64
	root                                       uint64 // LPM tries: the root link's address
	m                                          maps.Map
}

// The slots of jitState.hs of the map-in-map lookups: the handle last
// resolved (0: none) and its descriptor's address, a cache that spares
// the table's probe when the same inner map is looked up again (the outer
// lookup, then the inner one, run after run). Runner.bind clears it when
// the Runner changes collection: while it is bound to one, the collection
// (which holds the descriptors) stays alive and its table only grows, so
// a cached handle stays resolved to the same descriptor.
const (
	hsDesc  = 5
	hsMimID = 6
)

// mimEnt is an entry of a descriptor table: open addressing on the map id
// (slot id&mask, then the next ones), 0 an empty slot; a table always has
// one. Entry 0 is the header: its id word holds mask<<4, the mask of the
// byte offset of a slot past the header.
type mimEnt struct {
	id   uint64
	desc *mimDesc
}

// The classes of inner maps with a native lookup.
const (
	mimArray = 1
	mimHash  = 2
	mimLPM   = 3
)

// mimShapeOf packs what the lookup code of an inner map bakes in: its
// class, whether it is an LRU and a per-CPU map, whether its values are
// writable, its key and value sizes. 0 when a figure does not fit.
func mimShapeOf(class uint64, ref *mapRef, lru, percpu bool) uint64 {
	if ref.keySize == 0 || ref.keySize > 255 || ref.valueSize == 0 || ref.valueSize > math.MaxInt32 {
		return 0
	}
	s := class | uint64(ref.keySize)<<8 | uint64(ref.valueSize)<<32
	for i, b := range []bool{lru, percpu, ref.progWritable} {
		if b {
			s |= 1 << (2 + i)
		}
	}
	return s
}

// newMimDesc describes the inner map of ref to native code (shape 0: its
// lookups go to Go).
func newMimDesc(ref *mapRef) *mimDesc {
	d := &mimDesc{m: ref.m}
	if !ref.lookupOK || ref.outer != nil {
		return d
	}
	if ref.arr != nil {
		if ref.keySize != 4 || ref.arrElem < uint64(ref.valueSize) || ref.arrMax == 0 || ref.arrNCPU == 0 ||
			ref.arrMax > math.MaxInt32 || ref.arrNCPU > math.MaxInt32 || ref.arrElem > math.MaxInt32 {
			return d
		}
		d.data = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(ref.arr))))
		d.max, d.elem, d.ncpu = ref.arrMax, ref.arrElem, ref.arrNCPU
		d.shape = mimShapeOf(mimArray, ref, false, ref.arrNCPU != 1)
		return d
	}
	if t, ok := maps.NativeHash(ref.m); ok && t.KeySize == ref.keySize && hashLayoutOK(t) {
		d.s0, d.s1, d.smask, d.mask = t.S0, t.S1, t.Mask&t.StripeMask, t.Mask
		d.seq, d.buckets = uint64(t.Stripes+t.SeqOff), uint64(t.Buckets)
		d.maxWalk, d.entries, d.elemSize, d.pcpu, d.hncpu = t.MaxWalk, t.Entries, t.ElemSize, uint64(t.PCPU), t.NCPU
		d.shape = mimShapeOf(mimHash, ref, t.LRU, t.PerCPU)
		return d
	}
	if t, ok := maps.NativeLPM(ref.m); ok && ref.keySize == 4+t.DataSize && lpmLayoutOK(t) {
		d.root = uint64(t.Root)
		d.shape = mimShapeOf(mimLPM, ref, false, false)
	}
	return d
}

// hashLayoutOK: the entry offsets both backends' hash code reaches with
// their immediates (arm64's scaled 12-bit offsets), the per-CPU figures
// amd64's 32-bit compares take.
func hashLayoutOK(t maps.HashTable) bool {
	for _, off := range []uintptr{t.NextOff, t.HashOff, t.KeyOff, t.ValOff, t.IdxOff} {
		if off%8 != 0 || off >= 8*4096 {
			return false
		}
	}
	return t.KeySize <= hashKeyMax && t.RefOff%4 == 0 && t.RefOff < 4*4096 && t.NCPU <= math.MaxInt32 && t.StripeSize <= math.MaxInt32 && t.SeqOff <= math.MaxInt32
}

// publish makes the descriptor of inner map id (ref) visible to native
// code: a new table with it, stored atomically. The caller holds ir.mu.
func (ir *innerRefs) publish(id uint32, ref *mapRef) {
	d := newMimDesc(ref)
	ir.descs = append(ir.descs, mimEnt{id: uint64(id), desc: d})
	n := uint64(8)
	for n < 2*uint64(len(ir.descs)) {
		n *= 2
	}
	t := make([]mimEnt, n+1)
	t[0].id = (n - 1) << 4
	for _, e := range ir.descs {
		i := e.id & (n - 1)
		for t[1+i].id != 0 {
			i = (i + 1) & (n - 1)
		}
		t[1+i] = e
	}
	ir.nat.Store(&t[0])
}

// lpmLayoutOK: the node offsets arm64's LPM walk reaches with its scaled
// 12-bit offsets.
func lpmLayoutOK(t maps.LPMTable) bool {
	for _, off := range []uintptr{t.ChildOff, t.DataOff, t.ValueOff} {
		if off%8 != 0 || off+8 >= 8*4096 {
			return false
		}
	}
	return t.ImOff%4 == 0 && t.ImOff < 4*4096 && t.PrefixOff%4 == 0 && t.PrefixOff < 4*4096
}
