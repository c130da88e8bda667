package vfio

import (
	"fmt"
)

// Capability chains (include/uapi/linux/vfio.h, struct vfio_info_cap_header): an
// INFO structure whose flags say "caps" carries the offset of its first capability;
// each capability starts with
//
//	 0      2        4               8
//	+------+--------+---------------+----------------
//	| id   | version| next (offset) | id-specific body
//	+------+--------+---------------+----------------
//
// and next is the offset of the following one, or 0 at the end. Offsets count from
// the start of the INFO buffer. The parsers below take that buffer as bytes, never
// trust an offset, and return ErrBadInfo instead of panicking.

// maxCaps bounds a chain walk; real chains have one to three entries.
const maxCaps = 64

// walkCaps calls fn for each capability of the chain starting at first. body is
// the capability from its header to the end of the buffer (or to the next
// capability when that lies further on).
func walkCaps(b []byte, first uint32, fn func(id, version uint16, off int, cap []byte) error) error {
	off := uint64(first)
	for n := 0; off != 0; n++ {
		if n == maxCaps {
			return fmt.Errorf("%w: capability chain longer than %d entries (a loop?)", ErrBadInfo, maxCaps)
		}
		if off < 8 || off+sizeCapHeader > uint64(len(b)) {
			return fmt.Errorf("%w: capability at offset %d outside the %d-byte info buffer", ErrBadInfo, off, len(b))
		}
		id := ne.Uint16(b[off:])
		ver := ne.Uint16(b[off+2:])
		next := uint64(ne.Uint32(b[off+4:]))
		end := uint64(len(b))
		if next != 0 {
			if next <= off {
				return fmt.Errorf("%w: capability at %d points back to %d", ErrBadInfo, off, next)
			}
			end = min(next, end)
		}
		if err := fn(id, ver, int(off), b[off:end]); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// Area is a part of a region that may be mmapped, relative to the region start.
type Area struct {
	Offset uint64
	Size   uint64
}

// RegionInfo is what VFIO_DEVICE_GET_REGION_INFO says of one region.
type RegionInfo struct {
	Index  uint32
	Flags  uint32
	Size   uint64 // bytes; 0 for an unimplemented BAR
	Offset uint64 // where the region starts in the device fd (for pread/pwrite/mmap)
	// Areas are the mmappable parts. Without a sparse-mmap capability a mmappable
	// region is one area covering all of it; a region that cannot be mmapped has
	// none.
	Areas []Area
	// MSIXMappable: the MSI-X table may be mmapped (VFIO_REGION_INFO_CAP_MSIX_MAPPABLE).
	MSIXMappable bool
}

// Readable, Writable and Mappable decode Flags.
func (r RegionInfo) Readable() bool { return r.Flags&regionFlagRead != 0 }
func (r RegionInfo) Writable() bool { return r.Flags&regionFlagWrite != 0 }
func (r RegionInfo) Mappable() bool { return r.Flags&regionFlagMmap != 0 }

func newRegionInfoBuf(index uint32, size int) []byte {
	b := make([]byte, size)
	ne.PutUint32(b[0:], uint32(size))
	ne.PutUint32(b[8:], index)
	return b
}

// parseRegionInfo decodes struct vfio_region_info and its capabilities.
func parseRegionInfo(b []byte) (RegionInfo, error) {
	if len(b) < sizeRegionInfo {
		return RegionInfo{}, fmt.Errorf("%w: vfio_region_info of %d bytes, want %d", ErrBadInfo, len(b), sizeRegionInfo)
	}
	r := RegionInfo{
		Flags:  ne.Uint32(b[4:]),
		Index:  ne.Uint32(b[8:]),
		Size:   ne.Uint64(b[16:]),
		Offset: ne.Uint64(b[24:]),
	}
	sparse := false
	if capOff := ne.Uint32(b[12:]); r.Flags&regionFlagCaps != 0 && capOff != 0 {
		err := walkCaps(b, capOff, func(id, ver uint16, off int, c []byte) error {
			switch id {
			case regionCapSparseMmap:
				areas, err := parseSparseMmap(c, r.Size)
				if err != nil {
					return fmt.Errorf("region %d: %w", r.Index, err)
				}
				r.Areas, sparse = areas, true
			case regionCapMSIXMappable:
				r.MSIXMappable = true
			}
			return nil
		})
		if err != nil {
			return RegionInfo{}, err
		}
	}
	if !sparse && r.Mappable() && r.Size > 0 {
		r.Areas = []Area{{Offset: 0, Size: r.Size}}
	}
	if !r.Mappable() {
		r.Areas = nil
	}
	return r, nil
}

// parseSparseMmap decodes struct vfio_region_info_cap_sparse_mmap:
// header (8), nr_areas u32, reserved u32, then nr_areas x {offset u64, size u64}.
func parseSparseMmap(c []byte, regionSize uint64) ([]Area, error) {
	if len(c) < 16 {
		return nil, fmt.Errorf("%w: sparse mmap capability of %d bytes", ErrBadInfo, len(c))
	}
	n := uint64(ne.Uint32(c[8:]))
	if n > uint64(len(c)-16)/16 {
		return nil, fmt.Errorf("%w: sparse mmap capability claims %d areas in %d bytes", ErrBadInfo, n, len(c))
	}
	areas := make([]Area, 0, n)
	for i := range n {
		a := Area{Offset: ne.Uint64(c[16+16*i:]), Size: ne.Uint64(c[24+16*i:])}
		if a.Size == 0 {
			continue
		}
		if a.Offset > regionSize || a.Size > regionSize-a.Offset {
			return nil, fmt.Errorf("%w: sparse mmap area [%#x, +%#x) outside the %#x-byte region", ErrBadInfo, a.Offset, a.Size, regionSize)
		}
		areas = append(areas, a)
	}
	return areas, nil
}

// IOVARange is a span of device addresses the IOMMU can map, Last inclusive (as
// struct vfio_iova_range's end).
type IOVARange struct {
	Start, Last uint64
}

func (r IOVARange) String() string { return fmt.Sprintf("[%#x-%#x]", r.Start, r.Last) }

// iommuInfo is struct vfio_iommu_type1_info with its IOVA-range capability.
type iommuInfo struct {
	PageSizes uint64      // bitmap of IOMMU page sizes; lowest set bit is the granule
	Ranges    []IOVARange // usable IOVA ranges; nil when the kernel does not say
}

func newIOMMUInfoBuf(size int) []byte {
	b := make([]byte, size)
	ne.PutUint32(b[0:], uint32(size))
	return b
}

// parseIOMMUInfo decodes struct vfio_iommu_type1_info: argsz, flags, iova_pgsizes
// u64, cap_offset u32, pad. The IOVA-range capability body is nr_iovas u32,
// reserved u32, then nr_iovas x {start u64, end u64}.
func parseIOMMUInfo(b []byte) (iommuInfo, error) {
	if len(b) < 16 {
		return iommuInfo{}, fmt.Errorf("%w: vfio_iommu_type1_info of %d bytes", ErrBadInfo, len(b))
	}
	var info iommuInfo
	flags := ne.Uint32(b[4:])
	if flags&iommuInfoFlagPgsizes != 0 {
		info.PageSizes = ne.Uint64(b[8:])
	}
	if flags&iommuInfoFlagCaps == 0 || len(b) < sizeIOMMUInfo {
		return info, nil
	}
	capOff := ne.Uint32(b[16:])
	if capOff == 0 {
		return info, nil
	}
	err := walkCaps(b, capOff, func(id, ver uint16, off int, c []byte) error {
		if id != iommuCapIOVARange {
			return nil
		}
		if len(c) < 16 {
			return fmt.Errorf("%w: IOVA range capability of %d bytes", ErrBadInfo, len(c))
		}
		n := uint64(ne.Uint32(c[8:]))
		if n > uint64(len(c)-16)/16 {
			return fmt.Errorf("%w: IOVA range capability claims %d ranges in %d bytes", ErrBadInfo, n, len(c))
		}
		rs := make([]IOVARange, 0, n)
		for i := range n {
			r := IOVARange{Start: ne.Uint64(c[16+16*i:]), Last: ne.Uint64(c[24+16*i:])}
			if r.Last < r.Start {
				return fmt.Errorf("%w: IOVA range %v ends before it starts", ErrBadInfo, r)
			}
			rs = append(rs, r)
		}
		info.Ranges = rs
		return nil
	})
	if err != nil {
		return iommuInfo{}, err
	}
	return info, nil
}
