package vfiouser

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// zeroFill replaces the pages of b, a mapping made by unix.Mmap, in place with
// private anonymous zero pages (mmap MAP_FIXED over the same addresses): the
// guest's memory is no longer reachable through b, yet a device access still in
// flight through a view of b reads zeros instead of faulting. unix.Munmap(b)
// later unmaps the replacement.
func zeroFill(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_FIXED|unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	return err
}
