package nic

import (
	"sync/atomic"
	"unsafe"
)

// ZeroDescs zeroes a descriptor ring with aligned 32-bit stores, each one
// atomic like the stores that hand a descriptor over. A ring in uncached
// memory mapped from /dev/mem may be Device memory, which takes neither
// unaligned accesses nor DC ZVA (which Go's clear may use on arm64), and on
// ARMv7 no exclusive accesses either (what a 64-bit atomic compiles to);
// bytes past the last whole word, if any, are stored one by one.
func ZeroDescs(b []byte) {
	i := 0
	for ; i < len(b) && uintptr(unsafe.Pointer(&b[i]))&3 != 0; i++ {
		b[i] = 0
	}
	for ; i+4 <= len(b); i += 4 {
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[i])), 0)
	}
	for ; i < len(b); i++ {
		b[i] = 0
	}
}
