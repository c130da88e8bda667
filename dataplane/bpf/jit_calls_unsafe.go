//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// Offsets of the frames of native bpf-to-bpf calls (jitState.calls,
// jit_amd64_calls.go) and of the depths native code adds up.
var (
	offDepth     = int32(unsafe.Offsetof(Runner{}.depth))
	offJDepth    = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.depth))
	offJCalls    = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.calls))
	jitCallSize  = int32(unsafe.Sizeof(jitCall{}))
	offCallRet   = int32(unsafe.Offsetof(jitCall{}.ret))
	offCallPC    = int32(unsafe.Offsetof(jitCall{}.pc))
	offCallSaved = int32(unsafe.Offsetof(jitCall{}.saved)) // fp follows
)

// The frame layout callReturn and localCall rely on: fp right after the
// four saved registers.
var _ = [1]struct{}{}[unsafe.Offsetof(jitCall{}.fp)-unsafe.Offsetof(jitCall{}.saved)-32]
