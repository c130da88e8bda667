package preflight

import (
	"io"
	"time"
)

// GPIO is the part of the GPIO character device (include/uapi/linux/gpio.h,
// the v2 ABI) that the hand-over needs: who holds a line, and holding one.
// RealGPIO is the kernel's; tests plug in a fake.
type GPIO interface {
	// Info reports the line's state (GPIO_V2_GET_LINEINFO_IOCTL) on the
	// chip device chip ("/dev/gpiochip3").
	Info(chip string, line uint32) (LineInfo, error)
	// Hold requests the line as an output driving value (a logical value:
	// 1 is active, with activeLow inverting the level on the pin) and keeps
	// the request until Close; then the line is free again, and keeps the
	// level it had (gpiolib leaves a freed line as it is).
	Hold(chip string, line uint32, activeLow bool, value int, consumer string) (io.Closer, error)
}

// LineInfo is what the kernel says of one line.
type LineInfo struct {
	Used      bool   // requested by the kernel or a process
	Consumer  string // the requester's label ("PHY reset"... or "xnic")
	Output    bool
	ActiveLow bool
}

// PHYReset is a PHY's reset line as the devicetree gives it (reset-gpios in
// the PHY node: the gpio controller's phandle, the line, flags; bit 0 of the
// flags is GPIO_ACTIVE_LOW, include/dt-bindings/gpio/gpio.h).
type PHYReset struct {
	Chip      string        // "/dev/gpiochip3" under Root
	ChipName  string        // "gpiochip3"
	Line      uint32        // offset on the chip
	ActiveLow bool          //
	Deassert  time.Duration // reset-deassert-us: how long the PHY needs after release
	PHYNode   string        // the PHY's devicetree path
}
