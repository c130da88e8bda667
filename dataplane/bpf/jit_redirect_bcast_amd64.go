//go:build linux

package bpf

// jitBroadcast: the amd64 bpf_redirect_map records a BPF_F_BROADCAST
// redirect natively (redirectMap in jit_amd64_redirect.go).
const jitBroadcast = true
