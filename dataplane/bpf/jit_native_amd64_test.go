//go:build linux && amd64

package bpf

// Which lookups and helpers the JIT compiles natively on this machine:
// hash map lookups (nativeHashArch), LPM trie lookups and bpf_csum_diff
// (nativeLPMArch).
const (
	nativeHashArch = 1
	nativeLPMArch  = 1
)
