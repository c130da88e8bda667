package vfio

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// The system calls this package makes on VFIO nodes, each retried on EINTR and
// returning errors that name the call. Everything here is a thin layer: policy and
// messages for the user live in the callers.

func openFile(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

func closeFD(fd int) error {
	if fd < 0 {
		return nil
	}
	// close(2) must not be retried on EINTR on Linux: the fd is gone either way.
	return unix.Close(fd)
}

// ioctl retries on EINTR.
func ioctl(fd int, req ioctlReq, buf []byte) (int, error) {
	for {
		r, err := ioctlPtr(fd, req, buf)
		if err != unix.EINTR {
			return r, err
		}
	}
}

func ioctlArg(fd int, req ioctlReq, arg uintptr) (int, error) {
	for {
		r, err := ioctlVal(fd, req, arg)
		if err != unix.EINTR {
			return r, err
		}
	}
}

// infoIoctl runs an INFO ioctl whose structure may grow with a capability chain:
// it asks with buf, and when the kernel reports a larger argsz, asks again with a
// buffer that large.
func infoIoctl(fd int, req ioctlReq, buf []byte) ([]byte, error) {
	if _, err := ioctl(fd, req, buf); err != nil {
		return nil, err
	}
	need := ne.Uint32(buf[0:])
	if int(need) <= len(buf) {
		return buf, nil
	}
	if need > maxInfoSize {
		return nil, fmt.Errorf("%w: kernel asks for a %d-byte info buffer", ErrBadInfo, need)
	}
	big := make([]byte, need)
	copy(big, buf)
	ne.PutUint32(big[0:], need)
	if _, err := ioctl(fd, req, big); err != nil {
		return nil, err
	}
	return big, nil
}

func pread(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, b, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func pwrite(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pwrite(fd, b, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// mmapShared maps [off, off+size) of a device fd read-write.
func mmapShared(fd int, off int64, size int) ([]byte, error) {
	return unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// mmapAnon maps zeroed anonymous memory, populated up front; hugeShift > 0 asks
// for huge pages of 1<<hugeShift bytes.
func mmapAnon(size int, hugeShift int) ([]byte, error) {
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if hugeShift > 0 {
		flags |= unix.MAP_HUGETLB | hugeShift<<unix.MAP_HUGE_SHIFT
	}
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
}

func munmap(b []byte) error { return unix.Munmap(b) }

func mlock(b []byte) error { return unix.Mlock(b) }

// newEventfd makes a non-blocking, close-on-exec eventfd.
func newEventfd() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("eventfd: %w", err)
	}
	return fd, nil
}

// errnoIs reports whether err carries errno e.
func errnoIs(err error, e unix.Errno) bool { return errors.Is(err, e) }
