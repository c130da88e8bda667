package main

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqHW is struct ifreq with ifr_hwaddr (a struct sockaddr) as the union
// (netdevice(7)): unix.Ifreq has no setter for it.
type ifreqHW struct {
	name   [unix.IFNAMSIZ]byte
	family uint16
	data   [14]byte
	_      [8]byte // the rest of the union
}

// hwaddrCall issues SIOCSIFHWADDR, SIOCADDMULTI or SIOCDELMULTI with an
// Ethernet address (ARPHRD_ETHER for the first, AF_UNSPEC for the multicast
// list, as netdevice(7) says).
func hwaddrCall(ifname string, req uint, family uint16, mac net.HardwareAddr) error {
	if len(ifname) >= unix.IFNAMSIZ || len(mac) != 6 {
		return fmt.Errorf("interface %q address %v", ifname, mac)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	var r ifreqHW
	copy(r.name[:], ifname)
	r.family = family
	copy(r.data[:], mac)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&r))); e != 0 {
		return e
	}
	return nil
}
