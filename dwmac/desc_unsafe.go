package dwmac

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/xnic-dev/xnic/nic"
)

// DES3 is the word the DMA and the driver hand a descriptor over with (OWN). On
// real hardware the DMA may write it back while the CPU reads it, so it is read
// and written as one aligned 32-bit atomic access, never byte by byte: the
// driver sees either the old word or the whole new one. Descriptors are
// little-endian; on a big-endian host the word is byte-swapped after the load.
// On arm64 the store is STLR, the dma_wmb before OWN (DES0-DES2 stored before
// it are observed first), and the load LDAR, the dma_rmb after reading OWN
// (DES0-DES2 of a write-back are read after it). See nic/ring.go.

// loadDES3 atomically reads the little-endian word at d[12:16]. d must be a
// descriptor inside a ring whose base is at least 4-byte aligned.
func loadDES3(d []byte) uint32 {
	d = d[:descSize:descSize] // a bounds check that, unlike _ = d[descSize-1], is no read for the race detector
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&d[des3])))
	if nic.HostBigEndian {
		v = bits.ReverseBytes32(v)
	}
	return v
}

// storeDES3 atomically writes v as the little-endian word at d[12:16]: the last
// store of a descriptor, the one that hands it over when it sets OWN.
func storeDES3(d []byte, v uint32) {
	d = d[:descSize:descSize] // a bounds check that, unlike _ = d[descSize-1], is no read for the race detector
	if nic.HostBigEndian {
		v = bits.ReverseBytes32(v)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&d[des3])), v)
}
