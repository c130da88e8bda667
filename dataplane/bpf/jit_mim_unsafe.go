//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Offsets of mimDesc's words for the native code.
var (
	offMimShape    = int32(unsafe.Offsetof(mimDesc{}.shape))
	offMimData     = int32(unsafe.Offsetof(mimDesc{}.data))
	offMimMax      = int32(unsafe.Offsetof(mimDesc{}.max))
	offMimElem     = int32(unsafe.Offsetof(mimDesc{}.elem))
	offMimNCPU     = int32(unsafe.Offsetof(mimDesc{}.ncpu))
	offMimS0       = int32(unsafe.Offsetof(mimDesc{}.s0))
	offMimS1       = int32(unsafe.Offsetof(mimDesc{}.s1))
	offMimSMask    = int32(unsafe.Offsetof(mimDesc{}.smask))
	offMimSeq      = int32(unsafe.Offsetof(mimDesc{}.seq))
	offMimMask     = int32(unsafe.Offsetof(mimDesc{}.mask))
	offMimBuckets  = int32(unsafe.Offsetof(mimDesc{}.buckets))
	offMimMaxWalk  = int32(unsafe.Offsetof(mimDesc{}.maxWalk))
	offMimEntries  = int32(unsafe.Offsetof(mimDesc{}.entries))
	offMimElemSize = int32(unsafe.Offsetof(mimDesc{}.elemSize))
	offMimPCPU     = int32(unsafe.Offsetof(mimDesc{}.pcpu))
	offMimHNCPU    = int32(unsafe.Offsetof(mimDesc{}.hncpu))
	offMimRoot     = int32(unsafe.Offsetof(mimDesc{}.root))
)

// mimTableAddr is the address of the word holding the collection's table
// address (atomic.Pointer keeps it as its only word).
func mimTableAddr(c *Collection) uintptr { return uintptr(unsafe.Pointer(&c.inner.nat)) }

var _ [unsafe.Sizeof(atomic.Pointer[mimEnt]{}) - unsafe.Sizeof(uintptr(0))]struct{} // one word

// mimSite is the map-in-map lookup of a helper call: the outer lookup of
// an ARRAY_OF_MAPS (outer) or of a HASH_OF_MAPS (hash, the hash lookup
// of its slots), or an inner lookup dispatching on shapes; none set for
// neither.
type mimSite struct {
	outer  *jitOuter
	hash   *jitHash
	shapes []jitInner
}

// mimAt says which map-in-map lookup the helper call at pc is: an outer
// one when r1 is loaded with a map of maps in a straight line before it,
// an inner one when r1 is loaded with no map there.
func (env jitEnv) mimAt(plain []insn, targets []bool, pc int) mimSite {
	if !helperOf(plain[pc].imm).nativeArray() { // bpf_map_lookup_elem
		return mimSite{}
	}
	k, isMap := mapAt(plain, targets, pc)
	if !isMap {
		return mimSite{shapes: env.innerShapes()}
	}
	if o, ok := env.outerFor(k); ok {
		return mimSite{outer: &o}
	}
	if h, ok := env.outerHashFor(k); ok {
		return mimSite{hash: &h}
	}
	return mimSite{}
}

// mimEmitter is a backend's code for the three kinds of mimSite (the
// hash of maps' outer lookup is its hash lookup, whose hashFound gives the
// handle).
type mimEmitter interface {
	outerLookup(pc int, o jitOuter)
	hashLookup(pc int, h jitHash)
	innerLookup(pc int, shapes []jitInner)
}

// emitMim emits the map-in-map lookup of the helper call at pc with e and
// reports whether there was one.
func (env jitEnv) emitMim(e mimEmitter, plain []insn, targets []bool, pc int) bool {
	s := env.mimAt(plain, targets, pc)
	switch {
	case s.outer != nil:
		e.outerLookup(pc, *s.outer)
	case s.hash != nil:
		e.hashLookup(pc, *s.hash)
	case s.shapes != nil:
		e.innerLookup(pc, s.shapes)
	default:
		return false
	}
	return true
}

// outerHashFor is the native outer lookup of map number k of env's
// collection when it is a HASH_OF_MAPS whose slots (a preallocated Hash of
// u32 ids) the hash lookup walks: the value found gives the handle.
func (env jitEnv) outerHashFor(k uint32) (h jitHash, ok bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.outer == nil || m.outer.Spec().Type != ebpf.HashOfMaps {
		return h, false
	}
	t, ok := maps.NativeHash(m.outer.Slots())
	if !ok || t.KeySize != m.keySize || t.LRU || t.PerCPU || !hashLayoutOK(t) {
		return h, false
	}
	return jitHash{handle: mapHandle(k), coll: uintptrOf(c), t: t, size: 4, mimTab: mimTableAddr(c)}, true
}

// jitOuter is an ARRAY_OF_MAPS whose lookup native code runs: the slots'
// storage (maps.Array of u32 ids, 8 bytes apart), never moved.
type jitOuter struct {
	handle uint64
	coll   uintptr
	tab    uintptr // mimTableAddr
	data   uintptr
	max    uint64
}

// outerFor is the native outer lookup of map number k of env's collection.
func (env jitEnv) outerFor(k uint32) (o jitOuter, ok bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.outer == nil || m.keySize != 4 || m.outer.Spec().Type != ebpf.ArrayOfMaps {
		return o, false
	}
	a, ok := m.outer.Slots().(*maps.Array)
	max := uint64(m.outer.Spec().MaxEntries)
	if !ok || a.ElemSize() != 8 || uint64(len(a.Bytes())) != 8*max || max == 0 || max > math.MaxInt32 {
		return o, false
	}
	return jitOuter{handle: mapHandle(k), coll: uintptrOf(c), tab: mimTableAddr(c),
		data: uintptr(unsafe.Pointer(unsafe.SliceData(a.Bytes()))), max: max}, true
}

// jitInner is one shape of inner map an inner lookup handles: the lookup
// of its class compiled with dyn set (the map's figures read from the
// descriptor).
type jitInner struct {
	shape uint64
	class uint64
	arr   jitArray
	hash  jitHash
	lpm   jitLPM
}

// mimMaxShapes bounds the shapes one call site dispatches on.
const mimMaxShapes = 8

// innerShapes are the shapes of the inner map templates of env's
// collection's maps of maps that have a native lookup; the call sites of
// inner lookups dispatch on them. Every inner map matches its outer map's
// template (maps.MapOfMaps.compatible), so the template's shape is the
// one the code meets; a map of another shape goes to Go.
func (env jitEnv) innerShapes() []jitInner {
	c := env.coll
	if c == nil {
		return nil
	}
	var out []jitInner
	for _, m := range c.mapRefs {
		if m == nil || m.outer == nil {
			continue
		}
		in, ok := templateShape(m.outer.InnerSpec(), uintptrOf(c))
		if !ok || len(out) == mimMaxShapes {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o.shape == in.shape
		}
		if !dup {
			out = append(out, in)
		}
	}
	return out
}

// templateShape compiles the lookup of the template's shape from a map
// made to the template (one entry: its layout, not its contents, counts).
func templateShape(s maps.Spec, coll uintptr) (jitInner, bool) {
	s.MaxEntries = 1
	s.Name = "mim-probe"
	probe, err := maps.New(s)
	if err != nil {
		return jitInner{}, false
	}
	ref := newInnerRef(probe)
	d := newMimDesc(ref)
	in := jitInner{shape: d.shape, class: d.shape & 3}
	switch in.class {
	case mimArray:
		in.arr = jitArray{coll: coll, size: uint64(ref.valueSize), writable: ref.progWritable, ncpu: d.ncpu, dyn: true}
	case mimHash:
		t, _ := maps.NativeHash(probe)
		in.hash = jitHash{coll: coll, t: t, size: uint64(ref.valueSize), writable: ref.progWritable, dyn: true}
	case mimLPM:
		t, _ := maps.NativeLPM(probe)
		in.lpm = jitLPM{coll: coll, t: t, size: uint64(ref.valueSize), writable: ref.progWritable, dyn: true}
	default:
		return jitInner{}, false
	}
	return in, true
}
