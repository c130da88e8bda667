//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// offStackBuf is where the Runner keeps the address of its stack (the
// buffer of regions[regionStack], which NewRunner makes and nothing
// replaces), which the backends' stack checks read (stackCheck).
var offStackBuf = int32(unsafe.Offsetof(Runner{}.stack))

// offStackBase is where the Runner keeps jitState.stackBase, its stack's
// address minus regionStack<<32, which the amd64 backend's unchecked stack
// accesses index with r10 itself (arm64: add r10 plus the offset to).
var offStackBase = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.stackBase))
