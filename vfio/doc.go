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
// Files: uapi.go holds the ioctl numbers and structure layouts, encoded to and from
// byte slices; caps.go parses capability chains; sys_linux.go and ioctl_unsafe.go
// are the only places that make system calls on VFIO file descriptors, and
// regs_unsafe.go the only place that dereferences mapped device memory.
//
// Errors are wrapped sentinels (ErrBadAddress, ErrNoSuchDevice, ErrNotBound,
// ErrNoIOMMU, ErrGroupNotViable, ErrPermission, ErrDeviceGone, ...) whose messages
// say what to do next.
package vfio
