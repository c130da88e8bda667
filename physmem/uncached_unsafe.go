package physmem

import (
	"sync/atomic"
	"unsafe"
)

// zeroAligned clears b with naturally aligned stores only: 8-byte words where
// the address allows, single bytes at the ends. Uncached memory mapped as
// Device-nGnRnE takes no unaligned access and no DC ZVA, which Go's clear may
// use.
func zeroAligned(b []byte) {
	i := 0
	for ; i < len(b) && uintptr(unsafe.Pointer(&b[i]))%8 != 0; i++ {
		b[i] = 0
	}
	for ; i+8 <= len(b); i += 8 {
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[i])), 0)
	}
	for ; i < len(b); i++ {
		b[i] = 0
	}
}
