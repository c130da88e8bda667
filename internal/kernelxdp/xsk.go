package kernelxdp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenXDPSocket returns a new, unbound AF_XDP socket: enough for an xskmap
// entry (the kernel stopped requiring rings and a bound device for map
// updates in 5.9), so that bpf_redirect_map on the slot returns
// XDP_REDIRECT in a test run. Put its Fd() into the map; close it after.
func OpenXDPSocket() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("kernelxdp: AF_XDP socket: %w", err)
	}
	return os.NewFile(uintptr(fd), "xsk"), nil
}
