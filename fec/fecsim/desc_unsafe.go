package fecsim

import (
	"sync/atomic"
	"unsafe"
)

// storeWord writes the 4 bytes w at b[off:] as one 32-bit store with release
// ordering when the slot is 4-byte aligned, so a driver polling a descriptor's
// status word on another goroutine sees the length and status of a BD change
// together, after the buffer and the rest of the BD. The bytes land in memory in
// the order given, whatever the host's byte order.
func storeWord(b []byte, off int, w [4]byte) {
	_ = b[off+3]
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&3 != 0 {
		copy(b[off:off+4], w[:])
		return
	}
	atomic.StoreUint32((*uint32)(p), *(*uint32)(unsafe.Pointer(&w)))
}
