//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// The line's address and its fields' offsets, for native code: ktLine is
// a package variable, which does not move.
var (
	offLineSeq   = int32(unsafe.Offsetof(counterLine{}.seq))
	offLineBase  = int32(unsafe.Offsetof(counterLine{}.base))
	offLineNs    = int32(unsafe.Offsetof(counterLine{}.ns))
	offLineMult  = int32(unsafe.Offsetof(counterLine{}.mult))
	offLineLimit = int32(unsafe.Offsetof(counterLine{}.limit))
)

func ktLineAddr() uintptr { return uintptr(unsafe.Pointer(&ktLine)) }
