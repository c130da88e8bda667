//go:build linux

package bpf

// jitBroadcast: the arm64 bpf_redirect_map sends a BPF_F_BROADCAST
// redirect to Go (jit_arm64_redirect.go).
const jitBroadcast = false
