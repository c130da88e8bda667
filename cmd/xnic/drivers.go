package main

// family names a driver family xnic supports.
type family string

const (
	familyIGB   family = "igb"
	familyDWMAC family = "dwmac"
	familyFEC   family = "fec"
)

// supported reports which xnic driver family, if any, drives a PCI device. Each
// driver's own ID table decides (igb.Lookup, dwmac.Lookup). The fec driver has
// no PCI devices: its MACs are platform devices (--platform).
func supported(vendor, device uint16) (family, bool) {
	switch {
	case igbSupported(vendor, device):
		return familyIGB, true
	case dwmacSupported(vendor, device):
		return familyDWMAC, true
	}
	return "", false
}
