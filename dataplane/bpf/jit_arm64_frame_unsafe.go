//go:build linux && arm64

package bpf

import "unsafe"

// offFrameBufLen is the frame's buffer length (the len word of Frame.Buf),
// which the arm64 backend's bpf_xdp_adjust_tail bounds by
// (jit_arm64_bytes.go); amd64's is offBufLen.
var offFrameBufLen = int32(unsafe.Offsetof(Frame{}.Buf)) + int32(unsafe.Sizeof(uintptr(0)))
