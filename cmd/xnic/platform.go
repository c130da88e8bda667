package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
)

// Platform devices: the MACs of i.MX8 SoCs, which sit behind no IOMMU and are
// reached through physmem (registers from /dev/mem, DMA memory from huge pages
// at physical addresses). --platform NAME@ADDR names one.

// The register windows mapped for each family: the ENET's registers fit in
// 16 KiB (imx6qdl.dtsi gives ethernet@2188000 0x4000; imx8mp.dtsi reserves
// 0x10000 at 30be0000, of which the same 16 KiB hold registers), the EQOS's
// take 64 KiB (imx8mp.dtsi ethernet@30bf0000, reg size 0x10000).
const (
	fecWindow   = 0x4000
	dwmacWindow = 0x10000
)

// platformAliases are the short names --platform takes for the i.MX8M Plus
// MACs; any compatible string fec or dwmac knows works too.
var platformAliases = map[string]string{
	"fec":   "fsl,imx8mp-fec",
	"eqos":  dwmac.CompatibleIMX8MP,
	"dwmac": dwmac.CompatibleIMX8MP,
}

// Test hooks: nil/"" for the real thing.
var (
	// platformMemPath replaces /dev/mem.
	platformMemPath string
	// platformPages replaces the huge page source of the DMA allocator.
	platformPages physmem.PageSource
	// platformEUID replaces os.Geteuid.
	platformEUID = os.Geteuid
)

// platformSpec is a parsed --platform value.
type platformSpec struct {
	Fam        family
	Compatible string
	Phys       uint64
}

// parsePlatform reads NAME@ADDR: NAME is fec, eqos (or dwmac), or a devicetree
// compatible string of the fec or dwmac driver; ADDR the register window's
// physical address ("0x30be0000").
func parsePlatform(s string) (platformSpec, error) {
	name, addr, ok := strings.Cut(s, "@")
	if !ok || name == "" || addr == "" {
		return platformSpec{}, usageErrorf("--platform %q: want NAME@ADDR, e.g. fec@0x30be0000 or eqos@0x30bf0000 (NAME: fec, eqos, or a compatible string such as fsl,imx8mp-fec)", s)
	}
	phys, err := strconv.ParseUint(addr, 0, 64)
	if err != nil || phys == 0 || phys%4 != 0 {
		return platformSpec{}, usageErrorf("--platform %s: %q is not a register window address (want e.g. 0x30be0000)", s, addr)
	}
	compat := name
	if c, ok := platformAliases[name]; ok {
		compat = c
	}
	if _, ok := fec.LookupCompatible(compat); ok {
		return platformSpec{Fam: familyFEC, Compatible: compat, Phys: phys}, nil
	}
	if _, ok := dwmac.LookupCompatible(compat); ok {
		return platformSpec{Fam: familyDWMAC, Compatible: compat, Phys: phys}, nil
	}
	var fecs []string
	for _, v := range fec.Variants() {
		fecs = append(fecs, v.Compatible)
	}
	return platformSpec{}, usageErrorf("--platform %s: %q is no device xnic drives; use fec, eqos, or one of %s, %s",
		s, name, strings.Join(fecs, ", "), dwmac.CompatibleIMX8MP)
}

// openPlatformDevice maps the register window of the device spec names from
// /dev/mem, with a huge page DMA allocator limited to what the MAC reaches
// (32 bits for the FEC, 34 for the EQOS). The allocator is not cache coherent:
// neither MAC is. Close releases both.
func openPlatformDevice(spec platformSpec) (nic.Device, func() error, error) {
	limit, size := uint64(1)<<32, fecWindow
	if spec.Fam == familyDWMAC {
		limit, size = 1<<34, dwmacWindow
	}
	alloc, err := physmem.NewAllocator(physmem.Config{Source: platformPages, Limit: limit})
	if err != nil {
		return nil, nil, fmt.Errorf("DMA memory for %s: %w", spec.Compatible, err)
	}
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name:       fmt.Sprintf("%x.ethernet", spec.Phys),
		Compatible: spec.Compatible,
		Windows:    []physmem.Window{{Phys: spec.Phys, Size: size}},
		DMA:        alloc,
		MemPath:    platformMemPath,
	})
	if err != nil {
		alloc.Close()
		if uid := platformEUID(); uid != 0 && (errors.Is(err, physmem.ErrNoPermission) || errors.Is(err, physmem.ErrDevMemDenied)) {
			err = fmt.Errorf("%w (xnic runs as uid %d; run it as root, e.g. with sudo)", err, uid)
		}
		return nil, nil, fmt.Errorf("%s at %#x: %w", spec.Compatible, spec.Phys, err)
	}
	return dev, func() error {
		err := dev.Close()
		if e := alloc.Close(); err == nil {
			err = e
		}
		return err
	}, nil
}
