//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// Offsets of the native bpf_loop state (jit_loop.go).
var (
	offJLoops   = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.loops))
	jitLoopSize = int32(unsafe.Sizeof(jitLoop{}))
	offLoopRes  = int32(unsafe.Offsetof(jitLoop{}.resume))
	offLoopI    = int32(unsafe.Offsetof(jitLoop{}.i))
	offLoopNr   = int32(unsafe.Offsetof(jitLoop{}.nr))
	offLoopCtx  = int32(unsafe.Offsetof(jitLoop{}.ctx))
	offLoopR5   = int32(unsafe.Offsetof(jitLoop{}.r5))
)
