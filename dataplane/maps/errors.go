package maps

import (
	"errors"
	"fmt"
	"syscall"
)

// ENOTSUPP is the kernel-internal errno 524 some map operations return to user
// space (include/linux/errno.h); syscall has no name for it.
const ENOTSUPP = syscall.Errno(524)

// Errno returns the negative errno a helper hands the program for err: 0 for
// nil, -errno for a (wrapped) syscall.Errno, -EINVAL for anything else.
func Errno(err error) int64 {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok { // the fast path's bare errnos: no allocation
		return -int64(e)
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return -int64(e)
	}
	return -int64(syscall.EINVAL)
}

// Preallocated errors for the fast path: the helpers called by programs return
// these so that a failing update or delete does not allocate.
var (
	errNoEntry      error = syscall.ENOENT
	errExists       error = syscall.EEXIST
	errFull         error = syscall.E2BIG
	errBadFlags     error = syscall.EINVAL
	errBadKeySize   error = syscall.EINVAL
	errBadValueSize error = syscall.EINVAL
)

// mapErr wraps an errno with the map's name and what went wrong. Used off the
// fast path (creation, control-plane misuse).
func mapErr(name string, errno syscall.Errno, format string, args ...any) error {
	return fmt.Errorf("map %q: %s: %w", name, fmt.Sprintf(format, args...), errno)
}
