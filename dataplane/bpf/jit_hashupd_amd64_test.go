//go:build linux && amd64

package bpf

// nativeHashWrites says the backend writes hash maps natively (per-CPU
// updates in place, inserts, replacements, deletes: jit_hashupd.go); the
// arm64 backend answers only what writes nothing (hashNoWrite).
const nativeHashWrites = true
