//go:build linux && amd64

package bpf

// longKeyArch: the JIT looks up hash keys of 17 to maps.NativeKeyMax bytes
// natively (amd64 only).
const longKeyArch = true
