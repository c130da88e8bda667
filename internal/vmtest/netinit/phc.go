package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// phcWindow is how long TestPHC watches the clock run.
const phcWindow = 500 * time.Millisecond

// phc finds the PTP hardware clock the driver registered for the interface's
// device (/sys/class/ptp/ptpN whose device is the interface's), reads it
// through its character device as a dynamic POSIX clock (clock_gettime on
// FD_TO_CLOCKID of the open /dev/ptpN, as phc_ctl and testptp do; the driver
// answers with its gettimex64) and checks that it runs at the rate of the
// guest's CLOCK_MONOTONIC, within 5%.
func phc(c *check, ifname string) {
	dev, err := filepath.EvalSymlinks(filepath.Join("/sys/class/net", ifname, "device"))
	if err != nil {
		c.errorf("%s: no device: %v", ifname, err)
		return
	}
	name := ""
	ents, _ := os.ReadDir("/sys/class/ptp")
	for _, e := range ents {
		if d, err := filepath.EvalSymlinks(filepath.Join("/sys/class/ptp", e.Name(), "device")); err == nil && d == dev {
			name = e.Name()
		}
	}
	if name == "" {
		c.errorf("no PTP clock of %s (%s) in /sys/class/ptp (%d clocks)", ifname, filepath.Base(dev), len(ents))
		return
	}
	f, err := os.Open("/dev/" + name)
	if err != nil {
		c.errorf("open /dev/%s: %v", name, err)
		return
	}
	defer f.Close()
	clk := int32(^int32(f.Fd())<<3 | 3) // FD_TO_CLOCKID (include/linux/posix-timers.h)
	p0, m0, err := phcRead(clk)
	if err == nil {
		time.Sleep(phcWindow)
		var p1, m1 int64
		if p1, m1, err = phcRead(clk); err == nil {
			ratio := float64(p1-p0) / float64(m1-m0)
			c.logf("%s (%s): advanced %d ns in %d ns of CLOCK_MONOTONIC: rate %.4f", name,
				strings.TrimSpace(readSys(filepath.Join("/sys/class/ptp", name, "clock_name"))), p1-p0, m1-m0, ratio)
			if ratio < 0.95 || ratio > 1.05 {
				c.errorf("%s runs at %.4f times the guest's clock, want 1 within 5%%", name, ratio)
			}
		}
	}
	if err != nil {
		c.errorf("%s: %v", name, err)
	}
}

// phcRead reads clock clk, bracketed by CLOCK_MONOTONIC (the midpoint): of
// three reads the one with the narrowest bracket, so that a read held up (a
// register read is a message to the model's server under TCG) does not skew
// the rate.
func phcRead(clk int32) (phc, mono int64, err error) {
	width := int64(1 << 62)
	for i := 0; i < 3; i++ {
		var a, p, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		if err := unix.ClockGettime(clk, &p); err != nil {
			return 0, 0, fmt.Errorf("clock_gettime: %w", err)
		}
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if w := b.Nano() - a.Nano(); w < width {
			width, phc, mono = w, p.Nano(), (a.Nano()+b.Nano())/2
		}
	}
	return phc, mono, nil
}
