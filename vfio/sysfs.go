package vfio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sysfs reads and writes the PCI parts of sysfs under Root. The zero value is not
// useful; start from Default and change what a test or a caller needs.
//
// Sysfs is a value: copies share nothing but the directories they name.
type Sysfs struct {
	Root string // "/sys", or a fake tree in tests
	// StateDir holds one small file per device bound by Bind, naming the driver
	// the device had, so Unbind can give it back ("/run/xnic").
	StateDir string
	// Write writes data to a sysfs attribute in one write(2). nil means the real
	// thing; tests plug in a fake kernel that records and reacts to writes.
	Write func(path string, data []byte) error
}

// Default is the system's sysfs with the state in /run/xnic.
var Default = Sysfs{Root: "/sys", StateDir: "/run/xnic"}

// vfioDriver is the name of the vfio-pci driver in /sys/bus/pci/drivers.
const vfioDriver = "vfio-pci"

// PCIDevice is what sysfs says of one PCI function.
type PCIDevice struct {
	Addr       string // canonical "0000:03:00.0"
	Vendor     uint16
	Device     uint16
	SubVendor  uint16
	SubDevice  uint16
	Revision   uint8
	Class      uint32 // 24-bit class code: base class << 16 | subclass << 8 | prog-if
	Driver     string // bound driver, "" when none
	IOMMUGroup int    // -1 when the device has none (no IOMMU enabled)
	NUMANode   int    // -1 when unknown
}

// IsNetwork reports whether the device is a network controller (base class 0x02).
func (d PCIDevice) IsNetwork() bool { return d.Class>>16 == 0x02 }

func (s Sysfs) pciDir() string               { return filepath.Join(s.Root, "bus", "pci") }
func (s Sysfs) devDir(a Addr) string         { return filepath.Join(s.pciDir(), "devices", a.String()) }
func (s Sysfs) driverDir(name string) string { return filepath.Join(s.pciDir(), "drivers", name) }

// readHex reads a sysfs attribute holding one number such as "0x8086\n".
func readHex(path string, bitSize int) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, bitSize)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// linkBase is the last element of a symlink's target, "" when there is no link.
func linkBase(path string) (string, error) {
	t, err := os.Readlink(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

// lookup checks that the device exists and returns its canonical address.
func (s Sysfs) lookup(bdf string) (Addr, error) {
	a, err := ParseAddr(bdf)
	if err != nil {
		return Addr{}, err
	}
	if _, err := os.Stat(s.devDir(a)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Addr{}, fmt.Errorf("%w: %s is not in %s; list network devices with `xnic list` or all with `lspci -D`",
				ErrNoSuchDevice, a, filepath.Join(s.pciDir(), "devices"))
		}
		return Addr{}, fmt.Errorf("%s: %w", a, err)
	}
	return a, nil
}

// Device reads what sysfs says of one PCI function. Errors wrap ErrBadAddress or
// ErrNoSuchDevice.
func (s Sysfs) Device(bdf string) (PCIDevice, error) {
	a, err := s.lookup(bdf)
	if err != nil {
		return PCIDevice{}, err
	}
	return s.readDevice(a)
}

func (s Sysfs) readDevice(a Addr) (PCIDevice, error) {
	dir := s.devDir(a)
	d := PCIDevice{Addr: a.String(), IOMMUGroup: -1, NUMANode: -1}
	fields := []struct {
		name string
		bits int
		set  func(uint64)
	}{
		{"vendor", 16, func(v uint64) { d.Vendor = uint16(v) }},
		{"device", 16, func(v uint64) { d.Device = uint16(v) }},
		{"class", 24, func(v uint64) { d.Class = uint32(v) }},
		{"subsystem_vendor", 16, func(v uint64) { d.SubVendor = uint16(v) }},
		{"subsystem_device", 16, func(v uint64) { d.SubDevice = uint16(v) }},
		{"revision", 8, func(v uint64) { d.Revision = uint8(v) }},
	}
	for i, f := range fields {
		v, err := readHex(filepath.Join(dir, f.name), f.bits)
		if err != nil {
			if i < 3 { // vendor, device and class are always there
				return PCIDevice{}, fmt.Errorf("%s: %w", a, err)
			}
			continue
		}
		f.set(v)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			d.NUMANode = n
		}
	}
	var err error
	if d.Driver, err = linkBase(filepath.Join(dir, "driver")); err != nil {
		return PCIDevice{}, fmt.Errorf("%s: driver link: %w", a, err)
	}
	g, err := linkBase(filepath.Join(dir, "iommu_group"))
	if err != nil {
		return PCIDevice{}, fmt.Errorf("%s: iommu_group link: %w", a, err)
	}
	if g != "" {
		n, err := strconv.Atoi(g)
		if err != nil {
			return PCIDevice{}, fmt.Errorf("%s: iommu_group link names %q, not a number", a, g)
		}
		d.IOMMUGroup = n
	}
	return d, nil
}

// ListNetDevices returns the PCI network controllers (class 0x02xxxx), sorted by
// address.
func (s Sysfs) ListNetDevices() ([]PCIDevice, error) {
	dir := filepath.Join(s.pciDir(), "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("vfio: list PCI devices: %w", err)
	}
	var out []PCIDevice
	for _, e := range ents {
		a, err := ParseAddr(e.Name())
		if err != nil {
			continue // not a PCI function
		}
		d, err := s.readDevice(a)
		if err != nil {
			return nil, fmt.Errorf("vfio: list PCI devices: %w", err)
		}
		if d.IsNetwork() {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(x, y PCIDevice) int { return strings.Compare(x.Addr, y.Addr) })
	return out, nil
}

// noIOMMUHelp is what to tell a user whose device has no IOMMU group.
const noIOMMUHelp = "the kernel has no IOMMU enabled for it: boot with intel_iommu=on (Intel) or amd_iommu=on (AMD), " +
	"usually with iommu=pt, and enable VT-d / AMD-Vi in the firmware"

// IOMMUGroup returns the device's IOMMU group number. Errors wrap ErrNoIOMMU when
// the device has none.
func (s Sysfs) IOMMUGroup(bdf string) (int, error) {
	a, err := s.lookup(bdf)
	if err != nil {
		return -1, err
	}
	d, err := s.readDevice(a)
	if err != nil {
		return -1, err
	}
	if d.IOMMUGroup < 0 {
		return -1, fmt.Errorf("%w: %s has no IOMMU group: %s", ErrNoIOMMU, a, noIOMMUHelp)
	}
	return d.IOMMUGroup, nil
}

// GroupMember is one device of an IOMMU group and its driver.
type GroupMember struct {
	Addr   string
	Driver string // "" when unbound
}

// Harmless reports whether the member lets a VFIO group be viable: unbound, bound
// to a VFIO driver or pci-stub, or a PCIe port (drivers/vfio/pci's driver
// allow-list and bridges).
func (m GroupMember) Harmless() bool {
	return m.Driver == "" || strings.HasPrefix(m.Driver, "vfio") || m.Driver == "pci-stub" || m.Driver == "pcieport"
}

// GroupMembers lists the devices of IOMMU group n with their drivers, sorted.
func (s Sysfs) GroupMembers(n int) ([]GroupMember, error) {
	dir := filepath.Join(s.Root, "kernel", "iommu_groups", strconv.Itoa(n), "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("vfio: IOMMU group %d: %w", n, err)
	}
	var out []GroupMember
	for _, e := range ents {
		drv, err := linkBase(filepath.Join(dir, e.Name(), "driver"))
		if err != nil {
			return nil, fmt.Errorf("vfio: IOMMU group %d: %s: %w", n, e.Name(), err)
		}
		out = append(out, GroupMember{Addr: e.Name(), Driver: drv})
	}
	slices.SortFunc(out, func(x, y GroupMember) int { return strings.Compare(x.Addr, y.Addr) })
	return out, nil
}

// notViable builds the ErrGroupNotViable error for dev in group n: every other
// member, its driver, and what to do.
func (s Sysfs) notViable(dev Addr, n int) error {
	ms, err := s.GroupMembers(n)
	if err != nil {
		return fmt.Errorf("%w: group %d of %s (and listing it failed: %v); bind every device of /sys/kernel/iommu_groups/%d/devices to vfio-pci or unbind it",
			ErrGroupNotViable, n, dev, err, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: IOMMU group %d also holds devices bound to host drivers, and VFIO gives out a group only whole:", dev, n)
	for _, m := range ms {
		if m.Addr == dev.String() {
			continue
		}
		drv := m.Driver
		if drv == "" {
			drv = "no driver"
		}
		verdict := "ok"
		if !m.Harmless() {
			verdict = fmt.Sprintf("blocks: run `xnic bind %s` or unbind it (echo %s > %s/bus/pci/drivers/%s/unbind)", m.Addr, m.Addr, s.Root, m.Driver)
		}
		fmt.Fprintf(&b, "\n  %s (%s): %s", m.Addr, drv, verdict)
	}
	return fmt.Errorf("%w: %s", ErrGroupNotViable, b.String())
}

func (s Sysfs) write(path string, data string) error {
	var err error
	if s.Write != nil {
		err = s.Write(path, []byte(data))
	} else {
		err = writeAttr(path, []byte(data))
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: write %q to %s: %v (run as root)", ErrPermission, strings.TrimSpace(data), path, err)
	}
	return fmt.Errorf("vfio: write %q to %s: %w", strings.TrimSpace(data), path, err)
}

// writeAttr writes a sysfs attribute with one write(2).
func writeAttr(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// bindState is what Bind remembers of a device.
type bindState struct {
	Addr   string `json:"address"`
	Driver string `json:"driver"` // the driver before Bind; "" when there was none
}

func (s Sysfs) statePath(a Addr) string { return filepath.Join(s.StateDir, a.String()+".json") }

func (s Sysfs) saveState(st bindState) error {
	if s.StateDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.StateDir, 0o755); err != nil {
		return fmt.Errorf("vfio: state directory: %w", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	a, _ := ParseAddr(st.Addr)
	tmp := s.statePath(a) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("vfio: save driver state: %w", err)
	}
	if err := os.Rename(tmp, s.statePath(a)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("vfio: save driver state: %w", err)
	}
	return nil
}

// loadState returns the saved state and whether there was one.
func (s Sysfs) loadState(a Addr) (bindState, bool, error) {
	if s.StateDir == "" {
		return bindState{}, false, nil
	}
	b, err := os.ReadFile(s.statePath(a))
	if errors.Is(err, fs.ErrNotExist) {
		return bindState{}, false, nil
	}
	if err != nil {
		return bindState{}, false, fmt.Errorf("vfio: read driver state: %w", err)
	}
	var st bindState
	if err := json.Unmarshal(b, &st); err != nil || st.Addr != a.String() {
		return bindState{}, false, fmt.Errorf("vfio: driver state %s is corrupt (%v); delete it and bind the device by hand", s.statePath(a), err)
	}
	return st, true, nil
}

// Bind hands the device to vfio-pci: it sets driver_override to vfio-pci, unbinds
// the current driver and asks the kernel to probe again, and records the previous
// driver in StateDir for Unbind. It loads no module. It returns the driver the
// device had ("vfio-pci" when it was already bound, which changes nothing).
func (s Sysfs) Bind(bdf string) (prev string, err error) {
	a, err := s.lookup(bdf)
	if err != nil {
		return "", err
	}
	d, err := s.readDevice(a)
	if err != nil {
		return "", err
	}
	if d.Driver == vfioDriver {
		return vfioDriver, nil
	}
	if d.IOMMUGroup < 0 {
		return "", fmt.Errorf("%w: %s has no IOMMU group, so vfio-pci cannot take it: %s", ErrNoIOMMU, a, noIOMMUHelp)
	}
	if _, err := os.Stat(s.driverDir(vfioDriver)); err != nil {
		return "", fmt.Errorf("%w: %s is missing: load the driver with `modprobe vfio-pci`", ErrNoVFIO, s.driverDir(vfioDriver))
	}
	// Remember the driver first: if anything below fails half-way, Unbind still
	// knows where the device came from.
	if err := s.saveState(bindState{Addr: a.String(), Driver: d.Driver}); err != nil {
		return "", err
	}
	dir := s.devDir(a)
	if err := s.write(filepath.Join(dir, "driver_override"), vfioDriver); err != nil {
		return "", err
	}
	if d.Driver != "" {
		if err := s.write(filepath.Join(s.driverDir(d.Driver), "unbind"), a.String()); err != nil {
			return "", fmt.Errorf("%w (the device keeps driver_override=vfio-pci; `xnic unbind %s` clears it)", err, a)
		}
	}
	if err := s.write(filepath.Join(s.pciDir(), "drivers_probe"), a.String()); err != nil {
		return "", fmt.Errorf("%w; `xnic unbind %s` gives the device back to %q", err, a, d.Driver)
	}
	now, err := linkBase(filepath.Join(dir, "driver"))
	if err != nil {
		return "", fmt.Errorf("%s: driver link: %w", a, err)
	}
	if now != vfioDriver {
		if now == "" {
			now = "no driver"
		}
		return "", fmt.Errorf("%w: %s did not bind to vfio-pci (it has %s; see dmesg); `xnic unbind %s` gives it back to %q",
			ErrNotBound, a, now, a, d.Driver)
	}
	return d.Driver, nil
}

// Unbind gives a device bound by Bind back to the driver it had: it clears
// driver_override, unbinds vfio-pci, and binds the old driver (or, when Bind left
// no record, asks the kernel to probe). It returns the driver the device has
// afterwards ("" when none).
func (s Sysfs) Unbind(bdf string) (now string, err error) {
	a, err := s.lookup(bdf)
	if err != nil {
		return "", err
	}
	d, err := s.readDevice(a)
	if err != nil {
		return "", err
	}
	st, known, err := s.loadState(a)
	if err != nil {
		return "", err
	}
	if d.Driver != vfioDriver {
		if known && d.Driver == st.Driver {
			// Already given back (by hand, or a reboot).
			return d.Driver, s.dropState(a)
		}
		drv := d.Driver
		if drv == "" {
			drv = "no driver"
		}
		return "", fmt.Errorf("%w: %s has %s, so there is nothing to unbind", ErrNotBound, a, drv)
	}
	dir := s.devDir(a)
	if err := s.write(filepath.Join(dir, "driver_override"), "\n"); err != nil {
		return "", err
	}
	if err := s.write(filepath.Join(s.driverDir(vfioDriver), "unbind"), a.String()); err != nil {
		return "", err
	}
	switch {
	case known && st.Driver == "":
		// It had no driver before Bind: leave it without one.
	case known:
		if _, err := os.Stat(s.driverDir(st.Driver)); err != nil {
			// The old driver is not loaded: let the kernel pick, and say so.
			if err := s.write(filepath.Join(s.pciDir(), "drivers_probe"), a.String()); err != nil {
				return "", err
			}
			now, _ := linkBase(filepath.Join(dir, "driver"))
			if now != st.Driver {
				return now, fmt.Errorf("vfio: %s left vfio-pci, but its old driver %q is not loaded: run `modprobe %s` and `echo %s > %s/bind`",
					a, st.Driver, st.Driver, a, s.driverDir(st.Driver))
			}
			return now, s.dropState(a)
		}
		if err := s.write(filepath.Join(s.driverDir(st.Driver), "bind"), a.String()); err != nil {
			return "", fmt.Errorf("%w (is module %s loaded?)", err, st.Driver)
		}
	default:
		if err := s.write(filepath.Join(s.pciDir(), "drivers_probe"), a.String()); err != nil {
			return "", err
		}
	}
	if now, err = linkBase(filepath.Join(dir, "driver")); err != nil {
		return "", fmt.Errorf("%s: driver link: %w", a, err)
	}
	if known && st.Driver != "" && now != st.Driver {
		return now, fmt.Errorf("vfio: %s was given back but did not bind to %q (it has %q; see dmesg)", a, st.Driver, now)
	}
	return now, s.dropState(a)
}

func (s Sysfs) dropState(a Addr) error {
	if s.StateDir == "" {
		return nil
	}
	if err := os.Remove(s.statePath(a)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("vfio: remove driver state: %w", err)
	}
	return nil
}
