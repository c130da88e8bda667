package vfio

import (
	"fmt"
	"strconv"
	"strings"
)

// Addr is a PCI address: domain (segment), bus, device and function.
type Addr struct {
	Domain uint32
	Bus    uint8
	Dev    uint8 // 0-31
	Fn     uint8 // 0-7
}

// String is the canonical sysfs form, "0000:03:00.0".
func (a Addr) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Dev, a.Fn)
}

// ParseAddr accepts "DDDD:BB:DD.F" and the short "BB:DD.F" (domain 0), in hex,
// either case. Errors wrap ErrBadAddress.
func ParseAddr(s string) (Addr, error) {
	bad := func(why string) (Addr, error) {
		return Addr{}, fmt.Errorf("%w %q: %s (want DDDD:BB:DD.F such as 0000:03:00.0, or BB:DD.F)", ErrBadAddress, s, why)
	}
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
		if len(dom) < 4 || len(dom) > 8 {
			return bad("domain must have 4 to 8 hex digits")
		}
	default:
		return bad("wrong number of ':'")
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		return bad("missing '.' before the function")
	}
	if len(bus) != 2 || len(dev) != 2 || len(fn) != 1 {
		return bad("bus and device take 2 hex digits, function 1")
	}
	d, err := strconv.ParseUint(dom, 16, 32)
	if err != nil {
		return bad("domain is not hex")
	}
	b, err := strconv.ParseUint(bus, 16, 8)
	if err != nil {
		return bad("bus is not hex")
	}
	dv, err := strconv.ParseUint(dev, 16, 8)
	if err != nil || dv > 31 {
		return bad("device must be 00-1f")
	}
	f, err := strconv.ParseUint(fn, 16, 8)
	if err != nil || f > 7 {
		return bad("function must be 0-7")
	}
	return Addr{Domain: uint32(d), Bus: uint8(b), Dev: uint8(dv), Fn: uint8(f)}, nil
}
