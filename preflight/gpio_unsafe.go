package preflight

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The two ioctls of the GPIO character device the hand-over uses
// (include/uapi/linux/gpio.h: GPIO_V2_GET_LINEINFO_IOCTL reads a struct
// gpio_v2_line_info whose offset the caller sets; GPIO_V2_GET_LINE_IOCTL takes
// a struct gpio_v2_line_request and fills its fd). x/sys/unix has both
// structures and numbers.

func lineInfoIoctl(fd int, li *unix.GPIOV2LineInfo) error {
	return ioctl(fd, unix.GPIO_V2_GET_LINEINFO_IOCTL, unsafe.Pointer(li))
}

func lineRequestIoctl(fd int, req *unix.GPIOV2LineRequest) error {
	return ioctl(fd, unix.GPIO_V2_GET_LINE_IOCTL, unsafe.Pointer(req))
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}
