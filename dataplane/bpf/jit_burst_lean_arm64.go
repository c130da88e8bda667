//go:build linux

package bpf

import "unsafe"

// jitBurstLean: arm64 keeps the full burst loop for every program
// (jit_burst_flags.go), whose code is compiled with burstAll.
const jitBurstLean = false

// jitEnterBurstLean is never called on arm64 (no code has burst 0).
func jitEnterBurstLean(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64) {
	return jitEnterBurst(r, reg, entry, frames, n, verdicts, budget)
}
