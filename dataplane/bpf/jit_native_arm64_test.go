//go:build linux && arm64

package bpf

// Which lookups and helpers the JIT compiles natively on this machine:
// hash map lookups, LPM trie lookups, bpf_csum_diff.
const (
	nativeHashArch = 1
	nativeLPMArch  = 1
	nativeTailArch = false // bpf_tail_call (amd64 only)
	nativeCsumArch = 1
)
