// Package vfio gives a user-space driver a PCI device through Linux VFIO: the
// type1 container/group/device sequence, BARs mapped into the process and read and
// written as nic.Regs, PCI configuration space, interrupts delivered on eventfds,
// device reset, and DMA memory pinned and mapped into the device's IOMMU domain at
// addresses (IOVAs) this package chooses. A *Device implements nic.Device.
//
// It also binds and unbinds devices through sysfs (Sysfs.Bind, Sysfs.Unbind) and
// lists the system's network controllers with their drivers and IOMMU groups
// (Sysfs.ListNetDevices). The sysfs root is a parameter so that tests run against a
// fake tree.
//
// Where the kernel facts come from: include/uapi/linux/vfio.h (ioctl numbers,
// structures, capability chains), drivers/vfio/{group.c,vfio_iommu_type1.c} and
// drivers/vfio/pci/vfio_pci_core.c (behaviour), Documentation/driver-api/vfio.rst
// (the open sequence), and the PCI Local Bus specification for configuration space.
//
// Files: device.go opens a device (Open) and serves configuration space, BARs
// and reset; irqset.go and irq.go set up interrupts on eventfds (EnableMSIX falls
// back from MSI-X to MSI to INTx); dma_type1.go is the dma.Allocator (pinned
// memory mapped with VFIO_IOMMU_MAP_DMA) and iova.go the pure IOVA allocator it
// uses; sysfs.go binds, unbinds and lists devices. uapi.go holds the ioctl numbers
// and structure layouts, encoded to and from byte slices, and caps.go parses
// capability chains. sys_linux.go and ioctl_unsafe.go are the only places that
// make system calls on VFIO file descriptors, and regs_unsafe.go the only place
// that dereferences mapped device memory.
//
// Ownership: a Device owns its container, group and device fds, its BAR
// mappings, its eventfds and every DMA region; Close releases all of them, in the
// reverse order of Open. Register access is lock-free; everything else takes the
// Device's mutex. Close must not race with register access or IRQ waits.
//
// Tests: the unit tests run anywhere (fake sysfs with a fake kernel from package
// vfiotest, a regular file standing in for the device fd, a fake IOMMU for the
// DMA allocator). The TestReal* tests run against a real device when
// XNIC_VFIO_BDF names one bound to vfio-pci, as the VM tier (internal/vmtest)
// does inside a QEMU guest with intel-iommu and QEMU's igb; otherwise they skip.
//
// Errors are wrapped sentinels (ErrBadAddress, ErrNoSuchDevice, ErrNotBound,
// ErrNoIOMMU, ErrGroupNotViable, ErrPermission, ErrDeviceGone, ...) whose messages
// say what to do next.
package vfio
