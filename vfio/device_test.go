package vfio

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

const (
	testCfgOff = 0x1000 // where the fake device file holds configuration space
	testBAROff = 0x2000 // and BAR0
)

// testDevice builds a Device over a regular file laid out as a VFIO device fd:
// configuration space at testCfgOff, a 4 KiB BAR0 at testBAROff. pread, pwrite and
// mmap on it behave as on the real fd; ioctls do not, so this covers everything
// but the ioctl paths (which the XNIC_VFIO_BDF tests cover).
func testDevice(t *testing.T, cfg []byte) (*Device, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "device")
	img := make([]byte, testBAROff+4096)
	copy(img[testCfgOff:], cfg)
	binary.LittleEndian.PutUint32(img[testBAROff+8:], 0x80080783) // an igb STATUS value
	if err := os.WriteFile(p, img, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ParseAddr(igbAddr)
	regions := make([]RegionInfo, pciNumRegions)
	for i := range regions {
		regions[i].Index = uint32(i)
	}
	rw := uint32(regionFlagRead | regionFlagWrite)
	regions[0] = RegionInfo{Index: 0, Flags: rw | regionFlagMmap, Size: 4096, Offset: testBAROff, Areas: []Area{{0, 4096}}}
	regions[2] = RegionInfo{Index: 2, Flags: rw, Size: 32, Offset: testBAROff} // an I/O BAR
	regions[pciConfigRegion] = RegionInfo{Index: 7, Flags: rw, Size: 256, Offset: testCfgOff}
	d := &Device{addr: a, container: -1, groupFD: -1, fd: fd, regions: regions, bars: map[int]*BAR{},
		devInfo: deviceInfo{Flags: deviceFlagPCI, NumRegions: pciNumRegions}}
	t.Cleanup(func() { d.Close() })
	return d, p
}

// igbConfig is the start of an 82576's configuration space.
func igbConfig() []byte {
	c := make([]byte, 256)
	binary.LittleEndian.PutUint16(c[0x00:], 0x8086)
	binary.LittleEndian.PutUint16(c[0x02:], 0x10c9)
	binary.LittleEndian.PutUint16(c[0x04:], 0x0000) // command: nothing enabled
	c[0x08] = 0x01
	binary.LittleEndian.PutUint32(c[0x10:], 0xfebc0000) // BAR0: memory
	binary.LittleEndian.PutUint32(c[0x18:], 0x0000c001) // BAR2: I/O
	binary.LittleEndian.PutUint16(c[0x2c:], 0x8086)
	binary.LittleEndian.PutUint16(c[0x2e:], 0xa03c)
	return c
}

func TestDeviceConfigSpace(t *testing.T) {
	d, path := testDevice(t, igbConfig())
	if err := d.readIdentity(); err != nil {
		t.Fatal(err)
	}
	want := nic.DeviceInfo{Name: igbAddr, Bus: "pci", Vendor: 0x8086, Device: 0x10c9, SubVendor: 0x8086, SubDevice: 0xa03c, Revision: 1}
	if d.Info() != want {
		t.Fatalf("info %+v", d.Info())
	}
	if v, err := d.ReadConfig(0, 4); err != nil || v != 0x10c98086 {
		t.Fatalf("dword 0: %#x %v", v, err)
	}
	if v, err := d.ReadConfig(2, 1); err != nil || v != 0xc9 {
		t.Fatalf("byte 2: %#x %v", v, err)
	}
	for _, bad := range [][2]int{{0, 3}, {1, 2}, {2, 4}, {-4, 4}, {256, 1}, {254, 4}, {0, 0}} {
		if _, err := d.ReadConfig(bad[0], bad[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ReadConfig(%d, %d) = %v", bad[0], bad[1], err)
		}
	}
	if err := d.WriteConfig(0x40, 1, 0x100); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("oversized value: %v", err)
	}
	if err := d.WriteConfig(0x40, 2, 0xBEEF); err != nil {
		t.Fatal(err)
	}
	if err := d.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	img, _ := os.ReadFile(path)
	if binary.LittleEndian.Uint16(img[testCfgOff+0x40:]) != 0xBEEF {
		t.Fatal("config write missed")
	}
	if cmd := binary.LittleEndian.Uint16(img[testCfgOff+4:]); cmd != pciCommandMaster|pciCommandMemory {
		t.Fatalf("command register %#x, want bus master and memory enabled", cmd)
	}
	if err := d.CheckAlive(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("reset without the RESET flag: %v", err)
	}
}

func TestDeviceGone(t *testing.T) {
	c := make([]byte, 256)
	for i := range c {
		c[i] = 0xFF
	}
	d, _ := testDevice(t, c)
	err := d.readIdentity()
	if !errors.Is(err, ErrDeviceGone) || !errors.Is(err, nic.ErrNoDevice) {
		t.Fatalf("identity of a gone device: %v", err)
	}
	if err := d.CheckAlive(); !errors.Is(err, ErrDeviceGone) {
		t.Fatal(err)
	}
	if err := d.EnableBusMaster(); !errors.Is(err, ErrDeviceGone) {
		t.Fatal(err)
	}
}

func TestDeviceBARs(t *testing.T) {
	d, _ := testDevice(t, igbConfig())
	r, err := d.Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Read32(8); v != 0x80080783 {
		t.Fatalf("STATUS through the mapping: %#x", v)
	}
	if r2, _ := d.Regs(0); r2 != r {
		t.Fatal("second Regs(0) mapped again")
	}
	if b, _ := d.BAR(0); b.MappedBytes() != 4096 {
		t.Fatalf("mapped %d", b.MappedBytes())
	}
	if _, err := d.Regs(1); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("absent BAR1: %v", err)
	}
	if _, err := d.Regs(2); !errors.Is(err, nic.ErrNotSupported) || !strings.Contains(err.Error(), "I/O") {
		t.Fatalf("I/O BAR2: %v", err)
	}
	for _, n := range []int{-1, 6, 7} {
		if _, err := d.Regs(n); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Regs(%d): %v", n, err)
		}
	}
	if _, err := d.EnableMSIX(0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("EnableMSIX(0): %v", err)
	}
	if err := d.TriggerIRQ(0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("trigger without vectors: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Everything handed out is dead, and says so instead of faulting.
	if v := r.Read32(8); v != 0xFFFFFFFF {
		t.Fatalf("read after close %#x", v)
	}
	if _, err := d.ReadConfig(0, 2); !errors.Is(err, nic.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := d.Regs(0); !errors.Is(err, nic.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := d.EnableMSIX(1); !errors.Is(err, nic.ErrClosed) {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal("second close:", err)
	}
}

// openTree is a fake machine for Open: an igb bound to vfio-pci in group 7, a
// vfio-pci device without a group, and /dev/vfio in a temporary directory.
func openTree(t *testing.T) (Sysfs, string) {
	f, s := fakeTree(t)
	f.SetDriver(igbAddr, "vfio-pci")
	f.AddDevice(vfiotest.Device{Addr: "0000:06:00.0", Vendor: 0x8086, Device: 0x1533, Class: 0x020000, Driver: "vfio-pci", Group: -1})
	return s, t.TempDir()
}

func TestOpenErrors(t *testing.T) {
	s, dev := openTree(t)
	cases := []struct {
		name, bdf string
		setup     func()
		want      error
		msg       []string
	}{
		{"malformed", "03:00", nil, ErrBadAddress, []string{"0000:03:00.0"}},
		{"absent", "0000:05:00.0", nil, ErrNoSuchDevice, []string{"xnic list"}},
		{"not bound", "0000:04:00.0", nil, ErrNotBound, []string{"has igb", "xnic bind 0000:04:00.0"}},
		{"unbound", "0000:00:02.0", nil, ErrNotBound, []string{"no driver"}},
		{"no group", "0000:06:00.0", nil, ErrNoIOMMU, []string{"intel_iommu=on", "amd_iommu=on", "iommu=pt"}},
		{"no vfio", igbAddr, nil, ErrNoVFIO, []string{"modprobe vfio-pci"}},
		{"not a container", igbAddr, func() {
			os.WriteFile(filepath.Join(dev, "vfio"), nil, 0o600)
		}, ErrNoVFIO, []string{"not a VFIO container"}},
	}
	for _, tc := range cases {
		if tc.setup != nil {
			tc.setup()
		}
		d, err := Open(tc.bdf, WithSysfs(s), WithDevDir(dev))
		if d != nil || !errors.Is(err, tc.want) {
			t.Errorf("%s: Open = %v, %v; want %v", tc.name, d, err, tc.want)
			continue
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: %q lacks %q", tc.name, err, m)
			}
		}
	}
}

func TestNodeOpenError(t *testing.T) {
	pe := func(e syscall.Errno) error { return &os.PathError{Op: "open", Path: "/dev/vfio/7", Err: e} }
	for _, tc := range []struct {
		err   error
		group bool
		want  error
		msg   string
	}{
		{pe(syscall.EACCES), true, ErrPermission, "chown"},
		{pe(syscall.EPERM), false, ErrPermission, "root"},
		{pe(syscall.EBUSY), true, ErrBusy, "another process"},
		{pe(syscall.ENOENT), true, ErrNoVFIO, "noiommu"},
		{pe(syscall.ENOENT), false, ErrNoVFIO, "modprobe vfio-pci"},
	} {
		err := nodeOpenError("/dev/vfio/7", tc.group, tc.err)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v (group %v) -> %v", tc.err, tc.group, err)
		}
	}
	if err := nodeOpenError("x", true, pe(syscall.EIO)); !errors.Is(err, syscall.EIO) {
		t.Errorf("EIO: %v", err)
	}
}

// countFDs is the number of open file descriptors of this process.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

func TestOpenErrorPathsLeakNoFDs(t *testing.T) {
	s, dev := openTree(t)
	attempt := func() {
		for _, bdf := range []string{"bogus", "0000:05:00.0", "0000:04:00.0", "0000:06:00.0", igbAddr} {
			if d, err := Open(bdf, WithSysfs(s), WithDevDir(dev)); err == nil {
				d.Close()
				t.Fatalf("Open(%s) succeeded on a fake tree", bdf)
			}
		}
	}
	attempt() // warm up whatever the runtime opens once
	os.WriteFile(filepath.Join(dev, "vfio"), nil, 0o600)
	attempt()
	before := countFDs(t)
	for range 20 {
		attempt()
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d fds before, %d after 100 failed Opens", before, after)
	}
	// A Device over a fake fd closes it.
	d, _ := testDevice(t, igbConfig())
	d.Regs(0)
	n := countFDs(t)
	d.Close()
	if countFDs(t) != n-1 {
		t.Fatalf("Close left the device fd open (%d -> %d)", n, countFDs(t))
	}
}
