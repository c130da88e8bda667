package dwmacsim

import (
	"sync/atomic"
	"unsafe"

	"github.com/xnic-dev/xnic/nic"
)

// storeDES3 writes a descriptor's DES3 (the word that carries OWN) as one
// 32-bit store with release ordering, after the rest of the write-back: a
// driver polling OWN on another goroutine never sees OWN clear before the
// length and status. Unaligned slots and big-endian hosts fall back to a plain
// little-endian store.
func storeDES3(d []byte, v uint32) {
	d = d[: des3+4 : des3+4] // a bounds check that, unlike _ = d[des3+3], is no read for the race detector
	p := (*uint32)(unsafe.Pointer(&d[des3]))
	if nic.HostBigEndian || uintptr(unsafe.Pointer(p))&3 != 0 {
		le.PutUint32(d[des3:], v)
		return
	}
	atomic.StoreUint32(p, v)
}

// loadDES3 reads DES3 with acquire ordering (the driver sets OWN last).
func loadDES3(d []byte) uint32 {
	d = d[: des3+4 : des3+4] // a bounds check that, unlike _ = d[des3+3], is no read for the race detector
	p := (*uint32)(unsafe.Pointer(&d[des3]))
	if nic.HostBigEndian || uintptr(unsafe.Pointer(p))&3 != 0 {
		return le.Uint32(d[des3:])
	}
	return atomic.LoadUint32(p)
}
