package vfio

import (
	"errors"
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Errors returned by this package, always wrapped with the device and what to do.
var (
	// ErrBadAddress: the PCI address is not DDDD:BB:DD.F (or BB:DD.F).
	ErrBadAddress = errors.New("vfio: malformed PCI address")
	// ErrNoSuchDevice: no PCI device has that address.
	ErrNoSuchDevice = errors.New("vfio: no such PCI device")
	// ErrNotBound: the device is not bound to vfio-pci.
	ErrNotBound = errors.New("vfio: device not bound to vfio-pci")
	// ErrNoIOMMU: the device has no IOMMU group, or the kernel offers no type1
	// IOMMU backend.
	ErrNoIOMMU = errors.New("vfio: no IOMMU")
	// ErrNoVFIO: /dev/vfio/vfio or the vfio-pci driver is missing.
	ErrNoVFIO = errors.New("vfio: VFIO not available")
	// ErrGroupNotViable: another device of the IOMMU group is bound to a host
	// driver.
	ErrGroupNotViable = errors.New("vfio: IOMMU group not viable")
	// ErrPermission: the caller may not open a VFIO node or write sysfs.
	ErrPermission = errors.New("vfio: permission denied")
	// ErrBusy: the IOMMU group is already open in another process.
	ErrBusy = errors.New("vfio: IOMMU group busy")
	// ErrDeviceGone: configuration reads return all ones: the device was removed
	// or fell off the bus. It also matches nic.ErrNoDevice.
	ErrDeviceGone = fmt.Errorf("vfio: device gone (configuration space reads all ones): %w", nic.ErrNoDevice)
	// ErrOutOfRange: an access outside a region, or a misaligned one.
	ErrOutOfRange = errors.New("vfio: access out of range")
	// ErrBadInfo: the kernel returned a structure this package cannot parse.
	ErrBadInfo = errors.New("vfio: malformed information from the kernel")
)
