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
