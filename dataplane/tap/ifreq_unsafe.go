package tap

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqHW is struct ifreq with the ifr_hwaddr member of its union (a struct
// sockaddr: 2-byte family, 14 bytes of address), padded to the union's 24 bytes
// (include/uapi/linux/if.h).
type ifreqHW struct {
	name   [unix.IFNAMSIZ]byte
	family uint16
	addr   [14]byte
	_      [8]byte
}

// setHWAddr sets a TAP's MAC with SIOCSIFHWADDR on its own fd (tun_chr_ioctl
// handles it; drivers/net/tun.c).
func setHWAddr(fd int, name string, mac net.HardwareAddr) error {
	var r ifreqHW
	copy(r.name[:unix.IFNAMSIZ-1], name)
	r.family = unix.ARPHRD_ETHER
	copy(r.addr[:], mac)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SIOCSIFHWADDR), uintptr(unsafe.Pointer(&r)))
	if errno != 0 {
		return errno
	}
	return nil
}
