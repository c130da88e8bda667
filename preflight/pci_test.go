package preflight_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xnic-dev/xnic/preflight"
	"github.com/xnic-dev/xnic/vfio"
	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

// config builds a 256-byte config space: Command, Status, and a capability
// list PM (0x01) at 0x40 -> MSI-X (0x11) at 0x50 when msix.
func config(busMaster, msix bool) []byte {
	c := make([]byte, 256)
	c[0], c[1], c[2], c[3] = 0x86, 0x80, 0xc9, 0x10
	if busMaster {
		c[4] = 1 << 2
	}
	c[6] = 1 << 4
	c[0x34] = 0x40
	c[0x40], c[0x41] = 0x01, 0
	if msix {
		c[0x41] = 0x50
		c[0x50], c[0x51] = 0x11, 0
	}
	return c
}

func pciBoard(t *testing.T, driver string, group int, cfg []byte) (*vfiotest.Sysfs, preflight.PCI) {
	f := vfiotest.New(t)
	f.AddDevice(vfiotest.Device{Addr: "0000:03:00.0", Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: driver, Group: group})
	if cfg != nil {
		if err := os.WriteFile(filepath.Join(f.Root, "bus/pci/devices/0000:03:00.0/config"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	return f, preflight.PCI{Sysfs: vfio.Sysfs{Root: f.Root, StateDir: state, Write: f.Write}, Addr: "03:00.0"}
}

func TestPCIReady(t *testing.T) {
	_, p := pciBoard(t, "vfio-pci", 7, config(false, true))
	os.WriteFile(filepath.Join(p.Sysfs.StateDir, "0000:03:00.0.json"), []byte(`{"address":"0000:03:00.0","driver":"igb"}`), 0o644)
	r := p.Inspect()
	if err := r.Err(); err != nil {
		t.Fatalf("ready device refused: %v", err)
	}
	wantStatus(t, r, "iommu", preflight.Pass, "group 7")
	wantStatus(t, r, "group", preflight.Pass, "viable")
	wantStatus(t, r, "vfio-pci", preflight.Pass)
	wantStatus(t, r, "msix", preflight.Pass)
	wantStatus(t, r, "bus-master", preflight.Pass, "off")
	wantStatus(t, r, "previous-driver", preflight.Pass, "igb before")
	p.Driver = func(v, d uint16) (string, bool) { return "igb", v == 0x8086 && d == 0x10c9 }
	wantStatus(t, p.Inspect(), "xnic-driver", preflight.Pass, "igb")
	p.Driver = func(v, d uint16) (string, bool) { return "", false }
	wantStatus(t, p.Inspect(), "xnic-driver", preflight.Fail, "no driver for 8086:10c9")
}

func TestPCIStates(t *testing.T) {
	// Bound to igb, no IOMMU, no MSI-X.
	_, p := pciBoard(t, "igb", -1, config(true, false))
	r := p.Inspect()
	wantStatus(t, r, "iommu", preflight.Fail, "intel_iommu=on")
	wantStatus(t, r, "vfio-pci", preflight.Fail, "xnic bind 0000:03:00.0", `"igb"`)
	wantStatus(t, r, "msix", preflight.Fail)
	wantStatus(t, r, "bus-master", preflight.Pass, "on")
	if _, ok := r.Check("group"); ok {
		t.Error("group checked without an IOMMU group")
	}
	// A group shared with a device a host driver holds.
	f, p := pciBoard(t, "vfio-pci", 3, config(false, true))
	f.AddDevice(vfiotest.Device{Addr: "0000:03:00.1", Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: "igb", Group: 3})
	r = p.Inspect()
	wantStatus(t, r, "group", preflight.Fail, "0000:03:00.1 (igb)")
	wantStatus(t, r, "previous-driver", preflight.Unknown, "not by `xnic bind`")
	// Not root: only the header is readable.
	_, p = pciBoard(t, "vfio-pci", 3, config(false, true)[:64])
	wantStatus(t, p.Inspect(), "msix", preflight.Unknown, "not root")
	// No such device.
	_, p = pciBoard(t, "vfio-pci", 3, nil)
	p.Addr = "0000:09:00.0"
	wantStatus(t, p.Inspect(), "device", preflight.Fail, "xnic list")
}
