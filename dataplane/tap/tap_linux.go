package tap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Device is one TAP interface. The file descriptor is owned by the Device; Close
// releases it, which removes the interface unless it was made persistent.
type Device struct {
	f    *os.File // non-blocking fd in Go's poller, so reads have deadlines
	name string
}

// Open creates (or attaches to) the TAP interface name ("xnic%d" lets the kernel
// number it). It needs CAP_NET_ADMIN.
func Open(name string) (*Device, error) {
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tap: name %q longer than %d bytes", name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tap: opening /dev/net/tun: %w (needs root or CAP_NET_ADMIN, and the tun module)", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tap: interface name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tap: TUNSETIFF %q: %w (needs CAP_NET_ADMIN; a name in use by a non-TAP interface also fails)", name, err)
	}
	return &Device{f: os.NewFile(uintptr(fd), "tap:"+ifr.Name()), name: ifr.Name()}, nil
}

// Name is the interface's name as the kernel made it.
func (d *Device) Name() string { return d.name }

// Ifindex is the interface's index in the current network namespace, or 0 once
// it has moved to another namespace.
func (d *Device) Ifindex() int {
	i, err := net.InterfaceByName(d.name)
	if err != nil {
		return 0
	}
	return i.Index
}

// Deliver writes one frame to the kernel (the port received it; XDP passed it).
func (d *Device) Deliver(frame []byte) error {
	_, err := d.f.Write(frame)
	return err
}

// ReadFrame reads one frame the kernel sent, waiting at most timeout; (0, nil)
// when none came. A frame longer than p is truncated by the kernel.
func (d *Device) ReadFrame(p []byte, timeout time.Duration) (int, error) {
	if err := d.f.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, fmt.Errorf("tap %s: %w", d.name, err)
	}
	n, err := d.f.Read(p)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, fmt.Errorf("tap %s: read: %w", d.name, err)
	}
	return n, nil
}

// Close removes the interface.
func (d *Device) Close() error { return d.f.Close() }

// SetMAC sets the interface's hardware address (give it the port's, so the host
// sees the port's address on the TAP).
func (d *Device) SetMAC(mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("tap %s: MAC %v is not 6 bytes", d.name, mac)
	}
	rc, err := d.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("tap %s: %w", d.name, err)
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) { ioErr = setHWAddr(int(fd), d.name, mac) }); err != nil {
		return fmt.Errorf("tap %s: %w", d.name, err)
	}
	if ioErr != nil {
		return fmt.Errorf("tap %s: SIOCSIFHWADDR: %w", d.name, ioErr)
	}
	return nil
}

// SetUp brings the interface up or down.
func (d *Device) SetUp(up bool) error {
	return d.sockIoctl(func(s int, ifr *unix.Ifreq) error {
		if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
			return err
		}
		fl := ifr.Uint16()
		if up {
			fl |= unix.IFF_UP
		} else {
			fl &^= unix.IFF_UP
		}
		ifr.SetUint16(fl)
		return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
	})
}

// SetMTU sets the interface's MTU.
func (d *Device) SetMTU(mtu int) error {
	return d.sockIoctl(func(s int, ifr *unix.Ifreq) error {
		ifr.SetUint32(uint32(mtu))
		return unix.IoctlIfreq(s, unix.SIOCSIFMTU, ifr)
	})
}

func (d *Device) sockIoctl(fn func(s int, ifr *unix.Ifreq) error) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tap %s: socket for ioctl: %w", d.name, err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(d.name)
	if err != nil {
		return fmt.Errorf("tap %s: %w", d.name, err)
	}
	if err := fn(s, ifr); err != nil {
		return fmt.Errorf("tap %s: %w", d.name, err)
	}
	return nil
}
