package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
	"github.com/xnic-dev/xnic/preflight"
)

// Platform devices: the MACs of i.MX8 SoCs, which sit behind no IOMMU and are
// reached through physmem (registers from /dev/mem, DMA memory from huge pages
// at physical addresses). --platform NAME@ADDR names one.

// Test hooks: nil/"" for the real thing.
var (
	// platformMemPath replaces /dev/mem.
	platformMemPath string
	// platformPages replaces the huge page source of the DMA allocator.
	platformPages physmem.PageSource
	// platformEUID replaces os.Geteuid.
	platformEUID = os.Geteuid
	// platformIOMemPath replaces /proc/iomem (the uncached range's check).
	platformIOMemPath string
	// platformRoot replaces "/" for the preflight (a fake board's tree).
	// With platformMemPath set and platformRoot empty, tests map a plain
	// file and the preflight is skipped.
	platformRoot string
	// platformGPIO replaces the GPIO character device; platformSysWrite the
	// sysfs write (a fake board's kernel).
	platformGPIO     preflight.GPIO
	platformSysWrite func(path string, data []byte) error

	// platformDTRoot replaces /proc/device-tree (the MAC's node).
	platformDTRoot string
)

// platformPreflight describes spec's MAC to package preflight.
func platformPreflight(spec platformSpec) preflight.Platform {
	return preflight.Platform{Root: platformRoot, Phys: spec.Phys, Kind: string(spec.Fam),
		UncachedPhys: spec.UncachedPhys, UncachedSize: uint64(spec.UncachedSize),
		GPIO: platformGPIO, Write: platformSysWrite}
}

// runPreflight checks spec's MAC before any of its registers is mapped and
// does the user-space hand-over (package preflight); the Closer gives back
// what it took when the device closes.
func runPreflight(spec platformSpec) (io.Closer, error) {
	if platformMemPath != "" && platformRoot == "" {
		return nil, nil // a test's plain file stands for /dev/mem: no board
	}
	p := platformPreflight(spec)
	if f := familyByName(spec.Fam); f != nil && f.platformGPR != nil {
		w := f.platformGPR
		gpr, err := physmem.OpenDevice(physmem.DeviceConfig{Name: fmt.Sprintf("%x.syscon", w.Phys),
			Windows: []physmem.Window{*w}, MemPath: platformMemPath})
		if err == nil {
			defer gpr.Close()
			if regs, err := gpr.Regs(0); err == nil {
				p.GPR = regs
			}
		}
	}
	h, err := p.Open()
	if err != nil {
		return nil, err
	}
	return h, nil
}

// platformSpec is a parsed --platform value.
type platformSpec struct {
	Fam        family
	Compatible string
	Phys       uint64
	// UncachedPhys and UncachedSize are the ,uncached=PHYS+SIZE range for
	// the descriptor rings (Size 0: none).
	UncachedPhys uint64
	UncachedSize int
	// PHYAddr is the PHY's MDIO address (,phy=N, else the devicetree's
	// phy-handle); -1: the driver's default.
	PHYAddr int
	// MDIOPhys is the register window of the MAC whose MDIO bus the PHY is on
	// (,mdio=ADDR, else the devicetree), when that is another MAC; 0: its own.
	MDIOPhys uint64
}

// parsePlatform reads NAME@ADDR[,OPTION=VALUE...]: NAME is fec, eqos (or
// dwmac), or a devicetree compatible string of the fec or dwmac driver; ADDR
// the register window's physical address ("0x30be0000"). Options:
//
//   - uncached=PHYS+SIZE names reserved RAM (physmem.Uncached: a
//     reserved-memory node with no-map, or RAM above mem=): the EQOS's rings,
//     the FEC's rings by preference, and on 32-bit ARM every DMA buffer;
//   - phy=N is the PHY's MDIO address;
//   - mdio=ADDR is the register window of the MAC whose MDIO bus the PHY is on
//     (i.MX6UL EVK: ENET2's, 0x20b4000, for both MACs).
//
// Where the kernel exports a devicetree (/proc/device-tree), the MAC's node
// fills what the options leave open: a short NAME takes the node's
// compatible (fec@0x2188000 on an i.MX6UL is the i.MX6UL's ENET), the PHY
// address and bus owner come from its phy-handle. Without one, a short name
// means the i.MX8M Plus part and the PHY is at the driver's default address.
func parsePlatform(s string) (platformSpec, error) {
	// Options follow the address (a compatible string has commas itself).
	dev, opts := s, ""
	if at := strings.LastIndex(s, "@"); at >= 0 {
		if c := strings.Index(s[at:], ","); c >= 0 {
			dev, opts = s[:at+c], s[at+c+1:]
		}
	}
	spec, err := parsePlatformDevice(dev)
	if err != nil {
		return spec, err
	}
	spec.PHYAddr = -1
	for _, o := range strings.Split(opts, ",") {
		if opts == "" {
			break
		}
		if err := spec.option(o); err != nil {
			return platformSpec{}, err
		}
	}
	name, _, _ := strings.Cut(dev, "@")
	if err := spec.fromDevicetree(name); err != nil {
		return platformSpec{}, err
	}
	return spec, nil
}

// option applies one OPTION=VALUE of --platform.
func (spec *platformSpec) option(o string) error {
	k, v, _ := strings.Cut(o, "=")
	switch k {
	case "uncached":
		p, n, ok := strings.Cut(v, "+")
		uphys, e1 := strconv.ParseUint(p, 0, 64)
		size, e2 := strconv.ParseUint(n, 0, 31)
		if !ok || e1 != nil || e2 != nil || size == 0 {
			return usageErrorf("--platform ...,uncached=%s: want PHYS+SIZE, e.g. uncached=0x50000000+0x100000 (reserved RAM for the rings)", v)
		}
		spec.UncachedPhys, spec.UncachedSize = uphys, int(size)
	case "phy":
		a, err := strconv.ParseUint(v, 0, 8)
		if err != nil || a > 31 {
			return usageErrorf("--platform ...,phy=%s: want the PHY's MDIO address, 0 to 31", v)
		}
		spec.PHYAddr = int(a)
	case "mdio":
		a, err := strconv.ParseUint(v, 0, 64)
		if err != nil || a == 0 || a%4 != 0 {
			return usageErrorf("--platform ...,mdio=%s: want the register window address of the MAC driving the MDIO bus, e.g. mdio=0x20b4000", v)
		}
		spec.MDIOPhys = a
	default:
		return usageErrorf("--platform option %q: want uncached=PHYS+SIZE, phy=N or mdio=ADDR", o)
	}
	return nil
}

// fromDevicetree fills the compatible (when name is a family alias such as
// "fec"), the PHY address and the MDIO bus owner from the MAC's devicetree
// node, where the options left them open. No devicetree, or no node at the
// address: nothing changes.
func (spec *platformSpec) fromDevicetree(name string) error {
	node, err := physmem.ReadMACNode(platformDTRoot, spec.Phys)
	if err != nil {
		return nil //nolint:nilerr // no devicetree here (or no node): the spec stands as given
	}
	f := familyByName(spec.Fam)
	if _, alias := f.aliases[name]; alias {
		for _, c := range node.Compatible {
			if f.knowsCompatible(c) {
				spec.Compatible = c
				break
			}
		}
	}
	if spec.PHYAddr < 0 {
		spec.PHYAddr = node.PHYAddr
	}
	if spec.MDIOPhys == 0 && node.MDIOPhys != spec.Phys {
		spec.MDIOPhys = node.MDIOPhys
	}
	return nil
}

func parsePlatformDevice(s string) (platformSpec, error) {
	name, addr, ok := strings.Cut(s, "@")
	if !ok || name == "" || addr == "" {
		return platformSpec{}, usageErrorf("--platform %q: want NAME@ADDR, e.g. %s (NAME: a short name or a devicetree compatible string; see xnic help)", s, platformExamples())
	}
	phys, err := strconv.ParseUint(addr, 0, 64)
	if err != nil || phys == 0 || phys%4 != 0 {
		return platformSpec{}, usageErrorf("--platform %s: %q is not a register window address (want e.g. 0x30be0000)", s, addr)
	}
	if f, compat, ok := platformFamily(name); ok {
		return platformSpec{Fam: f.name, Compatible: compat, Phys: phys}, nil
	}
	aliases, compats := platformNames()
	return platformSpec{}, usageErrorf("--platform %s: %q is no device xnic drives; use %s, or one of %s",
		s, name, strings.Join(aliases, ", "), strings.Join(compats, ", "))
}

// openPlatformDevice maps the register window of the device spec names from
// /dev/mem, with a huge page DMA allocator limited to what the MAC reaches
// (familyDriver.dmaLimit). The allocator is not cache coherent: no i.MX8 MAC
// is. Close releases both.
func openPlatformDevice(spec platformSpec) (nic.Device, func() error, error) {
	f := familyByName(spec.Fam)
	if f == nil || f.knowsCompatible == nil {
		return nil, nil, fmt.Errorf("%s: the %s driver has no platform devices: %w", spec.Compatible, spec.Fam, nic.ErrNotSupported)
	}
	limit, size := f.dmaLimit, f.window
	if !physmem.CacheMaintenance() && spec.UncachedSize > 0 {
		// 32-bit ARM: no cache maintenance from user space, so the reserved
		// range holds the buffers too (no huge pages needed).
		u, err := physmem.OpenUncached(physmem.UncachedConfig{Phys: spec.UncachedPhys, Size: spec.UncachedSize, Limit: limit,
			MemPath: platformMemPath, IOMemPath: platformIOMemPath})
		if err != nil {
			return nil, nil, fmt.Errorf("uncached DMA memory for %s: %w", spec.Compatible, err)
		}
		return openPlatformWith(spec, size, u)
	}
	// Elsewhere NewAllocator refuses cached memory a CPU cannot maintain,
	// saying what to reserve.
	alloc, err := physmem.NewAllocator(physmem.Config{Source: platformPages, Limit: limit})
	if err != nil {
		return nil, nil, fmt.Errorf("DMA memory for %s: %w", spec.Compatible, err)
	}
	var dmaAlloc interface {
		dma.Allocator
		Close() error
	} = alloc
	if spec.UncachedSize > 0 {
		u, err := physmem.OpenUncached(physmem.UncachedConfig{Phys: spec.UncachedPhys, Size: spec.UncachedSize, Limit: limit,
			MemPath: platformMemPath, IOMemPath: platformIOMemPath})
		if err != nil {
			alloc.Close()
			return nil, nil, fmt.Errorf("uncached ring memory for %s: %w", spec.Compatible, err)
		}
		w, err := physmem.NewWithUncached(alloc, u)
		if err != nil {
			u.Close()
			alloc.Close()
			return nil, nil, fmt.Errorf("uncached ring memory for %s: %w", spec.Compatible, err)
		}
		dmaAlloc = w
	}
	return openPlatformWith(spec, size, dmaAlloc)
}

// openPlatformWith maps the register window (size bytes) of spec's device with
// dmaAlloc as its DMA allocator; it closes dmaAlloc when that fails.
func openPlatformWith(spec platformSpec, size int, dmaAlloc interface {
	dma.Allocator
	Close() error
}) (nic.Device, func() error, error) {
	wins := []physmem.Window{{Phys: spec.Phys, Size: size}}
	if spec.MDIOPhys != 0 && spec.MDIOPhys != spec.Phys {
		wins = append(wins, physmem.Window{Phys: spec.MDIOPhys, Size: size}) // the MDIO bus owner: window 1
	}
	var held io.Closer
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name:       fmt.Sprintf("%x.ethernet", spec.Phys),
		Compatible: spec.Compatible,
		Windows:    wins,
		DMA:        dmaAlloc,
		MemPath:    platformMemPath,
		Preflight: func() (io.Closer, error) {
			h, err := runPreflight(spec)
			held = h
			return h, err
		},
	})
	if err != nil {
		dmaAlloc.Close()
		if uid := platformEUID(); uid != 0 && (errors.Is(err, physmem.ErrNoPermission) || errors.Is(err, physmem.ErrDevMemDenied)) {
			err = fmt.Errorf("%w (xnic runs as uid %d; run it as root, e.g. with sudo)", err, uid)
		}
		return nil, nil, fmt.Errorf("%s at %#x: %w", spec.Compatible, spec.Phys, err)
	}
	var ndev nic.Device = dev
	if c, ok := held.(socClocks); ok {
		ndev = clockedDevice{dev, c}
	}
	return ndev, func() error {
		err := dev.Close()
		if e := dmaAlloc.Close(); err == nil {
			err = e
		}
		return err
	}, nil
}

// socClocks is what the preflight's hand-over (preflight.Held) can tell a
// driver about the SoC around a platform MAC: the node's phy-mode and its
// clocks' rates, set where the kernel lets user space (the i.MX8M Plus
// EQOS's TX clock follows the link speed on RGMII). A driver finds it by a
// type assertion on its Device.
type socClocks interface {
	PHYMode() string
	ClockRate(con string) (name string, hz uint64, settable bool, err error)
	SetClockRate(con string, hz uint64) error
}

// clockedDevice is a platform device that also answers for its clocks.
type clockedDevice struct {
	*physmem.Device
	socClocks
}
