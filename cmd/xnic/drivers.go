package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
)

// family names a driver family xnic supports.
type family string

// familyDriver is everything the CLI knows of one driver family. Each family's
// file (igb.go, dwmac.go, fec.go) defines one and adds it to families in init;
// nothing else in the CLI names a family, so adding one touches one file.
type familyDriver struct {
	name  family
	order int // families are listed by it (help, errors, --sim choices)
	// about says what the family drives, for help ("Intel 82576, ... on
	// PCI").
	about string

	// claimsPCI reports whether the driver drives a PCI device (its own ID
	// table decides); nil for a family with no PCI devices.
	claimsPCI func(vendor, device uint16) bool

	// Platform devices (nil knowsCompatible: none): the compatible strings
	// the driver takes its variant from, short names for some, the size of
	// the register window mapped from /dev/mem, and the exclusive upper bound
	// of the physical addresses the MAC's DMA reaches.
	knowsCompatible func(compatible string) bool
	compatibles     func() []string
	aliases         map[string]string
	window          int
	dmaLimit        uint64
	// platformExample is a --platform value for help ("NAME@ADDR" of a
	// board the family is found on).
	platformExample string
	// platformGPR is the SoC glue register page the hand-over writes the
	// MAC's interface mode into (preflight.Platform.GPR), nil when none.
	platformGPR *physmem.Window

	// simVariants are the model's variants, the default first; newSim builds
	// one.
	simVariants []string
	newSim      func(variant string, o portOptions) (simModel, error)
	// pciSimVariants are the variants whose model is a PCI device (xnic
	// serve serves those).
	pciSimVariants []string

	// open brings up the driver on dev; dumpRegs decodes a register window
	// without touching the device's state.
	open     func(dev nic.Device, o portOptions) (familyPort, error)
	dumpRegs func(regs nic.Regs, queues int) regDump

	// Bring-up tooling. facts are the driver's register facts (xnic reg
	// refuses writes to read-only registers; xnic selftest's pattern and
	// loopback registers); moderation the per-queue RX interrupt interval
	// (xnic coalesce), or nil and noModeration saying why the family has
	// none.
	facts        nic.RegFacts
	moderation   *interruptModeration
	noModeration string
}

// interruptModeration is a family's per-queue RX interrupt interval: queue
// q's register is fmt.Sprintf(reg, q) in the dump; usecs reads the interval
// a register value sets and with sets it (0: off), within maxUsecs.
type interruptModeration struct {
	reg      string
	maxUsecs int
	usecs    func(v uint32) int
	with     func(v uint32, usecs int) uint32
	// forPort, when set, is the moderation of one port, read from its dump:
	// for a family whose conversion depends on the port (its clock) or
	// whose interval only a mode chosen at open lets software set (dwmac).
	forPort func(d *nic.RegDump) *interruptModeration
	// refuse, when set, says why this port cannot take an interval of
	// usecs ("" when it can).
	refuse func(usecs int) string
}

// fieldModeration is a moderation whose interval is a register field in
// microseconds (igb's EITR).
func fieldModeration(reg string, mask uint32, shift uint) *interruptModeration {
	return &interruptModeration{reg: reg, maxUsecs: int(mask >> shift),
		usecs: func(v uint32) int { return int(v & mask >> shift) },
		with:  func(v uint32, usecs int) uint32 { return v&^mask | uint32(usecs)<<shift&mask }}
}

// max is the longest interval the register holds.
func (m *interruptModeration) max() int { return m.maxUsecs }

// familyPort is a driver's port with what the CLI shows of it beyond
// nic.Port.
type familyPort interface {
	nic.Port
	// Dump reads and decodes the port's registers.
	Dump() regDump
	// Describe fills in the family's own part of info: model, variant, PHY
	// ID, queue limit, warnings.
	Describe(info *portInfo)
}

// regDump is a driver's named, decoded register dump (igb.Dump, dwmac.Dump,
// fec.Dump): String renders it one register per line, and it encodes as JSON.
type regDump interface{ String() string }

// families lists the driver families in the order help and errors name them.
var families []*familyDriver

func registerFamily(f *familyDriver) {
	families = append(families, f)
	slices.SortFunc(families, func(a, b *familyDriver) int { return a.order - b.order })
}

// familyByName is the family called name, or nil.
func familyByName(name family) *familyDriver {
	for _, f := range families {
		if f.name == name {
			return f
		}
	}
	return nil
}

// supported reports which xnic driver family, if any, drives a PCI device.
func supported(vendor, device uint16) (family, bool) {
	for _, f := range families {
		if f.claimsPCI != nil && f.claimsPCI(vendor, device) {
			return f.name, true
		}
	}
	return "", false
}

// platformFamily is the family whose driver knows the compatible string (or
// the short name) name, with the compatible string it stands for.
func platformFamily(name string) (*familyDriver, string, bool) {
	for _, f := range families {
		if f.knowsCompatible == nil {
			continue
		}
		compat := name
		if c, ok := f.aliases[name]; ok {
			compat = c
		}
		if f.knowsCompatible(compat) {
			return f, compat, true
		}
	}
	return nil, "", false
}

// platformNames lists the short names and compatible strings --platform takes.
func platformNames() (aliases, compatibles []string) {
	for _, f := range families {
		for a := range f.aliases {
			aliases = append(aliases, a)
		}
		if f.compatibles != nil {
			compatibles = append(compatibles, f.compatibles()...)
		}
	}
	slices.Sort(aliases)
	return aliases, compatibles
}

// openDriver opens a port on dev with the driver of family fam.
func openDriver(dev nic.Device, fam family, o portOptions) (*openedPort, error) {
	f := familyByName(fam)
	if f == nil {
		return nil, fmt.Errorf("%s: no %q driver in xnic: %w", dev.Info().Name, fam, nic.ErrNotSupported)
	}
	if err := f.checkModeration(o.RxUsecs); err != nil {
		return nil, err
	}
	if o.RxUsecs > 0 {
		o.Interrupts = true // moderation is of interrupts: set them up
	}
	p, err := f.open(dev, o)
	if err != nil {
		return nil, err
	}
	return &openedPort{Port: p, Family: fam, Device: dev, driver: p}, nil
}

// dumpRegs decodes register window regs with family fam's dump, for queues
// queues. None of the dumps reads a register whose read has a side effect.
func dumpRegs(fam family, regs nic.Regs, queues int) (regDump, error) {
	if f := familyByName(fam); f != nil && f.dumpRegs != nil {
		return f.dumpRegs(regs, queues), nil
	}
	return nil, fmt.Errorf("no register dump for family %q: %w", fam, nic.ErrNotSupported)
}

// pciFamilies names the families that have PCI devices, for messages.
func pciFamilies() string {
	var names []string
	for _, f := range families {
		if f.claimsPCI != nil {
			names = append(names, string(f.name))
		}
	}
	return strings.Join(names, " and ")
}

// checkModeration refuses an RX interrupt interval the family cannot set.
func (f *familyDriver) checkModeration(usecs int) error {
	switch {
	case usecs == 0:
		return nil
	case f.moderation == nil && f.noModeration != "":
		return usageErrorf("--rx-usecs %d: %s", usecs, f.noModeration)
	case f.moderation == nil:
		return usageErrorf("--rx-usecs %d: no interrupt moderation known for the %s family", usecs, f.name)
	case usecs > f.moderation.max():
		return usageErrorf("--rx-usecs %d: the %s family's interval holds at most %d", usecs, f.name, f.moderation.max())
	}
	return nil
}

// pciSimChoices lists the models that are PCI devices, for serve's help:
// "KIND (VARIANT, ...)" per family.
func pciSimChoices() string {
	var out []string
	for _, f := range families {
		switch {
		case len(f.pciSimVariants) == 0:
		case slices.Equal(f.pciSimVariants, f.simVariants):
			out = append(out, fmt.Sprintf("%s (%s)", f.name, strings.Join(f.pciSimVariants, ", ")))
		default:
			for _, v := range f.pciSimVariants {
				out = append(out, string(f.name)+":"+v)
			}
		}
	}
	return strings.Join(out, " or ")
}

// familyNames lists the families f is true of, for help: "a, b and c".
func familyNames(f func(*familyDriver) bool) string {
	var names []string
	for _, fd := range families {
		if f(fd) {
			names = append(names, string(fd.name))
		}
	}
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// simExamples are --sim values for help: the first family alone (with n
// ports when n > 1), the others with a variant other than their default.
func simExamples(n int) string {
	var ex []string
	for i, f := range families {
		switch {
		case i == 0 && n > 1:
			ex = append(ex, fmt.Sprintf("%s:%d", f.name, n))
		case i == 0 || len(f.simVariants) < 2:
			ex = append(ex, string(f.name))
		default:
			ex = append(ex, string(f.name)+":"+f.simVariants[1])
		}
	}
	return strings.Join(ex, ", ")
}

// platformExamples are --platform values for help.
func platformExamples() string {
	var ex []string
	for _, f := range families {
		if f.platformExample != "" {
			ex = append(ex, f.platformExample)
		}
	}
	if len(ex) == 0 {
		return "NAME@ADDR"
	}
	return strings.Join(ex, ", ")
}

// platformHelp describes --platform.
func platformHelp(repeatable bool) string {
	s := "a platform device (an SoC's MAC) through /dev/mem: " + platformExamples() + " or COMPATIBLE@ADDR, then " +
		",uncached=PHYS+SIZE (reserved RAM; required on 32-bit ARM), ,phy=N, ,mdio=ADDR (default: the devicetree's phy-handle)"
	if repeatable {
		return s + " (repeatable; root)"
	}
	return s + " (root)"
}

// rxUsecsHelp describes --rx-usecs.
func rxUsecsHelp() string {
	return "RX interrupt moderation at open, microseconds (like ethtool -C rx-usecs; " +
		familyNames(func(f *familyDriver) bool { return f.moderation != nil }) + ")"
}
