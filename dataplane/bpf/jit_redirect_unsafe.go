//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// What the native bpf_redirect, bpf_redirect_map and bpf_get_prandom_u32
// of both backends (jit_amd64_helpers.go, jit_arm64_redirect.go) read and
// write: the offset of the redirect record to write (jitState.rdo), the
// records (jitState.rds, each at rds + rdo) and the state of the random
// numbers.
var (
	offRdo = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.rdo))
	offRds = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.rds))

	offRNG = int32(unsafe.Offsetof(Runner{}.rng))
)
