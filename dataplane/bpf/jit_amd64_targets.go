//go:build linux && amd64

package bpf

import (
	"math"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// What the amd64 backend's native bpf_tail_call reads of its program
// array, fixed at load (jit_amd64_helpers.go); bpf_redirect_map's is in
// jit_redirect_targets.go.

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
	c := env.coll
	if c == nil || uint64(k) >= uint64(len(c.mapRefs)) {
		return jitProgArray{}, false
	}
	m := c.mapRefs[k]
	if m == nil || m.progs == nil || m.outer != nil {
		return jitProgArray{}, false
	}
	t, ok := maps.NativeProgSlots(m.progs)
	if !ok || t.N > math.MaxInt32 || t.ValueOff > math.MaxInt32-8 {
		return jitProgArray{}, false
	}
	return jitProgArray{handle: regionMap<<32 | uint64(k), coll: uintptrOf(c), slots: t}, true
}
