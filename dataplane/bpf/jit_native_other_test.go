//go:build !(linux && (amd64 || arm64))

package bpf

// No JIT here: nothing is compiled natively.
const (
	nativeHashArch = 0
	nativeLPMArch  = 0
	nativeCsumArch = 0
)
