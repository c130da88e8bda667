package vfiotest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Device describes one fake PCI function.
type Device struct {
	Addr      string // canonical, "0000:03:00.0"
	Vendor    uint16
	Device    uint16
	Class     uint32 // 0x020000 for Ethernet
	SubVendor uint16
	SubDevice uint16
	Revision  uint8
	NUMANode  int
	Driver    string // bound driver, "" for none
	Group     int    // IOMMU group, -1 for none
	// Native is the driver the fake kernel binds on drivers_probe when no
	// driver_override is set ("" binds nothing).
	Native string
}

// Write is one attribute write seen by the fake kernel.
type Write struct {
	Path string // relative to Root, such as "bus/pci/drivers_probe"
	Data string
}

func (w Write) String() string { return fmt.Sprintf("%s <- %q", w.Path, w.Data) }

// Sysfs is a fake sysfs tree. Its Write method is the fake kernel: pass it as
// vfio.Sysfs.Write.
type Sysfs struct {
	Root string
	t    testing.TB

	mu     sync.Mutex
	writes []Write
	fail   map[string]error
	native map[string]string
}

// New makes an empty tree under t.TempDir(): no devices, no drivers.
func New(t testing.TB) *Sysfs {
	t.Helper()
	f := &Sysfs{Root: t.TempDir(), t: t, fail: map[string]error{}, native: map[string]string{}}
	f.mkdir("bus/pci/devices")
	f.mkdir("bus/pci/drivers")
	f.mkdir("kernel/iommu_groups")
	f.file("bus/pci/drivers_probe", "")
	return f
}

func (f *Sysfs) path(rel string) string { return filepath.Join(f.Root, filepath.FromSlash(rel)) }

func (f *Sysfs) mkdir(rel string) {
	f.t.Helper()
	if err := os.MkdirAll(f.path(rel), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *Sysfs) file(rel, content string) {
	f.t.Helper()
	if err := os.WriteFile(f.path(rel), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *Sysfs) symlink(target, rel string) {
	f.t.Helper()
	os.Remove(f.path(rel))
	if err := os.Symlink(target, f.path(rel)); err != nil {
		f.t.Fatal(err)
	}
}

// AddDriver creates driver directories with their bind and unbind attributes.
func (f *Sysfs) AddDriver(names ...string) {
	f.t.Helper()
	for _, n := range names {
		f.mkdir("bus/pci/drivers/" + n)
		f.file("bus/pci/drivers/"+n+"/bind", "")
		f.file("bus/pci/drivers/"+n+"/unbind", "")
	}
}

// AddDevice creates a device directory with its attributes and links. Its
// driver's directory is created when missing.
func (f *Sysfs) AddDevice(d Device) {
	f.t.Helper()
	dir := "bus/pci/devices/" + d.Addr
	f.mkdir(dir)
	f.file(dir+"/vendor", fmt.Sprintf("0x%04x\n", d.Vendor))
	f.file(dir+"/device", fmt.Sprintf("0x%04x\n", d.Device))
	f.file(dir+"/class", fmt.Sprintf("0x%06x\n", d.Class))
	f.file(dir+"/subsystem_vendor", fmt.Sprintf("0x%04x\n", d.SubVendor))
	f.file(dir+"/subsystem_device", fmt.Sprintf("0x%04x\n", d.SubDevice))
	f.file(dir+"/revision", fmt.Sprintf("0x%02x\n", d.Revision))
	f.file(dir+"/numa_node", fmt.Sprintf("%d\n", d.NUMANode))
	f.file(dir+"/driver_override", "(null)\n")
	if d.Driver != "" {
		if _, err := os.Stat(f.path("bus/pci/drivers/" + d.Driver)); err != nil {
			f.AddDriver(d.Driver)
		}
		f.SetDriver(d.Addr, d.Driver)
	}
	if d.Group >= 0 {
		g := "kernel/iommu_groups/" + strconv.Itoa(d.Group)
		f.mkdir(g + "/devices")
		f.symlink("../../../kernel/iommu_groups/"+strconv.Itoa(d.Group), dir+"/iommu_group")
		f.symlink("../../../../bus/pci/devices/"+d.Addr, g+"/devices/"+d.Addr)
	}
	f.mu.Lock()
	f.native[d.Addr] = d.Native
	f.mu.Unlock()
}

// SetDriver links the device to driver ("" unlinks), as the kernel does on bind.
func (f *Sysfs) SetDriver(addr, driver string) {
	f.t.Helper()
	link := f.path("bus/pci/devices/" + addr + "/driver")
	os.Remove(link)
	if driver != "" {
		if err := os.Symlink("../../drivers/"+driver, link); err != nil {
			f.t.Fatal(err)
		}
	}
}

// Driver is the driver the device is linked to, "" when none.
func (f *Sysfs) Driver(addr string) string {
	t, err := os.Readlink(f.path("bus/pci/devices/" + addr + "/driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(t)
}

// Read returns an attribute's content ("" when missing).
func (f *Sysfs) Read(rel string) string {
	b, _ := os.ReadFile(f.path(rel))
	return string(b)
}

// Writes returns the writes seen so far, in order.
func (f *Sysfs) Writes() []Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Write(nil), f.writes...)
}

// FailWrite makes writes to rel fail with err (such as syscall.EACCES).
func (f *Sysfs) FailWrite(rel string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[rel] = err
}

// Write is the fake kernel: it records the write, stores data in the attribute
// and reacts to drivers_probe, drivers/X/bind and drivers/X/unbind.
func (f *Sysfs) Write(path string, data []byte) error {
	rel, err := filepath.Rel(f.Root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("vfiotest: write outside the fake sysfs: %s", path)
	}
	rel = filepath.ToSlash(rel)
	f.mu.Lock()
	f.writes = append(f.writes, Write{Path: rel, Data: string(data)})
	ferr := f.fail[rel]
	f.mu.Unlock()
	if ferr != nil {
		return &os.PathError{Op: "write", Path: path, Err: ferr}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	}
	if fi.IsDir() {
		return &os.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	arg := strings.TrimSpace(string(data))
	parts := strings.Split(rel, "/")
	switch {
	case rel == "bus/pci/drivers_probe":
		return f.probe(arg)
	case len(parts) == 5 && parts[2] == "drivers" && parts[4] == "unbind":
		if !f.exists(arg) {
			return errno(path, syscall.ENODEV)
		}
		if f.Driver(arg) != parts[3] {
			return errno(path, syscall.ENODEV)
		}
		return os.Remove(f.path("bus/pci/devices/" + arg + "/driver"))
	case len(parts) == 5 && parts[2] == "drivers" && parts[4] == "bind":
		if !f.exists(arg) {
			return errno(path, syscall.ENODEV)
		}
		if f.Driver(arg) != "" {
			return errno(path, syscall.EBUSY)
		}
		if o := f.override(arg); o != "" && o != parts[3] {
			return errno(path, syscall.ENODEV)
		}
		return os.Symlink("../../drivers/"+parts[3], f.path("bus/pci/devices/"+arg+"/driver"))
	}
	return nil
}

func errno(path string, e syscall.Errno) error { return &os.PathError{Op: "write", Path: path, Err: e} }

func (f *Sysfs) exists(addr string) bool {
	_, err := os.Stat(f.path("bus/pci/devices/" + addr))
	return addr != "" && err == nil
}

func (f *Sysfs) override(addr string) string {
	o := strings.TrimSpace(f.Read("bus/pci/devices/" + addr + "/driver_override"))
	if o == "(null)" {
		return ""
	}
	return o
}

// probe binds an unbound device to its override, or else its native driver, when
// that driver is loaded.
func (f *Sysfs) probe(addr string) error {
	if !f.exists(addr) {
		return errno(f.path("bus/pci/drivers_probe"), syscall.ENODEV)
	}
	if f.Driver(addr) != "" {
		return nil
	}
	target := f.override(addr)
	if target == "" {
		f.mu.Lock()
		target = f.native[addr]
		f.mu.Unlock()
	}
	if target == "" {
		return nil
	}
	if _, err := os.Stat(f.path("bus/pci/drivers/" + target)); err != nil {
		return nil // driver not loaded: nothing binds, and the write succeeds
	}
	err := os.Symlink("../../drivers/"+target, f.path("bus/pci/devices/"+addr+"/driver"))
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}
