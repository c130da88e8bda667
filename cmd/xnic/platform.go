package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
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
)

// platformSpec is a parsed --platform value.
type platformSpec struct {
	Fam        family
	Compatible string
	Phys       uint64
	// UncachedPhys and UncachedSize are the ,uncached=PHYS+SIZE range for
	// the descriptor rings (Size 0: none).
	UncachedPhys uint64
	UncachedSize int
}

// parsePlatform reads NAME@ADDR: NAME is fec, eqos (or dwmac), or a devicetree
// compatible string of the fec or dwmac driver; ADDR the register window's
// physical address ("0x30be0000").
//
// A suffix ,uncached=PHYS+SIZE names reserved RAM for the descriptor rings
// (physmem.Uncached: a reserved-memory node, or RAM above mem=), which the
// EQOS needs and the FEC prefers over its cache-line ring discipline.
func parsePlatform(s string) (platformSpec, error) {
	s, unc, hasUnc := strings.Cut(s, ",uncached=")
	var uphys uint64
	var usize int
	if hasUnc {
		p, n, ok := strings.Cut(unc, "+")
		var e1, e2 error
		uphys, e1 = strconv.ParseUint(p, 0, 64)
		size, e2 := strconv.ParseUint(n, 0, 31)
		if !ok || e1 != nil || e2 != nil || size == 0 {
			return platformSpec{}, usageErrorf("--platform ...,uncached=%s: want PHYS+SIZE, e.g. uncached=0x50000000+0x100000 (reserved RAM for the rings)", unc)
		}
		usize = int(size)
	}
	spec, err := parsePlatformDevice(s)
	spec.UncachedPhys, spec.UncachedSize = uphys, usize
	return spec, err
}

func parsePlatformDevice(s string) (platformSpec, error) {
	name, addr, ok := strings.Cut(s, "@")
	if !ok || name == "" || addr == "" {
		return platformSpec{}, usageErrorf("--platform %q: want NAME@ADDR, e.g. fec@0x30be0000 or eqos@0x30bf0000 (NAME: fec, eqos, or a compatible string such as fsl,imx8mp-fec)", s)
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
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name:       fmt.Sprintf("%x.ethernet", spec.Phys),
		Compatible: spec.Compatible,
		Windows:    []physmem.Window{{Phys: spec.Phys, Size: size}},
		DMA:        dmaAlloc,
		MemPath:    platformMemPath,
	})
	if err != nil {
		dmaAlloc.Close()
		if uid := platformEUID(); uid != 0 && (errors.Is(err, physmem.ErrNoPermission) || errors.Is(err, physmem.ErrDevMemDenied)) {
			err = fmt.Errorf("%w (xnic runs as uid %d; run it as root, e.g. with sudo)", err, uid)
		}
		return nil, nil, fmt.Errorf("%s at %#x: %w", spec.Compatible, spec.Phys, err)
	}
	return dev, func() error {
		err := dev.Close()
		if e := dmaAlloc.Close(); err == nil {
			err = e
		}
		return err
	}, nil
}
