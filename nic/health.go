package nic

// HealthChecker is a Port that can tell whether its device is still there.
// Health reads a register whose value cannot be all ones on a present device
// and returns an error wrapping ErrNoDevice when it is: the device was
// removed, lost its PCIe link or its power (Linux igb's "PCIe link lost").
// The dataplane asks every port periodically and stops the ports that are
// gone, the others running on.
type HealthChecker interface {
	Health() error
}
