//go:build linux && amd64

package bpf

import "unsafe"

// offSpill is where amd64 code saves a register it must free (RDX around
// a division, RAX in fetch atomics, RCX in the array lookup).
var offSpill = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.spill))

// The Frame's scalar context fields, which amd64 code reads for loads of
// xdp_md's ingress_ifindex and rx_queue_index.
var (
	offIngress = int32(unsafe.Offsetof(Frame{}.IngressIfindex))
	offRxQueue = int32(unsafe.Offsetof(Frame{}.RxQueueIndex))
)

// What the native helpers and tail calls of the amd64 backend read and
// write (jit_amd64_helpers.go).
var (
	// The redirect record of native helpers: jit_redirect_unsafe.go.

	// What a native tail call reads and writes: jit_tail_unsafe.go.

	// The frame's buffer length, which bpf_xdp_adjust_tail bounds by.
	offBufLen = int32(unsafe.Offsetof(Frame{}.Buf)) + int32(unsafe.Sizeof(uintptr(0)))
)
