//go:build !linux || !(amd64 || arm64)

package bpf

// jitBurstLean: no JIT here.
const jitBurstLean = false
