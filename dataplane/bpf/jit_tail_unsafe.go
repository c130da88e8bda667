//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// What the native bpf_tail_call of both backends (jit_amd64_helpers.go,
// jit_arm64_tail.go) reads and writes: the Runner's count, the program it
// goes to (its collection, code and id), the id it leaves.
var (
	offTails      = int32(unsafe.Offsetof(Runner{}.tails))
	offTail       = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.tail))
	offProgColl   = int32(unsafe.Offsetof(Program{}.coll))
	offProgJIT    = int32(unsafe.Offsetof(Program{}.jit))
	offProgID     = int32(unsafe.Offsetof(Program{}.id))
	offJITProgPC0 = int32(unsafe.Offsetof(jitProg{}.pc0)) // past the prologue

	// progType is the type word of an interface holding a *Program, which
	// a program array's slot holds (maps.NativeProgSlots).
	progType = func() uintptr {
		var a any = (*Program)(nil)
		return (*[2]uintptr)(unsafe.Pointer(&a))[0]
	}()
)
