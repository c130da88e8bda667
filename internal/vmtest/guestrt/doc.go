// Package guestrt is what the VM tiers' guest /init programs (guestinit,
// netinit) share: the results channel to the host in guestproto's line
// protocol (Say, OpenResults, Step), the mounts and module loading of an
// initramfs without udev, handing a PCI device to vfio-pci, and running a
// test binary with its output relayed line by line.
package guestrt
