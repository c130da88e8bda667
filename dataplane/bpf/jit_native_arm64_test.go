//go:build linux && arm64

package bpf

// Which lookups and helpers the JIT compiles natively on this machine:
// hash map lookups, LPM trie lookups, bpf_csum_diff.
const (
	nativeHashArch = 1
	nativeLPMArch  = 1
	nativeTailArch = true // bpf_tail_call
	nativeCsumArch = 1
	elideArch      = 1 // lookups whose value region is left out (jit_elide.go)
)
