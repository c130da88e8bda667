//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// What the native bpf_tail_call of both backends reads of its program
// array, fixed at load (jit_amd64_helpers.go, jit_arm64_tail.go);
// bpf_redirect_map's is in jit_redirect_targets.go.

// jitProgArray is a program array whose bpf_tail_call a backend runs in
// native code (tailCall's steps): its slots as maps.NativeProgSlots
// describes them. As for jitArray, the code first checks that r2 is handle
// and the Runner's collection coll.
type jitProgArray struct {
	handle uint64
	coll   uintptr
	slots  maps.SlotTable
}

// progArrayFor returns the native tail call through map number k of env's
// collection, when it is a program array.
func (env jitEnv) progArrayFor(k uint32) (jitProgArray, bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.progs == nil || m.outer != nil {
		return jitProgArray{}, false
	}
	t, ok := maps.NativeProgSlots(m.progs)
	if !ok || t.N > math.MaxInt32 || t.ValueOff > math.MaxInt32-8 {
		return jitProgArray{}, false
	}
	return jitProgArray{handle: mapHandle(k), coll: uintptrOf(c), slots: t}, true
}

// tailArrayAt is the program array of the tail call at pc of plain, when
// r2 is loaded with one before it; sure says it is loaded in a straight
// line (mapIn), so that r2 holds exactly that array's handle at the call.
//
// Otherwise the map is a guess that the code checks at run time (r2
// against its handle; another map goes to the slow path), so where paths
// with their own loads of r2 join before the call (a compiler's shared
// call site), the nearest program array loaded into r2 before the call
// stands for it.
func (env jitEnv) tailArrayAt(plain []insn, targets []bool, pc int) (a jitProgArray, sure, ok bool) {
	if k, in := mapIn(plain, targets, pc, 2); in {
		a, ok = env.progArrayFor(k)
		return a, ok, ok
	}
	for q := pc - 1; q >= 0; q-- {
		in := plain[q]
		if in.op != opLdMap || in.dst != 2 || in.imm < 0 || in.imm > math.MaxUint32 {
			continue
		}
		if a, ok := env.progArrayFor(uint32(in.imm)); ok {
			return a, false, true
		}
	}
	return jitProgArray{}, false, false
}

// tailSite is a native tail call's program array with what the analysis
// proved at the call, each fact a check the backend leaves out: r2 holds
// the array's handle (r2Sure: no compare with it), r1 the context on
// every path (ctxSure: ctxArgs), the code runs only with a frame
// (frameSure), and r3 is a constant (idxSure: the index idx, its low 32
// bits as the kernel reads it, compared with max_entries at load, its
// slot's address computed then). The run-time checks left, in the same
// order, are the collection's, the count's and the slot's.
type tailSite struct {
	jitProgArray
	r2Sure, ctxSure, frameSure, idxSure bool
	idx                                 uint32
}

// tailFacts is what a backend knows of its program at every tail call:
// ctxR1 from ctxArgs, frameSure from frameSure.
type tailFacts struct {
	ctxR1     []bool
	frameSure bool
}

// tailSiteAt is the tail call at pc with the facts proved there (tailSite).
func (env jitEnv) tailSiteAt(plain []insn, targets []bool, f tailFacts, pc int) (tailSite, bool) {
	a, sure, ok := env.tailArrayAt(plain, targets, pc)
	if !ok {
		return tailSite{}, false
	}
	s := tailSite{jitProgArray: a, r2Sure: sure, ctxSure: ctxArgAt(f.ctxR1, pc), frameSure: f.frameSure}
	if k, ok := constIn(plain, targets, pc, 3); ok {
		s.idx, s.idxSure = uint32(k), true
	}
	return s, true
}

// inRange reports whether a constant index is inside the array, so the
// code reads its slot with no compare; a constant index past it makes the
// call fall through once the checks before the index's have passed.
func (s tailSite) inRange() bool { return s.idx < s.slots.N }

// tailCode is what a backend emits for a native tail call: tailCall
// (jit_amd64_helpers.go, jit_arm64_tail.go) with the contract of amd64's.
type tailCode interface {
	tailCall(pc int, s tailSite)
}

// emitTail has b emit the tail call at pc natively when r2 is loaded with
// a program array before it (tailSiteAt; else the call exits to Go), and
// reports whether it did.
func emitTail(b tailCode, env jitEnv, plain []insn, targets []bool, f tailFacts, pc int) bool {
	s, ok := env.tailSiteAt(plain, targets, f, pc)
	if ok {
		b.tailCall(pc, s)
	}
	return ok
}
