package vfio

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/nic"
)

// BAR is one PCI memory BAR as a register window (nic.Regs).
//
// Read32 and Write32 are each exactly one aligned 32-bit access. Where the BAR is
// mmapped (all of it, or the areas a sparse-mmap capability allows) that is an
// atomic load or store on the mapping; elsewhere inside the BAR (such as the page
// holding an MSI-X table) it is a 4-byte pread or pwrite on the device fd, which
// vfio-pci turns into one ioread32/iowrite32.
//
// An access outside the BAR, a misaligned one, or one after Close is not made:
// the read returns 0xFFFFFFFF (what a PCI read of a missing device returns), the
// write is dropped, and the fault is counted and the first one kept (Err). It never
// panics. Register access is lock-free and safe for concurrent use; it must not
// race with Device.Close, which unmaps the BAR.
type BAR struct {
	index int        // BAR number; immutable
	info  RegionInfo // immutable
	fd    int        // device fd for pread/pwrite; immutable
	areas []mapped   // immutable after construction

	closed atomic.Bool
	faults atomic.Uint64
	first  atomic.Pointer[error] // first fault
}

// mapped is one mmapped area of a BAR.
type mapped struct {
	off uint64 // offset in the BAR
	mem []byte // the mapping
}

var _ nic.Regs = (*BAR)(nil)

func newBAR(index int, info RegionInfo, fd int, areas []mapped) *BAR {
	return &BAR{index: index, info: info, fd: fd, areas: areas}
}

// Index is the BAR number.
func (b *BAR) Index() int { return b.index }

// Len is the size of the BAR in bytes.
func (b *BAR) Len() uint64 { return b.info.Size }

// Info is the region information the kernel gave for this BAR.
func (b *BAR) Info() RegionInfo { return b.info }

// MappedBytes is how much of the BAR is reached through mmap (the rest through
// pread/pwrite).
func (b *BAR) MappedBytes() uint64 {
	var n uint64
	for _, a := range b.areas {
		n += uint64(len(a.mem))
	}
	return n
}

// Err returns the first access fault seen, or nil.
func (b *BAR) Err() error {
	if p := b.first.Load(); p != nil {
		return *p
	}
	return nil
}

// Faults is the number of refused accesses.
func (b *BAR) Faults() uint64 { return b.faults.Load() }

func (b *BAR) fault(err error) {
	b.faults.Add(1)
	b.first.CompareAndSwap(nil, &err)
}

// check validates an access of 4 bytes at off.
func (b *BAR) check(op string, off uint32) bool {
	switch {
	case b.closed.Load():
		b.fault(fmt.Errorf("BAR%d %s at %#x: %w", b.index, op, off, nic.ErrClosed))
	case off%4 != 0:
		b.fault(fmt.Errorf("BAR%d %s at %#x: %w: not 4-byte aligned", b.index, op, off, ErrOutOfRange))
	case uint64(off)+4 > b.info.Size:
		b.fault(fmt.Errorf("BAR%d %s at %#x: %w: BAR is %#x bytes", b.index, op, off, ErrOutOfRange, b.info.Size))
	default:
		return true
	}
	return false
}

// Read32 reads the register at byte offset off.
func (b *BAR) Read32(off uint32) uint32 {
	if !b.check("read", off) {
		return 0xFFFFFFFF
	}
	o := uint64(off)
	for i := range b.areas {
		a := &b.areas[i]
		if o >= a.off && o-a.off+4 <= uint64(len(a.mem)) {
			return load32(a.mem, o-a.off)
		}
	}
	var buf [4]byte
	if !b.info.Readable() {
		b.fault(fmt.Errorf("BAR%d read at %#x: %w: region not readable", b.index, off, ErrOutOfRange))
		return 0xFFFFFFFF
	}
	n, err := pread(b.fd, buf[:], int64(b.info.Offset+o))
	if err != nil || n != 4 {
		b.fault(fmt.Errorf("BAR%d read at %#x through the device fd: %d bytes, %v", b.index, off, n, err))
		return 0xFFFFFFFF
	}
	return binary.LittleEndian.Uint32(buf[:])
}

// Write32 writes the register at byte offset off.
func (b *BAR) Write32(off uint32, val uint32) {
	if !b.check("write", off) {
		return
	}
	o := uint64(off)
	for i := range b.areas {
		a := &b.areas[i]
		if o >= a.off && o-a.off+4 <= uint64(len(a.mem)) {
			store32(a.mem, o-a.off, val)
			return
		}
	}
	if !b.info.Writable() {
		b.fault(fmt.Errorf("BAR%d write at %#x: %w: region not writable", b.index, off, ErrOutOfRange))
		return
	}
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], val)
	n, err := pwrite(b.fd, buf[:], int64(b.info.Offset+o))
	if err != nil || n != 4 {
		b.fault(fmt.Errorf("BAR%d write at %#x through the device fd: %d bytes, %v", b.index, off, n, err))
	}
}

// unmap marks the BAR closed and releases its mappings.
func (b *BAR) unmap() error {
	if b.closed.Swap(true) {
		return nil
	}
	var first error
	for _, a := range b.areas {
		if err := munmap(a.mem); err != nil && first == nil {
			first = fmt.Errorf("munmap BAR%d: %w", b.index, err)
		}
	}
	return first
}
