//go:build linux && arm64

package bpf

// Which lookups and helpers the JIT compiles natively on this machine:
// hash map lookups (nativeHashArch), LPM trie lookups and bpf_csum_diff
// (nativeLPMArch, not yet on arm64).
const (
	nativeHashArch = 1
	nativeLPMArch  = 0
)
