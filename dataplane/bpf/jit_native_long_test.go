//go:build linux && (amd64 || arm64)

package bpf

// longKeyArch: the JIT looks up hash keys of 17 to maps.NativeKeyMax bytes
// natively (both backends).
const longKeyArch = true
