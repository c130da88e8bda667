package vfio

import (
	"errors"
	"slices"
	"testing"
)

// regionInfoBytes builds struct vfio_region_info as the kernel would, with
// optional capabilities appended (each given as its bytes after the 8-byte header).
type testCap struct {
	id   uint16
	body []byte
}

func capChain(base []byte, caps []testCap, firstField int) []byte {
	b := slices.Clone(base)
	if len(caps) == 0 {
		return b
	}
	ne.PutUint32(b[firstField:], uint32(len(b)))
	for i, c := range caps {
		off := len(b)
		hdr := make([]byte, 8)
		ne.PutUint16(hdr[0:], c.id)
		ne.PutUint16(hdr[2:], 1)
		if i < len(caps)-1 {
			ne.PutUint32(hdr[4:], uint32(off+8+len(c.body)))
		}
		b = append(b, hdr...)
		b = append(b, c.body...)
	}
	ne.PutUint32(b[0:], uint32(len(b)))
	return b
}

func regionBase(index, flags uint32, size, offset uint64) []byte {
	b := make([]byte, sizeRegionInfo)
	ne.PutUint32(b[0:], sizeRegionInfo)
	ne.PutUint32(b[4:], flags)
	ne.PutUint32(b[8:], index)
	ne.PutUint64(b[16:], size)
	ne.PutUint64(b[24:], offset)
	return b
}

func sparseBody(areas ...Area) []byte {
	b := make([]byte, 8+16*len(areas))
	ne.PutUint32(b[0:], uint32(len(areas)))
	for i, a := range areas {
		ne.PutUint64(b[8+16*i:], a.Offset)
		ne.PutUint64(b[16+16*i:], a.Size)
	}
	return b
}

func TestParseRegionInfoPlain(t *testing.T) {
	// igb BAR0: 128 KiB, read/write/mmap, no caps.
	r, err := parseRegionInfo(regionBase(0, regionFlagRead|regionFlagWrite|regionFlagMmap, 128*kib, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Size != 128*kib || !r.Readable() || !r.Writable() || !r.Mappable() {
		t.Fatalf("%+v", r)
	}
	if !slices.Equal(r.Areas, []Area{{0, 128 * kib}}) {
		t.Fatalf("areas %v, want the whole region", r.Areas)
	}
	// Config space: read/write, no mmap: no areas.
	r, err = parseRegionInfo(regionBase(7, regionFlagRead|regionFlagWrite, 4096, 7<<40))
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != 7<<40 || r.Mappable() || r.Areas != nil {
		t.Fatalf("%+v", r)
	}
}

func TestParseRegionInfoSparse(t *testing.T) {
	// A BAR holding an MSI-X table at 0x2000-0x2FFF: two mmappable areas, and
	// an MSIX_MAPPABLE capability after the sparse one.
	base := regionBase(3, regionFlagRead|regionFlagWrite|regionFlagMmap|regionFlagCaps, 16*kib, 3<<40)
	b := capChain(base, []testCap{
		{regionCapSparseMmap, sparseBody(Area{0, 0x2000}, Area{0x3000, 0x1000})},
		{regionCapMSIXMappable, nil},
	}, 12)
	r, err := parseRegionInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Areas, []Area{{0, 0x2000}, {0x3000, 0x1000}}) || !r.MSIXMappable || r.Index != 3 {
		t.Fatalf("%+v", r)
	}
	// A sparse capability with no areas: nothing may be mmapped.
	r, err = parseRegionInfo(capChain(base, []testCap{{regionCapSparseMmap, sparseBody()}}, 12))
	if err != nil || len(r.Areas) != 0 {
		t.Fatalf("empty sparse cap: %+v, %v", r, err)
	}
}

func TestParseRegionInfoHostile(t *testing.T) {
	base := regionBase(0, regionFlagRead|regionFlagMmap|regionFlagCaps, 16*kib, 0)
	good := capChain(base, []testCap{{regionCapSparseMmap, sparseBody(Area{0, 0x1000})}}, 12)
	cases := map[string][]byte{
		"short":             good[:20],
		"cap past the end":  func() []byte { b := slices.Clone(base); ne.PutUint32(b[12:], 4096); return b }(),
		"cap in the header": func() []byte { b := slices.Clone(base); ne.PutUint32(b[12:], 4); return b }(),
		"area outside":      capChain(base, []testCap{{regionCapSparseMmap, sparseBody(Area{0x3000, 0x2000})}}, 12),
		"too many areas": func() []byte {
			b := slices.Clone(good)
			ne.PutUint32(b[sizeRegionInfo+8:], 1000)
			return b
		}(),
		"loop": func() []byte {
			b := capChain(base, []testCap{{99, make([]byte, 8)}, {98, make([]byte, 8)}}, 12)
			// Point the second capability back at the first.
			ne.PutUint32(b[sizeRegionInfo+16+4:], sizeRegionInfo)
			return b
		}(),
	}
	for name, b := range cases {
		if _, err := parseRegionInfo(b); !errors.Is(err, ErrBadInfo) {
			t.Errorf("%s: %v, want ErrBadInfo", name, err)
		}
	}
}

func iommuInfoBytes(pgsizes uint64, ranges ...IOVARange) []byte {
	b := make([]byte, sizeIOMMUInfo)
	ne.PutUint32(b[0:], sizeIOMMUInfo)
	flags := uint32(iommuInfoFlagPgsizes)
	ne.PutUint64(b[8:], pgsizes)
	if ranges != nil {
		flags |= iommuInfoFlagCaps
		body := make([]byte, 8+16*len(ranges))
		ne.PutUint32(body[0:], uint32(len(ranges)))
		for i, r := range ranges {
			ne.PutUint64(body[8+16*i:], r.Start)
			ne.PutUint64(body[16+16*i:], r.Last)
		}
		// An unrelated capability (migration, id 2) first, then the ranges.
		b = capChain(b, []testCap{{2, make([]byte, 16)}, {iommuCapIOVARange, body}}, 16)
	}
	ne.PutUint32(b[4:], flags)
	return b
}

func TestParseIOMMUInfo(t *testing.T) {
	want := []IOVARange{{0, 0xFEDFFFFF}, {0xFEF00000, 1<<39 - 1}}
	info, err := parseIOMMUInfo(iommuInfoBytes(0x40201000, want...))
	if err != nil {
		t.Fatal(err)
	}
	if info.PageSizes != 0x40201000 || !slices.Equal(info.Ranges, want) {
		t.Fatalf("%+v", info)
	}
	info, err = parseIOMMUInfo(iommuInfoBytes(0x1000))
	if err != nil || info.Ranges != nil {
		t.Fatalf("no caps: %+v %v", info, err)
	}
	bad := iommuInfoBytes(0x1000, IOVARange{0x2000, 0x1000})
	if _, err := parseIOMMUInfo(bad); !errors.Is(err, ErrBadInfo) {
		t.Fatalf("inverted range: %v", err)
	}
	if _, err := parseIOMMUInfo(make([]byte, 8)); !errors.Is(err, ErrBadInfo) {
		t.Fatalf("short: %v", err)
	}
}

func FuzzParseInfo(f *testing.F) {
	base := regionBase(3, regionFlagRead|regionFlagMmap|regionFlagCaps, 16*kib, 0)
	f.Add(capChain(base, []testCap{{regionCapSparseMmap, sparseBody(Area{0, 0x2000})}}, 12))
	f.Add(iommuInfoBytes(0x1000, IOVARange{0x1000, 0xFFFFF}))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Never panic; an error means no result.
		if r, err := parseRegionInfo(b); err == nil {
			for _, a := range r.Areas {
				if a.Offset+a.Size > r.Size || a.Offset+a.Size < a.Offset {
					t.Fatalf("area %+v outside region of %#x", a, r.Size)
				}
			}
		}
		if info, err := parseIOMMUInfo(b); err == nil {
			for _, r := range info.Ranges {
				if r.Last < r.Start {
					t.Fatalf("inverted range %v", r)
				}
			}
		}
	})
}

func TestIoctlNumbers(t *testing.T) {
	// _IO(';', 100 + n) from include/uapi/linux/vfio.h, as the C headers
	// compute them (';' is 0x3b).
	want := map[string]struct {
		got  ioctlReq
		want uintptr
	}{
		"VFIO_GET_API_VERSION":        {reqGetAPIVersion, 0x3b64},
		"VFIO_CHECK_EXTENSION":        {reqCheckExtension, 0x3b65},
		"VFIO_SET_IOMMU":              {reqSetIOMMU, 0x3b66},
		"VFIO_GROUP_GET_STATUS":       {reqGroupGetStatus, 0x3b67},
		"VFIO_GROUP_SET_CONTAINER":    {reqGroupSetContainer, 0x3b68},
		"VFIO_GROUP_UNSET_CONTAINER":  {reqGroupUnsetCont, 0x3b69},
		"VFIO_GROUP_GET_DEVICE_FD":    {reqGroupGetDeviceFD, 0x3b6a},
		"VFIO_DEVICE_GET_INFO":        {reqDeviceGetInfo, 0x3b6b},
		"VFIO_DEVICE_GET_REGION_INFO": {reqDeviceGetRegionInfo, 0x3b6c},
		"VFIO_DEVICE_GET_IRQ_INFO":    {reqDeviceGetIRQInfo, 0x3b6d},
		"VFIO_DEVICE_SET_IRQS":        {reqDeviceSetIRQs, 0x3b6e},
		"VFIO_DEVICE_RESET":           {reqDeviceReset, 0x3b6f},
		"VFIO_IOMMU_GET_INFO":         {reqIOMMUGetInfo, 0x3b70},
		"VFIO_IOMMU_MAP_DMA":          {reqIOMMUMapDMA, 0x3b71},
		"VFIO_IOMMU_UNMAP_DMA":        {reqIOMMUUnmapDMA, 0x3b72},
	}
	for name, w := range want {
		if uintptr(w.got) != w.want {
			t.Errorf("%s = %#x, want %#x", name, uintptr(w.got), w.want)
		}
	}
}

func TestStructLayouts(t *testing.T) {
	b := irqSetBuf(irqSetDataEventfd|irqSetActionTrigger, IRQMSIX, 1, 3, []int32{7, -1, 9})
	if len(b) != 32 || ne.Uint32(b[0:]) != 32 || ne.Uint32(b[4:]) != 0x24 || ne.Uint32(b[8:]) != 2 ||
		ne.Uint32(b[12:]) != 1 || ne.Uint32(b[16:]) != 3 || int32(ne.Uint32(b[24:])) != -1 || ne.Uint32(b[28:]) != 9 {
		t.Fatalf("vfio_irq_set % x", b)
	}
	m := dmaMapBuf(0x7f0000000000, 0x100000, 0x200000)
	if ne.Uint32(m[0:]) != 32 || ne.Uint32(m[4:]) != 3 || ne.Uint64(m[8:]) != 0x7f0000000000 || ne.Uint64(m[16:]) != 0x100000 || ne.Uint64(m[24:]) != 0x200000 {
		t.Fatalf("vfio_iommu_type1_dma_map % x", m)
	}
	u := dmaUnmapBuf(0x100000, 0x200000)
	if ne.Uint32(u[0:]) != 24 || ne.Uint32(u[4:]) != 0 || ne.Uint64(u[8:]) != 0x100000 || ne.Uint64(u[16:]) != 0x200000 {
		t.Fatalf("vfio_iommu_type1_dma_unmap % x", u)
	}
	ii := newIRQInfoBuf(IRQMSI)
	if ne.Uint32(ii[0:]) != 16 || ne.Uint32(ii[8:]) != 1 {
		t.Fatalf("vfio_irq_info % x", ii)
	}
	if got := IRQMSIX.String() + IRQMSI.String() + IRQIntx.String() + IRQIndex(9).String(); got != "MSI-XMSIINTxIRQIndex(9)" {
		t.Fatalf("IRQIndex strings: %s", got)
	}
}
