package vfio

import (
	"sync/atomic"
	"unsafe"
)

// load32 and store32 are the only dereferences of device memory in xnic: one
// aligned 32-bit load or store, through sync/atomic so the compiler neither splits
// nor merges nor elides it (a plain 64-bit Go access may be split on arm64; device
// registers have side effects on every access). The caller has checked that
// off+4 <= len(mem) and off%4 == 0; mem is a mapping whose base is page aligned.

func load32(mem []byte, off uint64) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[off])))
}

func store32(mem []byte, off uint64, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&mem[off])), v)
}
