package sim

import (
	"errors"
	"fmt"
)

// The GPIO character device of a Board (/dev/gpiochipN; uAPI v2,
// include/uapi/linux/gpio.h): a process requests a line as an output with a
// consumer label (GPIO_V2_GET_LINE_IOCTL), sets its value
// (GPIO_V2_LINE_SET_VALUES_IOCTL) and holds it for as long as the request's
// file descriptor is open; closing it releases the line, which keeps its
// last value. A line the kernel holds (the PHY reset a bound fec or
// imx-dwmac requested) cannot be requested: EBUSY. Values are logical: with
// active-low lines, as the EVK's PHY resets are, true is the asserted
// (physically low) level, as a request with GPIO_V2_LINE_FLAG_ACTIVE_LOW
// sees it.

// ErrLineBusy is wrapped by a request for a line someone else holds (EBUSY).
var ErrLineBusy = errors.New("GPIO line busy (EBUSY)")

// GPIOChip is one gpiochip of the board, for requesting lines.
type GPIOChip struct {
	b *Board
	n int
}

// GPIOLineRequest is a held line (the request's file descriptor).
type GPIOLineRequest struct {
	b        *Board
	m        *boardMAC // the MAC whose PHY reset this line is; nil: a line nothing uses
	consumer string
	closed   bool // guarded by b.mu
}

// GPIOChip returns /dev/gpiochipN, or an error when the board has no such
// chip among its MACs' reset lines.
func (b *Board) GPIOChip(n int) (*GPIOChip, error) {
	for _, m := range b.macs {
		if m.info.PHYReset.Chip == n {
			return &GPIOChip{b: b, n: n}, nil
		}
	}
	return nil, fmt.Errorf("%w: no /dev/gpiochip%d on this %v model", ErrBoard, n, b.soc)
}

// Label is the chip's label (GPIO_GET_CHIPINFO_IOCTL), e.g. "30230000.gpio".
func (c *GPIOChip) Label() string {
	for _, m := range c.b.macs {
		if m.info.PHYReset.Chip == c.n {
			return m.info.PHYReset.ChipLabel
		}
	}
	return ""
}

// RequestOutput requests line offset as an output driven to value (logical)
// under consumer's label.
func (c *GPIOChip) RequestOutput(offset int, consumer string, value bool) (*GPIOLineRequest, error) {
	if offset < 0 || offset > 31 {
		return nil, fmt.Errorf("%w: gpiochip%d has lines 0-31, not %d (EINVAL)", ErrBoard, c.n, offset)
	}
	if consumer == "" {
		consumer = "?"
	}
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	var mac *boardMAC
	for _, m := range b.macs {
		if l := m.info.PHYReset; l.Chip == c.n && l.Offset == offset {
			mac = m
		}
	}
	if mac != nil {
		if mac.resetBy != "" {
			return nil, fmt.Errorf("gpiochip%d line %d is held by %q: %w", c.n, offset, mac.resetBy, ErrLineBusy)
		}
		mac.resetBy, mac.resetOn = consumer, value
	}
	return &GPIOLineRequest{b: b, m: mac, consumer: consumer}, nil
}

// Set drives the held line to value (logical).
func (r *GPIOLineRequest) Set(value bool) error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.closed {
		return fmt.Errorf("%w: set on a released GPIO line (EBADF)", ErrBoard)
	}
	if r.m != nil {
		r.m.resetOn = value
	}
	return nil
}

// Close releases the line; it keeps its value.
func (r *GPIOLineRequest) Close() error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.m != nil && r.m.resetBy == r.consumer {
		r.m.resetBy = ""
	}
	return nil
}
