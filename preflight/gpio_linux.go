package preflight

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Line flags, enum gpio_v2_line_flag of include/uapi/linux/gpio.h (x/sys/unix
// has the structures but not these).
const (
	lineFlagUsed      = 1 << 0 // GPIO_V2_LINE_FLAG_USED
	lineFlagActiveLow = 1 << 1 // GPIO_V2_LINE_FLAG_ACTIVE_LOW
	lineFlagOutput    = 1 << 3 // GPIO_V2_LINE_FLAG_OUTPUT
)

// RealGPIO is the kernel's GPIO character device (GPIO_CDEV, v2 ABI).
type RealGPIO struct{}

var _ GPIO = RealGPIO{}

// Info implements GPIO.
func (RealGPIO) Info(chip string, line uint32) (LineInfo, error) {
	f, err := os.Open(chip)
	if err != nil {
		return LineInfo{}, err
	}
	defer f.Close()
	var li unix.GPIOV2LineInfo
	li.Offset = line
	if err := lineInfoIoctl(int(f.Fd()), &li); err != nil {
		return LineInfo{}, fmt.Errorf("%s line %d: GPIO_V2_GET_LINEINFO: %w", chip, line, err)
	}
	return LineInfo{
		Used:      li.Flags&lineFlagUsed != 0,
		Consumer:  cString(li.Consumer[:]),
		Output:    li.Flags&lineFlagOutput != 0,
		ActiveLow: li.Flags&lineFlagActiveLow != 0,
	}, nil
}

// Hold implements GPIO: one GPIO_V2_GET_LINE_IOCTL request for one output
// line; the request's file descriptor holds it.
func (RealGPIO) Hold(chip string, line uint32, activeLow bool, value int, consumer string) (io.Closer, error) {
	f, err := os.Open(chip)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var req unix.GPIOV2LineRequest
	req.Offsets[0] = line
	req.Num_lines = 1
	copy(req.Consumer[:len(req.Consumer)-1], consumer)
	req.Config.Flags = lineFlagOutput
	if activeLow {
		req.Config.Flags |= lineFlagActiveLow
	}
	// The initial value: an output-values attribute for line 0 of the request.
	req.Config.Num_attrs = 1
	req.Config.Attrs[0].Attr.Id = unix.GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES
	req.Config.Attrs[0].Attr.Flags = uint64(value & 1) // the union's values field
	req.Config.Attrs[0].Mask = 1
	if err := lineRequestIoctl(int(f.Fd()), &req); err != nil {
		return nil, fmt.Errorf("%s line %d: GPIO_V2_GET_LINE: %w", chip, line, err)
	}
	return os.NewFile(uintptr(req.Fd), fmt.Sprintf("%s line %d", chip, line)), nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
