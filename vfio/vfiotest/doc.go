// Package vfiotest builds fake sysfs trees for tests of PCI binding and device
// lookup, with a fake kernel that records every attribute write and reacts to the
// ones that bind and unbind drivers as Linux does (drivers/base/bus.c,
// drivers/pci/pci-driver.c). It needs no privileges and touches only t.TempDir.
package vfiotest
