//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// offSpin is jitState.spin: the held lock word's address, then r1.
var offSpin = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.spin))

// spinTries is how many times native bpf_spin_lock tries to take a lock
// another CPU holds before it leaves for Go, whose spinLock spins on,
// yielding the processor (runtime.Gosched) as native code cannot.
const spinTries = 64
