//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// What the native bpf_redirect and bpf_redirect_map of both backends read
// of the call and its map, fixed at load (jit_amd64_redirect.go,
// jit_arm64_redirect.go).

// jitRedirectMap is a devmap, devmap_hash, cpumap or xskmap whose
// bpf_redirect_map a backend runs in native code (redirectMap's steps):
// the map's slots read as maps.NativeSlots describes them (a devmap_hash's
// chains walked), the redirect recorded as numbers (jitRedirect). The
// map (and so its slots) lives as long as the collection. The code checks
// neither r1 nor the Runner's collection:
// r1 holds the map's handle at the call (redirectAt takes only a lddw that
// reaches it in a straight line), and code compiled for a collection runs
// only while the Runner is bound to it (jitBoundColl).
type jitRedirectMap struct {
	num     uint32
	slots   maps.SlotTable
	kind    RedirectKind
	allowed uint64 // the flags the helper takes for this map type
}

// jitRedirectCall is a bpf_redirect_map call site: its map, and its key
// (r2) and flags (r3) when a constant reaches the call (constIn).
type jitRedirectCall struct {
	jitRedirectMap
	key, flags   uint64
	keyK, flagsK bool
}

// redirectFor returns the native bpf_redirect_map of map number k of env's
// collection, when it is a devmap, devmap_hash, cpumap or xskmap whose
// slots native code can read (maps.NativeSlots), whose size fits a 32-bit
// immediate, and whose number a record holds (rdMaps).
func (env jitEnv) redirectFor(k uint32) (jitRedirectMap, bool) {
	m := env.mapRef(k)
	if m == nil || m.outer != nil || k >= rdMaps {
		return jitRedirectMap{}, false
	}
	rm := jitRedirectMap{num: k, allowed: flagsActionMask}
	switch m.spec.Type {
	case ebpf.DevMap, ebpf.DevMapHash:
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
// takes it. Both backends record a broadcast (BPF_F_BROADCAST) natively.
func (env jitEnv) redirectAt(plain []insn, targets []bool, pc int) (jitRedirectCall, bool) {
	k, ok := mapAt(plain, targets, pc)
	if !ok {
		return jitRedirectCall{}, false
	}
	m, ok := env.redirectFor(k)
	if !ok {
		return jitRedirectCall{}, false
	}
	rc := jitRedirectCall{jitRedirectMap: m}
	rc.key, rc.keyK = constIn(plain, targets, pc, 2)
	rc.flags, rc.flagsK = constIn(plain, targets, pc, 3)
	return rc, true
}

// hitTag is the first word of the record of a redirect the call makes
// (rdTag) with the flags it has when they are a constant, 0 for them
// otherwise (the code then stores r3's low byte over them).
func (rc jitRedirectCall) hitTag() uint32 {
	var flags uint64
	if rc.flagsK {
		flags = rc.flags
	}
	return rdTag(rc.kind, flags, rc.num+1)
}

// constIn returns the value register reg holds at the call at pc when a
// mov of an immediate into it reaches the call in a straight line (no jump
// target, control flow or other write of reg in between), as loadedIn
// finds a lddw.
func constIn(plain []insn, targets []bool, pc int, reg uint8) (uint64, bool) {
	for q := pc - 1; q >= 0 && !targets[q+1]; q-- {
		in := plain[q]
		switch {
		case in.dst == reg && in.op == opMov64K:
			return uint64(in.imm), true
		case in.dst == reg && in.op == opMov32K:
			return uint64(uint32(in.imm)), true
		case in.dst == reg || !straightLine(in.op):
			return 0, false
		}
	}
	return 0, false
}
