package main

// family names a driver family xnic supports.
type family string

const (
	familyIGB   family = "igb"
	familyDWMAC family = "dwmac"
	familyFEC   family = "fec"
)

// supported reports which xnic driver family, if any, drives a PCI device.
// The igb table comes from the igb driver itself; dwmac (Intel mGbE) is listed so
// `xnic list` can name it.
func supported(vendor, device uint16) (family, bool) {
	if vendor != 0x8086 {
		return "", false
	}
	if igbSupported(vendor, device) {
		return familyIGB, true
	}
	switch device {
	case 0x7aac, 0x7aad, 0x54ac, 0x51ac, 0xa0ac, 0x43ac, 0x43a2,
		0x4b30, 0x4b31, 0x4b32, 0x4ba0, 0x4ba1, 0x4ba2, 0x4bb0, 0x4bb1, 0x4bb2:
		return familyDWMAC, true
	}
	return "", false
}
