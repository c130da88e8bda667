package dwmacsim

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// device is the nic.Device a driver is handed. It wraps the sim.Device base
// (register window 0, DMA memory, interrupt vectors) and gives it the identity
// of the variant: a PCI function for the Intel mGbE (configuration space, bus
// mastering off until enabled), a platform device for the i.MX8MP EQOS (no
// configuration space: ReadConfig/WriteConfig return nic.ErrNotSupported; DMA
// is never gated, as an AXI master on the SoC has no bus-master bit).
type device struct {
	*sim.Device
	info     nic.DeviceInfo // immutable
	platform bool           // immutable
}

func newDevice(base *sim.Device, cfg Config) *device {
	d := &device{Device: base}
	switch cfg.Variant {
	case IMX8MP:
		d.platform = true
		d.info = nic.DeviceInfo{Name: cfg.Name, Bus: "platform", Compatible: "nxp,imx8mp-dwmac-eqos"}
		base.Memory().SetDMAEnabled(true)
	default:
		d.info = nic.DeviceInfo{Name: cfg.Name, Bus: "pci", Vendor: 0x8086, Device: cfg.PCIDevice,
			SubVendor: 0x8086, Revision: 0x11}
	}
	return d
}

// Info implements nic.Device.
func (d *device) Info() nic.DeviceInfo { return d.info }

// ReadConfig implements nic.Device.
func (d *device) ReadConfig(off, size int) (uint32, error) {
	if d.platform {
		return 0, fmt.Errorf("dwmacsim: %s is a platform device with no PCI configuration space (config read at 0x%x): %w", d.info.Name, off, nic.ErrNotSupported)
	}
	return d.Device.ReadConfig(off, size)
}

// WriteConfig implements nic.Device.
func (d *device) WriteConfig(off, size int, val uint32) error {
	if d.platform {
		return fmt.Errorf("dwmacsim: %s is a platform device with no PCI configuration space (config write at 0x%x): %w", d.info.Name, off, nic.ErrNotSupported)
	}
	return d.Device.WriteConfig(off, size, val)
}

// EnableBusMaster implements nic.Device: on a platform device there is nothing
// to enable.
func (d *device) EnableBusMaster() error {
	if d.platform {
		return nil
	}
	return d.Device.EnableBusMaster()
}

var _ nic.Device = (*device)(nil)
