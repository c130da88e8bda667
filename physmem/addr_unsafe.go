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
//
// On arm64 they are LDAR and STLR of a W register (checked with go tool
// objdump): single 32-bit accesses, as the ENET and EQOS register windows need
// (QEMU's imx.enet takes 32-bit accesses only). The load is an acquire: reads
// of DMA memory after a register read are not satisfied before it (readl's
// trailing barrier). The store is a release: every earlier store, to
// descriptors and buffers too, is observed before the register write (writel's
// leading DMB OSHST); for memory the device does not snoop, Sync's DSB SY has
// completed the cache clean before that (see sync_arm64.go).
func load32(mem []byte, off int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[off])))
}

func store32(mem []byte, off int, v uint32) {
	ioWriteBarrier() // DSB ST on 32-bit ARM (iobarrier_arm.go)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&mem[off])), v)
}
