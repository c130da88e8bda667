//go:build !(linux && amd64)

package bpf

// nativeHashArch is 1 where the JIT looks hash maps up natively.
const nativeHashArch = 0
