//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// What the native bpf_redirect_map of both backends reads of its map,
// fixed at load (jit_amd64_helpers.go, jit_arm64_redirect.go).

// jitRedirectMap is a devmap, cpumap or xskmap whose bpf_redirect_map a
// backend runs in native code (redirectMap's steps): the map's slots read
// as maps.NativeSlots describes them, the redirect recorded as numbers
// (jitRedirect). As for jitArray, the native code first checks that r1 is
// handle and the Runner's collection coll; the map (and so its slots) lives
// as long as the collection.
type jitRedirectMap struct {
	handle  uint64
	coll    uintptr
	num     uint32
	slots   maps.SlotTable
	kind    RedirectKind
	allowed uint64 // the flags the helper takes for this map type
}

// redirectFor returns the native bpf_redirect_map of map number k of env's
// collection, when it is a devmap, cpumap or xskmap whose slots native code
// can read (maps.NativeSlots) and whose size fits a 32-bit immediate.
func (env jitEnv) redirectFor(k uint32) (jitRedirectMap, bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.outer != nil {
		return jitRedirectMap{}, false
	}
	rm := jitRedirectMap{handle: mapHandle(k), coll: uintptrOf(c), num: k, allowed: flagsActionMask}
	switch m.spec.Type {
	case ebpf.DevMap:
		rm.kind = RedirectDevMap
		rm.allowed |= flagBroadcast | flagExcludeIngr
	case ebpf.CPUMap:
		rm.kind = RedirectCPUMap
	case ebpf.XSKMap:
		rm.kind = RedirectXSKMap
	default:
		return jitRedirectMap{}, false
	}
	t, ok := maps.NativeSlots(m.m)
	if !ok || t.N > math.MaxInt32 || t.ValueOff > math.MaxInt32 {
		return jitRedirectMap{}, false
	}
	rm.slots = t
	return rm, true
}

// redirectAt returns the native bpf_redirect_map for the call at pc, when
// its map is loaded into r1 in a straight line before it and redirectFor
// takes it.
func (env jitEnv) redirectAt(plain []insn, targets []bool, pc int) (jitRedirectMap, bool) {
	k, ok := mapAt(plain, targets, pc)
	if !ok {
		return jitRedirectMap{}, false
	}
	return env.redirectFor(k)
}
