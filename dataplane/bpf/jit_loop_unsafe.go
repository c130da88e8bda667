//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// Offsets of the native bpf_loop state (jit_loop.go).
var (
	offJLoops   = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.loops))
	jitLoopSize = int32(unsafe.Sizeof(jitLoop{}))
	offLoopRes  = int32(unsafe.Offsetof(jitLoop{}.resume))
	offLoopR5   = int32(unsafe.Offsetof(jitLoop{}.r5))
	offLoopSave = int32(unsafe.Offsetof(jitLoop{}.saved))
)
