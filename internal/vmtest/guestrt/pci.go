package guestrt

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PCIDevices is where sysfs lists PCI devices; drivers_probe is one up.
const PCIDevices = "/sys/bus/pci/devices"

// ReadHex reads a sysfs file holding one hexadecimal number.
func ReadHex(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
}

// FindDevice returns the PCI address of the first device under root (a sysfs
// devices directory) with the given IDs.
func FindDevice(root string, vendor, device uint16) (string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	var seen []string
	for _, e := range ents {
		v, err1 := ReadHex(filepath.Join(root, e.Name(), "vendor"))
		d, err2 := ReadHex(filepath.Join(root, e.Name(), "device"))
		if err1 != nil || err2 != nil {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %04x:%04x", e.Name(), v, d))
		if uint16(v) == vendor && uint16(d) == device {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no PCI device %04x:%04x; devices: %s", vendor, device, strings.Join(seen, ", "))
}

// BindVFIO hands the device to vfio-pci and returns its IOMMU group. root is
// the sysfs devices directory; drivers_probe is in its parent.
func BindVFIO(root, bdf string) (string, error) {
	dev := filepath.Join(root, bdf)
	g, err := os.Readlink(filepath.Join(dev, "iommu_group"))
	if err != nil {
		return "", fmt.Errorf("%s has no IOMMU group (is intel_iommu=on on the kernel command line and QEMU's intel-iommu device present?): %w", bdf, err)
	}
	group := filepath.Base(g)
	if err := os.WriteFile(filepath.Join(dev, "driver_override"), []byte("vfio-pci"), 0); err != nil {
		return group, fmt.Errorf("driver_override: %w", err)
	}
	if drv, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		if filepath.Base(drv) == "vfio-pci" {
			return group, nil
		}
		if err := os.WriteFile(filepath.Join(dev, "driver", "unbind"), []byte(bdf), 0); err != nil {
			return group, fmt.Errorf("unbind from %s: %w", filepath.Base(drv), err)
		}
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(root), "drivers_probe"), []byte(bdf), 0); err != nil {
		return group, fmt.Errorf("drivers_probe: %w", err)
	}
	drv, err := os.Readlink(filepath.Join(dev, "driver"))
	if err != nil || filepath.Base(drv) != "vfio-pci" {
		return group, fmt.Errorf("%s not bound to vfio-pci after drivers_probe (driver %q, %v)", bdf, drv, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/dev/vfio/" + group); err == nil {
			return group, nil
		}
		if time.Now().After(deadline) {
			return group, fmt.Errorf("/dev/vfio/%s did not appear within 5s", group)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
