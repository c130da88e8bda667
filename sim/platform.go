package sim

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// PlatformDevice presents a Device base as a platform (devicetree) device, as
// physmem maps one: Info has Bus "platform" and the devicetree compatible
// string and no PCI IDs; there is no PCI configuration space (ReadConfig and
// WriteConfig return nic.ErrNotSupported); and DMA is always on, as an AXI
// master on a SoC has no bus-master bit (EnableBusMaster does nothing). The
// rest (register window 0, DMA memory, interrupt lines, Reset, Close) is the
// base's. Safe for concurrent use.
type PlatformDevice struct {
	*Device
	compatible string // immutable
}

// NewPlatformDevice wraps base, which from now on has DMA on.
func NewPlatformDevice(base *Device, compatible string) *PlatformDevice {
	base.Memory().SetDMAEnabled(true)
	return &PlatformDevice{Device: base, compatible: compatible}
}

// Info implements nic.Device.
func (d *PlatformDevice) Info() nic.DeviceInfo {
	return nic.DeviceInfo{Name: d.cfg.Name, Bus: "platform", Compatible: d.compatible}
}

// ReadConfig implements nic.Device: a platform device has no configuration space.
func (d *PlatformDevice) ReadConfig(off, size int) (uint32, error) {
	return 0, fmt.Errorf("sim: %s is a platform device with no PCI configuration space (config read at 0x%x): %w", d.cfg.Name, off, nic.ErrNotSupported)
}

// WriteConfig implements nic.Device: a platform device has no configuration space.
func (d *PlatformDevice) WriteConfig(off, size int, val uint32) error {
	return fmt.Errorf("sim: %s is a platform device with no PCI configuration space (config write at 0x%x): %w", d.cfg.Name, off, nic.ErrNotSupported)
}

// EnableBusMaster implements nic.Device: DMA is always on, so there is nothing
// to enable; after Close it reports nic.ErrClosed.
func (d *PlatformDevice) EnableBusMaster() error {
	if d.closed.Load() {
		return fmt.Errorf("sim: %s: enable bus master: %w", d.cfg.Name, nic.ErrClosed)
	}
	return nil
}

var _ nic.Device = (*PlatformDevice)(nil)
