package physmem

import (
	"sync/atomic"
	"unsafe"
)

// addrOf is the virtual address of mem[0], for the pagemap lookup. mem is a
// mapping (never moved by the garbage collector).
func addrOf(mem []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
}

// load32 and store32 are the register accesses of a Device: one aligned 32-bit
// load or store, through sync/atomic so the compiler neither splits, merges nor
// elides it. The caller checked off%4 == 0 and off+4 <= len(mem); mem is a
// page-aligned mapping.
func load32(mem []byte, off int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[off])))
}

func store32(mem []byte, off int, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&mem[off])), v)
}
