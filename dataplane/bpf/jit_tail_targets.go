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
// r2 is loaded with one in a straight line before it (mapIn).
//
// The map is a guess that the code checks at run time (r2 against its
// handle; another map goes to the slow path), so where paths with their
// own loads of r2 join before the call (a compiler's shared call site),
// the nearest program array loaded into r2 before the call stands for it.
func (env jitEnv) tailArrayAt(plain []insn, targets []bool, pc int) (jitProgArray, bool) {
	if k, ok := mapIn(plain, targets, pc, 2); ok {
		return env.progArrayFor(k)
	}
	for q := pc - 1; q >= 0; q-- {
		in := plain[q]
		if in.op != opLdMap || in.dst != 2 || in.imm < 0 || in.imm > math.MaxUint32 {
			continue
		}
		if a, ok := env.progArrayFor(uint32(in.imm)); ok {
			return a, true
		}
	}
	return jitProgArray{}, false
}

// tailCode is what a backend emits for a native tail call: tailCall
// (jit_amd64_helpers.go, jit_arm64_tail.go) with the contract of amd64's.
type tailCode interface {
	tailCall(pc int, a jitProgArray)
}

// emitTail has b emit the tail call at pc natively when r2 is loaded with
// a program array before it (tailArrayAt; else the call exits to Go), and
// reports whether it did.
func emitTail(b tailCode, env jitEnv, plain []insn, targets []bool, pc int) bool {
	a, ok := env.tailArrayAt(plain, targets, pc)
	if ok {
		b.tailCall(pc, a)
	}
	return ok
}
