package vfio

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
)

// EventIRQ is one interrupt vector delivered on an eventfd (VFIO_DEVICE_SET_IRQS
// with DATA_EVENTFD|ACTION_TRIGGER: the kernel adds 1 to the eventfd's counter each
// time the vector fires). It implements nic.IRQ.
//
// Wait may be called from one goroutine at a time; Fd may be handed to another
// poller instead. The eventfd belongs to the Device and is closed by DisableIRQs or
// Close, which must not race with Wait.
type EventIRQ struct {
	fd     int      // eventfd; immutable until closed
	index  IRQIndex // MSI-X, MSI or INTx; immutable
	vector int      // subindex; immutable
	// unmask re-enables an automasked (INTx) line after it fired; nil otherwise.
	unmask func() error
	closed atomic.Bool
}

var _ nic.IRQ = (*EventIRQ)(nil)

// newEventIRQ wraps an eventfd; it takes ownership of fd.
func newEventIRQ(fd int, index IRQIndex, vector int, unmask func() error) *EventIRQ {
	return &EventIRQ{fd: fd, index: index, vector: vector, unmask: unmask}
}

// Fd is the eventfd: readable when the interrupt has fired.
func (q *EventIRQ) Fd() int {
	if q.closed.Load() {
		return -1
	}
	return q.fd
}

// Kind is the interrupt mechanism behind the vector.
func (q *EventIRQ) Kind() IRQIndex { return q.index }

// Vector is the vector number within its kind.
func (q *EventIRQ) Vector() int { return q.vector }

// Wait blocks until the interrupt fires or timeout passes (timeout < 0 waits
// without limit; 0 only checks). It reports whether the interrupt fired since the
// last Wait, and consumes every firing counted so far.
func (q *EventIRQ) Wait(timeout time.Duration) (bool, error) {
	if q.closed.Load() {
		return false, fmt.Errorf("vfio: wait on %v vector %d: %w", q.index, q.vector, nic.ErrClosed)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		fired, err := q.consume()
		if err != nil || fired {
			return fired, err
		}
		ms := -1
		if timeout >= 0 {
			left := time.Until(deadline)
			if timeout == 0 || left <= 0 {
				return false, nil
			}
			// Round up, so a 100 µs timeout still sleeps instead of spinning.
			ms = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		fds := []unix.PollFd{{Fd: int32(q.fd), Events: unix.POLLIN}}
		_, err = unix.Poll(fds, ms)
		if err != nil && err != unix.EINTR {
			return false, fmt.Errorf("vfio: poll on %v vector %d: %w", q.index, q.vector, err)
		}
		if fds[0].Revents&(unix.POLLNVAL|unix.POLLERR) != 0 {
			return false, fmt.Errorf("vfio: poll on %v vector %d: eventfd invalid", q.index, q.vector)
		}
	}
}

// consume reads the eventfd counter without blocking.
func (q *EventIRQ) consume() (bool, error) {
	var buf [8]byte
	for {
		n, err := unix.Read(q.fd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("vfio: read eventfd of %v vector %d: %w", q.index, q.vector, err)
		case n != 8:
			return false, fmt.Errorf("vfio: short read (%d bytes) from eventfd of %v vector %d", n, q.index, q.vector)
		}
		if binary.NativeEndian.Uint64(buf[:]) == 0 {
			return false, nil
		}
		if q.unmask != nil {
			if err := q.unmask(); err != nil {
				return true, fmt.Errorf("vfio: unmask %v after it fired: %w", q.index, err)
			}
		}
		return true, nil
	}
}

func (q *EventIRQ) close() error {
	if q.closed.Swap(true) {
		return nil
	}
	return closeFD(q.fd)
}
