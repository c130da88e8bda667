//go:build linux && arm64

package bpf

// nativeHashWrites: see jit_hashupd_amd64_test.go.
const nativeHashWrites = false // per-CPU updates in place only
