package igbsim

import (
	"sync/atomic"
	"unsafe"

	"github.com/xnic-dev/xnic/nic"
)

// storeStatus writes a descriptor's status dword as one 32-bit store with release
// ordering, after the rest of the write-back: a driver polling DD on another
// goroutine never sees DD before the length and hash. Unaligned slots and
// big-endian hosts fall back to a plain little-endian store.
func storeStatus(b []byte, off int, v uint32) {
	w := b[off : off+4 : off+4] // bounds check without reading the dword
	p := (*uint32)(unsafe.Pointer(&w[0]))
	if nic.HostBigEndian || uintptr(unsafe.Pointer(p))&3 != 0 {
		le.PutUint32(b[off:], v)
		return
	}
	atomic.StoreUint32(p, v)
}
