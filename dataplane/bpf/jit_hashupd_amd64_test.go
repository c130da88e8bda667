//go:build linux && amd64

package bpf

// nativeHashWrites says the backend inserts, replaces and deletes hash
// entries natively (jit_hashupd.go); both backends update per-CPU
// entries in place natively, the arm64 one answers the rest only when
// nothing is written (hashNoWrite).
const nativeHashWrites = true
