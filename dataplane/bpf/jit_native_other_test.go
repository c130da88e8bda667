//go:build !(linux && (amd64 || arm64))

package bpf

// No JIT here: nothing is compiled natively.
const (
	nativeHashArch = 0
	nativeLPMArch  = 0
	nativeTailArch = false // bpf_tail_call: no JIT here
	nativeCsumArch = 0
	elideArch      = 0 // lookups whose value region is left out (jit_elide.go)
)
