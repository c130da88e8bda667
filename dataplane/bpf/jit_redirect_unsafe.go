//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// What the native bpf_redirect, bpf_redirect_map and bpf_get_prandom_u32
// of both backends (jit_amd64_helpers.go, jit_arm64_redirect.go) read and
// write: the redirect record (jitState.rd) and the state of the random
// numbers.
var (
	offRd        = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.rd))
	offRdPending = offRd + int32(unsafe.Offsetof(jitRedirect{}.pending))
	offRdKind    = offRd + int32(unsafe.Offsetof(jitRedirect{}.kind))
	offRdIfindex = offRd + int32(unsafe.Offsetof(jitRedirect{}.ifindex))
	offRdKey     = offRd + int32(unsafe.Offsetof(jitRedirect{}.key))
	offRdFlags   = offRd + int32(unsafe.Offsetof(jitRedirect{}.flags))
	offRdMap     = offRd + int32(unsafe.Offsetof(jitRedirect{}.mapNum))

	offRNG = int32(unsafe.Offsetof(Runner{}.rng))
)
