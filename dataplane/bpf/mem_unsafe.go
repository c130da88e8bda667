package bpf

import (
	"math"
	"unsafe"
)

// Loads and stores of the interpreter's fast path. Each checks that the n
// bytes at pointer a lie inside the region a names (lo <= off, off+n <= hi,
// or whi for stores), exactly as loadSlice and storeSlice do, and then
// accesses them without Go's second bounds check. hi and whi never exceed
// len(buf) (the region table's invariant, kept by every writer of a region),
// so the access stays inside buf. Unaligned accesses are fine on amd64 and
// arm64, the targets of xnic.

func regionAt(regs []region, a, n uint64, write bool) unsafe.Pointer {
	idx := a >> 32
	if idx >= uint64(len(regs)) {
		return nil
	}
	rg := &regs[idx]
	off := a & math.MaxUint32
	end := rg.hi
	if write {
		end = rg.whi
	}
	if off < rg.lo || off+n > end {
		return nil
	}
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(rg.buf)), off)
}

func load8(regs []region, a uint64) (uint64, bool) {
	p := regionAt(regs, a, 1, false)
	if p == nil {
		return 0, false
	}
	return uint64(*(*uint8)(p)), true
}

func load16(regs []region, a uint64) (uint64, bool) {
	p := regionAt(regs, a, 2, false)
	if p == nil {
		return 0, false
	}
	return uint64(*(*uint16)(p)), true
}

func load32(regs []region, a uint64) (uint64, bool) {
	p := regionAt(regs, a, 4, false)
	if p == nil {
		return 0, false
	}
	return uint64(*(*uint32)(p)), true
}

func load64(regs []region, a uint64) (uint64, bool) {
	p := regionAt(regs, a, 8, false)
	if p == nil {
		return 0, false
	}
	return *(*uint64)(p), true
}

func store8(regs []region, a, v uint64) bool {
	p := regionAt(regs, a, 1, true)
	if p == nil {
		return false
	}
	*(*uint8)(p) = uint8(v)
	return true
}

func store16(regs []region, a, v uint64) bool {
	p := regionAt(regs, a, 2, true)
	if p == nil {
		return false
	}
	*(*uint16)(p) = uint16(v)
	return true
}

func store32(regs []region, a, v uint64) bool {
	p := regionAt(regs, a, 4, true)
	if p == nil {
		return false
	}
	*(*uint32)(p) = uint32(v)
	return true
}

func store64(regs []region, a, v uint64) bool {
	p := regionAt(regs, a, 8, true)
	if p == nil {
		return false
	}
	*(*uint64)(p) = v
	return true
}
