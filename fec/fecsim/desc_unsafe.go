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
	_ = b[off : off+4 : off+4] // a bounds check that, unlike _ = b[off+3], is no read for the race detector
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&3 != 0 {
		copy(b[off:off+4], w[:])
		return
	}
	atomic.StoreUint32((*uint32)(p), *(*uint32)(unsafe.Pointer(&w)))
}

// loadWord reads the 4 bytes at b[off:] as one 32-bit load with acquire
// ordering when the slot is 4-byte aligned: the device's read of a BD's length
// and status word, which the driver stores atomically. On uncached or coherent
// memory the driver's bytes are the device's, so this is the access the two
// sides share.
func loadWord(b []byte, off int) [4]byte {
	var w [4]byte
	b = b[off : off+4] // a bounds check that, unlike _ = b[off+3], is no read for the race detector
	p := unsafe.Pointer(&b[0])
	if uintptr(p)&3 != 0 {
		copy(w[:], b)
		return w
	}
	*(*uint32)(unsafe.Pointer(&w)) = atomic.LoadUint32((*uint32)(p))
	return w
}
