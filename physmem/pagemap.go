package physmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The pagemap format (Linux Documentation/admin-guide/mm/pagemap.rst): one
// 64-bit entry in the CPU's byte order per base page of virtual memory, at file
// offset (vaddr / base page size) * 8. xnic runs on little-endian machines only
// (arm64, amd64), so entries are decoded little-endian.
//
//	63      62    61       57         56        55       54 .. 0
//	present swap  file/shm exclusive  (0)       soft-dirty PFN (if present, not swapped)
const (
	pagemapEntrySize          = 8
	pagemapPFNMask     uint64 = 1<<55 - 1 // bits 0-54
	pagemapSoftDirty   uint64 = 1 << 55
	pagemapExclusive   uint64 = 1 << 56
	pagemapFileShared  uint64 = 1 << 61
	pagemapSwapped     uint64 = 1 << 62
	pagemapPagePresent uint64 = 1 << 63
)

// Errors of physical address lookups. They are wrapped with context.
var (
	// ErrNoPFN: the kernel hid the page frame number (reads it as 0) because
	// the process lacks CAP_SYS_ADMIN (Linux 4.2 and later).
	ErrNoPFN = errors.New("physmem: /proc/self/pagemap shows PFN 0: reading physical addresses needs CAP_SYS_ADMIN (run as root)")
	// ErrNotPresent: the page is not in memory (not populated, or swapped out).
	ErrNotPresent = errors.New("physmem: page not present in memory")
)

// PagemapEntry is one decoded pagemap entry.
type PagemapEntry struct {
	PFN     uint64 // page frame number; 0 when hidden or not present
	Present bool
	Swapped bool
}

// DecodePagemap decodes one raw 64-bit pagemap entry.
func DecodePagemap(raw uint64) PagemapEntry {
	e := PagemapEntry{Present: raw&pagemapPagePresent != 0, Swapped: raw&pagemapSwapped != 0}
	if e.Present && !e.Swapped {
		e.PFN = raw & pagemapPFNMask
	}
	return e
}

// PhysAddr looks up the physical address of virtual address vaddr in a pagemap
// file (the process's own /proc/self/pagemap, or a fake in tests). basePage is
// the system's base page size (pagemap has one entry per base page, huge pages
// included). It fails with ErrNotPresent for a page not in memory and with
// ErrNoPFN when the kernel hides the frame number.
func PhysAddr(pagemap io.ReaderAt, vaddr uint64, basePage int) (uint64, error) {
	if basePage <= 0 || basePage&(basePage-1) != 0 {
		return 0, fmt.Errorf("physmem: page size %d is not a power of two", basePage)
	}
	var b [pagemapEntrySize]byte
	off := int64(vaddr/uint64(basePage)) * pagemapEntrySize
	n, err := pagemap.ReadAt(b[:], off)
	if n != len(b) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("physmem: reading the pagemap entry of %#x (offset %#x): %w", vaddr, off, err)
	}
	e := DecodePagemap(binary.LittleEndian.Uint64(b[:]))
	switch {
	case !e.Present:
		return 0, fmt.Errorf("physmem: virtual address %#x: %w (populate and lock the memory first)", vaddr, ErrNotPresent)
	case e.Swapped:
		return 0, fmt.Errorf("physmem: virtual address %#x is swapped out: %w", vaddr, ErrNotPresent)
	case e.PFN == 0:
		return 0, fmt.Errorf("physmem: virtual address %#x: %w", vaddr, ErrNoPFN)
	}
	return e.PFN*uint64(basePage) + vaddr%uint64(basePage), nil
}
