//go:build linux && amd64

package bpf

import "unsafe"

// offSpill is where amd64 code saves RDX around a division.
var offSpill = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.spill))
