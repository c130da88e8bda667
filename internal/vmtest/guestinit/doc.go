// Command guestinit is /init of the VM tier's initramfs: a static Go binary the
// guest kernel runs as PID 1.
//
// It mounts proc, sys, devtmpfs, tmpfs and hugetlbfs; loads the kernel modules
// listed in guestproto.ConfigPath in order with finit_module (the vfio stack);
// finds the NIC by PCI vendor:device under /sys/bus/pci/devices and binds it to
// vfio-pci through driver_override and drivers_probe; checks through the VFIO
// API that the IOMMU group is viable and the device answers (reporting that as
// the test binary "guestinit"); runs each test binary with the device's address
// in XNIC_VFIO_BDF and XNIC_IGB_BDF; prints everything on the console in the
// line format of package guestproto; and powers the machine off. Whatever
// fails, it still powers off, so QEMU exits and the host sees the console.
package main
