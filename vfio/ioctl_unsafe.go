package vfio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The only unsafe.Pointer conversions for system calls in this package: ioctls
// that take a pointer to a structure the kernel reads or fills in, and the address
// of mmapped memory for VFIO_IOMMU_MAP_DMA.

// ioctlPtr issues an ioctl whose argument is a pointer to buf. buf lives on the Go
// heap for the duration of the call; the kernel copies in and out of it.
func ioctlPtr(fd int, req ioctlReq, buf []byte) (int, error) {
	if len(buf) == 0 {
		return -1, unix.EINVAL
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&buf[0])))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// ioctlVal issues an ioctl whose argument is a plain integer.
func ioctlVal(fd int, req ioctlReq, arg uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), arg)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// addrOf is the process address of b[0]. Only for memory outside the Go heap
// (mmapped), whose address never changes.
func addrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}
