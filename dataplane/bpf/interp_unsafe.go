package bpf

import "unsafe"

// pktAt is the address of offset uint32(a) in the packet region, for an
// access provenIn proved inside it: no check. The region table always
// holds the packet region (regionPacket < regionStatic, its shortest
// length).
func pktAt(regs []region, a uint64) *byte {
	rg := (*region)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(regs)), regionPacket*unsafe.Sizeof(region{})))
	return (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(rg.buf)), uintptr(uint32(a))))
}
