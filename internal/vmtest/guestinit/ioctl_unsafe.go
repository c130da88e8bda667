package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctlBuf issues ioctl(fd, req, &b[0]) and returns its result. The kernel
// reads and writes b in place (VFIO structures begin with argsz).
func ioctlBuf(fd int, req uintptr, b []byte) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&b[0])))
	if errno != 0 {
		return int(r), errno
	}
	return int(r), nil
}
