package bpf

import (
	"unsafe"
)

// Loads and stores of the interpreter's fast path. The fast loop checks that
// the n bytes at pointer a lie inside the region a names (lo <= off,
// off+n <= hi, or whi for stores), exactly as loadSlice and storeSlice do, then
// uses at and the rd/wr functions to access them without Go's second bounds
// check. hi and whi never exceed len(buf) (the region table's invariant, kept by
// every writer of a region), so the access stays inside buf. Unaligned accesses
// are fine on amd64 and arm64, the targets of xnic. The fast loop is too big for
// the compiler to inline a checking helper into, so it spells the check out
// itself; at and rd/wr are small enough to inline anywhere.

// at is the address of byte off of rg's buffer; the caller has checked off
// against the region's bounds.
func at(rg *region, off uint64) *byte {
	return (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(rg.buf)), off))
}

func rd16(p *byte) uint64 { return uint64(*(*uint16)(unsafe.Pointer(p))) }
func rd32(p *byte) uint64 { return uint64(*(*uint32)(unsafe.Pointer(p))) }
func rd64(p *byte) uint64 { return *(*uint64)(unsafe.Pointer(p)) }

func wr16(p *byte, v uint64) { *(*uint16)(unsafe.Pointer(p)) = uint16(v) }
func wr32(p *byte, v uint64) { *(*uint32)(unsafe.Pointer(p)) = uint32(v) }
func wr64(p *byte, v uint64) { *(*uint64)(unsafe.Pointer(p)) = v }
