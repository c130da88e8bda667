package vfio

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

const (
	igbAddr  = "0000:03:00.0"
	virtAddr = "0000:00:03.0"
)

// fakeTree is a machine with an igb NIC (group 7, alone), a virtio NIC, a GPU, and
// an igb port sharing group 9 with an audio device bound to snd_hda_intel.
func fakeTree(t *testing.T) (*vfiotest.Sysfs, Sysfs) {
	f := vfiotest.New(t)
	f.AddDriver("vfio-pci", "igb", "virtio-pci", "snd_hda_intel", "pcieport")
	f.AddDevice(vfiotest.Device{Addr: igbAddr, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, SubVendor: 0x8086, SubDevice: 0xa03c,
		Revision: 1, NUMANode: 0, Driver: "igb", Group: 7, Native: "igb"})
	f.AddDevice(vfiotest.Device{Addr: virtAddr, Vendor: 0x1af4, Device: 0x1000, Class: 0x020000, NUMANode: -1, Driver: "virtio-pci", Group: -1})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:02.0", Vendor: 0x1234, Device: 0x1111, Class: 0x030000, NUMANode: -1, Group: 3})
	f.AddDevice(vfiotest.Device{Addr: "0000:04:00.0", Vendor: 0x8086, Device: 0x1533, Class: 0x020000, NUMANode: 1, Driver: "igb", Group: 9, Native: "igb"})
	f.AddDevice(vfiotest.Device{Addr: "0000:04:00.1", Vendor: 0x8086, Device: 0x1234, Class: 0x040300, NUMANode: 1, Driver: "snd_hda_intel", Group: 9})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:1c.0", Vendor: 0x8086, Device: 0x7ab8, Class: 0x060400, NUMANode: 1, Driver: "pcieport", Group: 9})
	s := Sysfs{Root: f.Root, StateDir: filepath.Join(t.TempDir(), "state"), Write: f.Write}
	return f, s
}

func TestListNetDevices(t *testing.T) {
	_, s := fakeTree(t)
	// Entries that are not PCI addresses are ignored.
	os.MkdirAll(filepath.Join(s.Root, "bus/pci/devices/not-a-device"), 0o755)
	ds, err := s.ListNetDevices()
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, d := range ds {
		addrs = append(addrs, d.Addr)
	}
	if !slices.Equal(addrs, []string{virtAddr, igbAddr, "0000:04:00.0"}) {
		t.Fatalf("addresses %v", addrs)
	}
	want := PCIDevice{Addr: igbAddr, Vendor: 0x8086, Device: 0x10c9, SubVendor: 0x8086, SubDevice: 0xa03c, Revision: 1,
		Class: 0x020000, Driver: "igb", IOMMUGroup: 7, NUMANode: 0}
	if ds[1] != want {
		t.Fatalf("igb: %+v\nwant %+v", ds[1], want)
	}
	if ds[0].IOMMUGroup != -1 || ds[0].NUMANode != -1 || ds[0].Driver != "virtio-pci" {
		t.Fatalf("virtio: %+v", ds[0])
	}
	if ds[2].NUMANode != 1 || ds[2].IOMMUGroup != 9 {
		t.Fatalf("i210: %+v", ds[2])
	}
	if _, err := (Sysfs{Root: t.TempDir()}).ListNetDevices(); err == nil {
		t.Fatal("a tree without bus/pci listed fine")
	}
}

func TestListNetDevicesRealSysfs(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no /sys/bus/pci on this machine")
	}
	ds, err := Default.ListNetDevices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if !d.IsNetwork() || d.Vendor == 0 {
			t.Errorf("%+v is not a network controller", d)
		}
		if _, err := ParseAddr(d.Addr); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d network controllers", len(ds))
}

func TestBindFromHostDriver(t *testing.T) {
	f, s := fakeTree(t)
	prev, err := s.Bind("03:00.0") // the short form
	if err != nil {
		t.Fatal(err)
	}
	if prev != "igb" || f.Driver(igbAddr) != "vfio-pci" {
		t.Fatalf("prev %q, now %q", prev, f.Driver(igbAddr))
	}
	want := []vfiotest.Write{
		{Path: "bus/pci/devices/" + igbAddr + "/driver_override", Data: "vfio-pci"},
		{Path: "bus/pci/drivers/igb/unbind", Data: igbAddr},
		{Path: "bus/pci/drivers_probe", Data: igbAddr},
	}
	if got := f.Writes(); !slices.Equal(got, want) {
		t.Fatalf("writes:\n%v\nwant\n%v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(s.StateDir, igbAddr+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var st bindState
	if err := json.Unmarshal(b, &st); err != nil || st != (bindState{Addr: igbAddr, Driver: "igb"}) {
		t.Fatalf("state %s: %v", b, err)
	}
	// Binding again changes nothing.
	prev, err = s.Bind(igbAddr)
	if err != nil || prev != "vfio-pci" || len(f.Writes()) != 3 {
		t.Fatalf("second bind: %q %v, %d writes", prev, err, len(f.Writes()))
	}

	// Unbind gives it back to igb.
	now, err := s.Unbind(igbAddr)
	if err != nil || now != "igb" || f.Driver(igbAddr) != "igb" {
		t.Fatalf("unbind: %q %v, driver %q", now, err, f.Driver(igbAddr))
	}
	want = append(want,
		vfiotest.Write{Path: "bus/pci/devices/" + igbAddr + "/driver_override", Data: "\n"},
		vfiotest.Write{Path: "bus/pci/drivers/vfio-pci/unbind", Data: igbAddr},
		vfiotest.Write{Path: "bus/pci/drivers/igb/bind", Data: igbAddr},
	)
	if got := f.Writes(); !slices.Equal(got, want) {
		t.Fatalf("writes:\n%v\nwant\n%v", got, want)
	}
	if _, err := os.Stat(filepath.Join(s.StateDir, igbAddr+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file left behind: %v", err)
	}
	// Unbinding a device that is not on vfio-pci is an error that says so.
	if _, err := s.Unbind(igbAddr); !errors.Is(err, ErrNotBound) || !strings.Contains(err.Error(), "igb") {
		t.Fatalf("second unbind: %v", err)
	}
}

func TestBindUnboundDeviceAndUnbindLeavesItUnbound(t *testing.T) {
	f, s := fakeTree(t)
	f.SetDriver(igbAddr, "")
	prev, err := s.Bind(igbAddr)
	if err != nil || prev != "" || f.Driver(igbAddr) != "vfio-pci" {
		t.Fatalf("bind: %q %v", prev, err)
	}
	for _, w := range f.Writes() {
		if strings.HasSuffix(w.Path, "/unbind") {
			t.Fatalf("unbound device was unbound: %v", w)
		}
	}
	now, err := s.Unbind(igbAddr)
	if err != nil || now != "" || f.Driver(igbAddr) != "" {
		t.Fatalf("unbind: %q %v, driver %q", now, err, f.Driver(igbAddr))
	}
	last := f.Writes()[len(f.Writes())-1]
	if last.Path != "bus/pci/drivers/vfio-pci/unbind" {
		t.Fatalf("last write %v: it had no driver, so nothing should bind it", last)
	}
}

func TestUnbindWithoutStateProbes(t *testing.T) {
	f, s := fakeTree(t)
	f.SetDriver(igbAddr, "vfio-pci") // bound by someone else: no state file
	now, err := s.Unbind(igbAddr)
	if err != nil || now != "igb" {
		t.Fatalf("unbind: %q %v", now, err)
	}
	w := f.Writes()
	if w[len(w)-1] != (vfiotest.Write{Path: "bus/pci/drivers_probe", Data: igbAddr}) {
		t.Fatalf("writes %v", w)
	}
}

func TestUnbindOldDriverNotLoaded(t *testing.T) {
	f, s := fakeTree(t)
	if _, err := s.Bind(igbAddr); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.Root, "bus/pci/drivers/igb")) // rmmod igb
	_, err := s.Unbind(igbAddr)
	if err == nil || !strings.Contains(err.Error(), "modprobe igb") {
		t.Fatalf("unbind with igb unloaded: %v", err)
	}
}

func TestBindErrors(t *testing.T) {
	t.Run("bad address", func(t *testing.T) {
		f, s := fakeTree(t)
		if _, err := s.Bind("3:0.0"); !errors.Is(err, ErrBadAddress) {
			t.Fatal(err)
		}
		if len(f.Writes()) != 0 {
			t.Fatal("wrote to sysfs")
		}
	})
	t.Run("absent", func(t *testing.T) {
		f, s := fakeTree(t)
		_, err := s.Bind("0000:05:00.0")
		if !errors.Is(err, ErrNoSuchDevice) || !strings.Contains(err.Error(), "xnic list") {
			t.Fatal(err)
		}
		if len(f.Writes()) != 0 {
			t.Fatal("wrote to sysfs")
		}
	})
	t.Run("no IOMMU group", func(t *testing.T) {
		f, s := fakeTree(t)
		_, err := s.Bind(virtAddr)
		if !errors.Is(err, ErrNoIOMMU) || !strings.Contains(err.Error(), "intel_iommu=on") || !strings.Contains(err.Error(), "amd_iommu=on") || !strings.Contains(err.Error(), "iommu=pt") {
			t.Fatal(err)
		}
		if len(f.Writes()) != 0 || f.Driver(virtAddr) != "virtio-pci" {
			t.Fatal("touched the device")
		}
	})
	t.Run("vfio-pci not loaded", func(t *testing.T) {
		f, s := fakeTree(t)
		os.RemoveAll(filepath.Join(f.Root, "bus/pci/drivers/vfio-pci"))
		_, err := s.Bind(igbAddr)
		if !errors.Is(err, ErrNoVFIO) || !strings.Contains(err.Error(), "modprobe vfio-pci") {
			t.Fatal(err)
		}
		if len(f.Writes()) != 0 || f.Driver(igbAddr) != "igb" {
			t.Fatal("touched the device")
		}
	})
	t.Run("permission", func(t *testing.T) {
		f, s := fakeTree(t)
		f.FailWrite("bus/pci/devices/"+igbAddr+"/driver_override", syscall.EACCES)
		_, err := s.Bind(igbAddr)
		if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), "root") {
			t.Fatal(err)
		}
		if f.Driver(igbAddr) != "igb" {
			t.Fatal("device lost its driver")
		}
	})
	t.Run("does not bind", func(t *testing.T) {
		f, s := fakeTree(t)
		// A kernel that ignores drivers_probe (vfio-pci refuses the device).
		s.Write = func(path string, data []byte) error {
			if strings.HasSuffix(path, "drivers_probe") {
				return nil
			}
			return f.Write(path, data)
		}
		_, err := s.Bind(igbAddr)
		if !errors.Is(err, ErrNotBound) || !strings.Contains(err.Error(), "xnic unbind "+igbAddr) || !strings.Contains(err.Error(), "dmesg") {
			t.Fatal(err)
		}
		// The state survives, so unbind can finish the job.
		s.Write = f.Write
		f.SetDriver(igbAddr, "vfio-pci")
		if now, err := s.Unbind(igbAddr); err != nil || now != "igb" {
			t.Fatalf("recovery: %q %v", now, err)
		}
	})
	t.Run("corrupt state", func(t *testing.T) {
		f, s := fakeTree(t)
		f.SetDriver(igbAddr, "vfio-pci")
		os.MkdirAll(s.StateDir, 0o755)
		os.WriteFile(filepath.Join(s.StateDir, igbAddr+".json"), []byte("{"), 0o644)
		if _, err := s.Unbind(igbAddr); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatal(err)
		}
	})
}

func TestRealWriteAttr(t *testing.T) {
	// Without a Write hook, Sysfs writes the files themselves.
	f, s := fakeTree(t)
	s.Write = nil
	err := s.write(filepath.Join(f.Root, "bus/pci/drivers_probe"), igbAddr)
	if err != nil || f.Read("bus/pci/drivers_probe") != igbAddr {
		t.Fatalf("%v %q", err, f.Read("bus/pci/drivers_probe"))
	}
	if err := s.write(filepath.Join(f.Root, "bus/pci/nope"), "x"); err == nil {
		t.Fatal("write to a missing attribute succeeded (sysfs never creates files)")
	}
}

func TestGroupNotViableMessage(t *testing.T) {
	_, s := fakeTree(t)
	a, _ := ParseAddr("0000:04:00.0")
	err := s.notViable(a, 9)
	if !errors.Is(err, ErrGroupNotViable) {
		t.Fatal(err)
	}
	msg := err.Error()
	for _, want := range []string{
		"IOMMU group 9",
		"0000:04:00.1 (snd_hda_intel): blocks: run `xnic bind 0000:04:00.1` or unbind it",
		"0000:00:1c.0 (pcieport): ok",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "0000:04:00.0 (") {
		t.Errorf("message lists the device itself:\n%s", msg)
	}
	ms, err := s.GroupMembers(9)
	if err != nil || len(ms) != 3 || ms[1].Addr != "0000:04:00.0" || ms[1].Driver != "igb" || ms[1].Harmless() || !ms[0].Harmless() {
		t.Fatalf("%+v %v", ms, err)
	}
	if _, err := s.IOMMUGroup(virtAddr); !errors.Is(err, ErrNoIOMMU) {
		t.Fatal(err)
	}
	if g, err := s.IOMMUGroup(igbAddr); err != nil || g != 7 {
		t.Fatal(g, err)
	}
}
