//go:build linux

package bpf

import "unsafe"

// jitBurstLean: arm64 has the lean burst loop (jit_burst_flags.go).
const jitBurstLean = true

// jitEnterBurstLean is jitEnterBurst for code that needs none of the
// per-frame work the lean loop leaves out (jitProg.burst == 0): see
// jit_arm64.s.
//
//go:noescape
func jitEnterBurstLean(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)
