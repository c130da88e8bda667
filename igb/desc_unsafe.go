package igb

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/xnic-dev/xnic/nic"
)

// The device writes a descriptor's write-back by DMA while the driver polls it.
// The driver reads the dword that carries DD (RX status_error, TX status) exactly
// once per check, as one aligned atomic 32-bit load, and reads the other
// write-back fields (length, RSS hash, packet info) only after that load found
// DD set: the load orders them, as the kernel's dma_rmb() after reading DD does.
// The model stores the status dword last with an atomic store, so the pair also
// gives the Go memory model (and the race detector) its happens-before edge.
// On arm64 the load is LDAR (acquire). igb hands descriptors over with the tail
// register, not an owner bit: the driver's plain stores to a descriptor are
// ordered before the RDT/TDT write by that register store's release semantics
// (see nic/ring.go).
//
// Descriptor rings are 128-byte aligned (setupRx/setupTx check the CPU address
// too, see ringAligned), so every dword in them is 4-byte aligned.

// loadLE32 reads the little-endian dword at b[off:off+4] with one atomic 32-bit
// load. The load yields host order; on a big-endian host the bytes are swapped
// back into the descriptor's little-endian order (nic.HostBigEndian is a build-time
// constant, so little-endian hosts pay nothing). b[off] must be 4-byte aligned.
func loadLE32(b []byte, off int) uint32 {
	w := b[off : off+4 : off+4] // bounds check without touching memory (a "_ = b[off+3]" would be a plain read)
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&w[0])))
	if nic.HostBigEndian {
		v = bits.ReverseBytes32(v)
	}
	return v
}

// ringAligned reports whether a ring's CPU view starts on a 16-byte boundary,
// which the atomic status loads need (4 would do; descriptors are 16).
func ringAligned(cpu []byte) bool {
	return len(cpu) > 0 && uintptr(unsafe.Pointer(&cpu[0]))%descSize == 0
}
