package physmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Window is one memory resource of a platform device (a "reg" entry of its
// devicetree node).
type Window struct {
	Phys uint64 // physical base address
	Size int    // bytes
}

// DeviceConfig describes a platform device to open.
type DeviceConfig struct {
	// Name is the device's name, as the kernel calls it ("30be0000.ethernet").
	Name string
	// Compatible is its devicetree compatible string ("fsl,imx8mp-fec"): the
	// driver picks its quirks from it.
	Compatible string
	// Windows are its register windows; Regs(n) is Windows[n].
	Windows []Window
	// DMA is the allocator the device's driver gets (an Allocator of this
	// package with the device's address limit). Close does not close it.
	DMA dma.Allocator
	// MemPath replaces "/dev/mem" (tests map a plain file: offsets are then
	// file offsets).
	MemPath string
	// IOMemPath replaces "/proc/iomem", read only to explain a refused mapping.
	IOMemPath string
	// SysfsRoot replaces "/sys" in hints.
	SysfsRoot string
	// Preflight, when set, runs before /dev/mem is opened: it checks that the
	// registers may be touched (package preflight: no kernel driver holds
	// them, their clocks run) and takes what the device needs while it is
	// open (the PHY's reset line); an error refuses the open. The Closer it
	// returns is closed by Close, after the windows are unmapped.
	Preflight func() (io.Closer, error)
}

// Device is a platform device reached through /dev/mem. It implements
// nic.Device, without interrupts: a driver on it polls. Safe for concurrent use.
type Device struct {
	cfg    DeviceConfig // immutable
	fd     int          // /dev/mem; immutable until Close
	held   io.Closer    // what cfg.Preflight took, nil when none; immutable until Close
	wins   []*Regs      // immutable until Close
	mu     sync.Mutex
	closed bool // guarded by mu
}

var _ nic.Device = (*Device)(nil)

// Errors of OpenDevice, wrapped with context and a hint.
var (
	// ErrDevMemDenied: the kernel refused the mapping of a register range.
	ErrDevMemDenied = errors.New("physmem: /dev/mem refused the mapping")
	// ErrNoPermission: the process may not open /dev/mem.
	ErrNoPermission = errors.New("physmem: no permission to open /dev/mem")
)

// OpenDevice opens /dev/mem and maps every register window of cfg.
func OpenDevice(cfg DeviceConfig) (*Device, error) {
	if len(cfg.Windows) == 0 {
		return nil, fmt.Errorf("physmem: device %q: no register window given", cfg.Name)
	}
	if cfg.MemPath == "" {
		cfg.MemPath = "/dev/mem"
	}
	if cfg.IOMemPath == "" {
		cfg.IOMemPath = "/proc/iomem"
	}
	if cfg.SysfsRoot == "" {
		cfg.SysfsRoot = "/sys"
	}
	var held io.Closer
	if cfg.Preflight != nil {
		var err error
		if held, err = cfg.Preflight(); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(cfg.MemPath, unix.O_RDWR|unix.O_SYNC|unix.O_CLOEXEC, 0)
	if err != nil {
		if held != nil {
			held.Close()
		}
		switch {
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("%w: open %s: %v (run as root: it needs CAP_SYS_RAWIO)", ErrNoPermission, cfg.MemPath, err)
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("physmem: open %s: %w (a kernel without CONFIG_DEVMEM has no /dev/mem)", cfg.MemPath, err)
		}
		return nil, fmt.Errorf("physmem: open %s: %w", cfg.MemPath, err)
	}
	d := &Device{cfg: cfg, fd: fd, held: held}
	page := os.Getpagesize()
	for i, w := range cfg.Windows {
		if w.Size <= 0 || w.Size%4 != 0 {
			d.Close()
			return nil, fmt.Errorf("physmem: window %d of %q: size %d: want a positive multiple of 4", i, cfg.Name, w.Size)
		}
		base := w.Phys &^ uint64(page-1)
		off := int(w.Phys - base)
		n := (off + w.Size + page - 1) &^ (page - 1)
		mem, err := mmapShared(fd, int64(base), n)
		if err != nil {
			d.Close()
			return nil, d.mapError(w, err)
		}
		d.wins = append(d.wins, &Regs{phys: w.Phys, size: w.Size, mem: mem, off: off})
	}
	return d, nil
}

// mapError explains a refused mmap of /dev/mem.
func (d *Device) mapError(w Window, err error) error {
	where := fmt.Sprintf("mmap of %s at %#x (%#x bytes)", d.cfg.MemPath, w.Phys, w.Size)
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
		return fmt.Errorf("physmem: %s: %w", where, err)
	}
	owners := iomemOwners(d.cfg.IOMemPath, w.Phys, uint64(w.Size))
	hint := "the kernel refuses it: either a kernel driver has claimed the range (with CONFIG_IO_STRICT_DEVMEM, " +
		"a range a driver claims cannot be mapped, and mappings made before are revoked when one claims it: " +
		"the MAC must be handed over, see the README's \"Running on real hardware\" and `xnic doctor`); " +
		"or CONFIG_STRICT_DEVMEM forbids the range (RAM, or a kernel booted without iomem=relaxed); " +
		"or the process lacks CAP_SYS_RAWIO"
	if len(owners) > 0 {
		hint += "; /proc/iomem: " + strings.Join(owners, "; ")
		for _, o := range owners {
			if _, dev, ok := strings.Cut(o, " : "); ok {
				dev = strings.Fields(dev)[0]
				if target, e := os.Readlink(d.cfg.SysfsRoot + "/bus/platform/devices/" + dev + "/driver"); e == nil {
					hint += "; " + unbindHint(d.cfg.SysfsRoot, dev, target[strings.LastIndex(target, "/")+1:])
					break
				}
			}
		}
	}
	return fmt.Errorf("%w: %s: %v: %s", ErrDevMemDenied, where, err, hint)
}

// unbindHint says how dev comes off the kernel driver drv. The fec driver
// sets suppress_bind_attrs (drivers/net/ethernet/freescale/fec_main.c,
// fec_driver), so it has no bind or unbind file: only rmmod (a module build)
// takes it off, and its remove path gates the MAC's clocks (fec_drv_remove),
// after which a register access hangs the SoC.
func unbindHint(sysfs, dev, drv string) string {
	if drv == "fec" {
		return fmt.Sprintf("%s is bound to the kernel driver \"fec\", which has no unbind file (suppress_bind_attrs); "+
			"`rmmod fec` would gate the MAC's clocks: hand the devicetree node to simple-pm-bus instead (`xnic doctor` prints the fdtput line)", dev)
	}
	return fmt.Sprintf("%s is bound to the kernel driver %q: echo %s > %s/bus/platform/drivers/%s/unbind "+
		"(then nothing holds its clocks: `xnic doctor` says what else the hand-over needs)", dev, drv, dev, sysfs, drv)
}

// iomemOwners lists the /proc/iomem lines whose range overlaps [phys, +n). A
// range listed twice (nested) has been requested by a driver. Without root
// the kernel shows zeros for addresses and nothing matches.
func iomemOwners(path string, phys, n uint64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rng, _, ok := strings.Cut(line, " : ")
		if !ok {
			continue
		}
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		a, e1 := strconv.ParseUint(lo, 16, 64)
		b, e2 := strconv.ParseUint(hi, 16, 64)
		if e1 != nil || e2 != nil || (a == 0 && b == 0) {
			continue
		}
		if a < phys+n && phys <= b {
			out = append(out, line)
		}
	}
	return out
}

// Info implements nic.Device.
func (d *Device) Info() nic.DeviceInfo {
	return nic.DeviceInfo{Name: d.cfg.Name, Bus: "platform", Compatible: d.cfg.Compatible}
}

// Regs implements nic.Device: window n of the device.
func (d *Device) Regs(n int) (nic.Regs, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("physmem: %s: %w", d.cfg.Name, nic.ErrClosed)
	}
	if n < 0 || n >= len(d.wins) {
		return nil, fmt.Errorf("physmem: %s has %d register windows, not %d", d.cfg.Name, len(d.wins), n+1)
	}
	return d.wins[n], nil
}

// DMA implements nic.Device.
func (d *Device) DMA() dma.Allocator { return d.cfg.DMA }

// ReadConfig implements nic.Device: platform devices have no config space.
func (d *Device) ReadConfig(off, size int) (uint32, error) {
	return 0, fmt.Errorf("physmem: %s: configuration space of a platform device: %w", d.cfg.Name, nic.ErrNotSupported)
}

// WriteConfig implements nic.Device: platform devices have no config space.
func (d *Device) WriteConfig(off, size int, val uint32) error {
	return fmt.Errorf("physmem: %s: configuration space of a platform device: %w", d.cfg.Name, nic.ErrNotSupported)
}

// EnableBusMaster implements nic.Device: a platform device masters the bus
// without being told; nothing to do.
func (d *Device) EnableBusMaster() error { return nil }

// EnableMSIX implements nic.Device: a process cannot receive a platform
// device's interrupt through /dev/mem (it would need UIO or VFIO platform,
// which Debian's arm64 kernels lack), so drivers poll.
func (d *Device) EnableMSIX(n int) ([]nic.IRQ, error) {
	return nil, fmt.Errorf("physmem: %s: interrupts through /dev/mem (poll the queues instead): %w", d.cfg.Name, nic.ErrNotSupported)
}

// DisableIRQs implements nic.Device; there is nothing to tear down.
func (d *Device) DisableIRQs() error { return nil }

// Reset implements nic.Device: there is no bus-level reset of a platform
// device; drivers reset through their own registers.
func (d *Device) Reset() error {
	return fmt.Errorf("physmem: %s: bus reset of a platform device: %w", d.cfg.Name, nic.ErrNotSupported)
}

// Close unmaps the windows and closes /dev/mem. The allocator stays open.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, w := range d.wins {
		if err := w.unmap(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unix.Close(d.fd); err != nil {
		errs = append(errs, err)
	}
	if d.held != nil {
		errs = append(errs, d.held.Close())
	}
	return errors.Join(errs...)
}
