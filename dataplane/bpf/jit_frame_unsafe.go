//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// frameFieldOff is the offset in Frame of the field that the xdp_md
// offset ctxOff (ctxScalarLoads) reads.
func frameFieldOff(ctxOff int32) int32 {
	if ctxOff == xdpMdRxQueueIndex {
		return int32(unsafe.Offsetof(Frame{}.RxQueueIndex))
	}
	return int32(unsafe.Offsetof(Frame{}.IngressIfindex))
}
