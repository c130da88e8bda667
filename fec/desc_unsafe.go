package fec

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/xnic-dev/xnic/nic"
)

// The descriptor word at offset 0 (datlen | sc << 16) is shared with the device:
// it is read and written with one atomic, aligned 32-bit access, never as two
// 16-bit halves and never merged with its neighbours by the compiler. Rings are
// allocated 64-byte aligned and descriptors are 8 or 32 bytes, so every word 0
// is 4-byte aligned. On arm64 the load is LDAR and the store STLR: the store,
// last of the descriptor, is the dma_wmb before handing it to the device (the
// address and extended fields stored before it are observed first); the load
// is the dma_rmb after reading E/R (the fields read after it are not read
// before it). See nic/ring.go for the whole handover.

// loadWord0 reads the little-endian word at d[0:4] atomically.
func loadWord0(d []byte) uint32 {
	d = d[:4:4] // a bounds check that, unlike _ = d[3], is no read for the race detector
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&d[0])))
	if nic.HostBigEndian {
		v = bits.ReverseBytes32(v)
	}
	return v
}

// storeWord0 writes the little-endian word at d[0:4] atomically: the last store
// of a descriptor, which hands it to the device.
func storeWord0(d []byte, v uint32) {
	d = d[:4:4] // a bounds check that, unlike _ = d[3], is no read for the race detector
	if nic.HostBigEndian {
		v = bits.ReverseBytes32(v)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&d[0])), v)
}
