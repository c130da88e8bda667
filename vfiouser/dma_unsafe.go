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

// reserve maps n bytes of inaccessible (PROT_NONE) anonymous address space,
// committing no memory: an arena that DMA_MAPs are later placed in.
func reserve(n int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// release unmaps a reservation made by reserve, with everything placed in it.
func release(b []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// mapFixed maps size bytes of fd at file offset off over b, a part of a
// reservation (MAP_FIXED: the pages b had are replaced), read-write; shared
// makes device writes reach the file, else they stay private to the server.
func mapFixed(b []byte, fd int, off int64, shared bool) error {
	flags := unix.MAP_FIXED | unix.MAP_PRIVATE
	if shared {
		flags = unix.MAP_FIXED | unix.MAP_SHARED
	}
	_, err := unix.MmapPtr(fd, off, unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)),
		unix.PROT_READ|unix.PROT_WRITE, flags)
	return err
}

// protNone makes b, a part of a reservation, inaccessible again with fresh
// anonymous pages, so nothing that was mapped there stays reachable.
func protNone(b []byte) error {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)), unix.PROT_NONE,
		unix.MAP_FIXED|unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	return err
}
