package physmem

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/nic"
)

// Regs is one register window of a platform device, mapped from /dev/mem. It
// implements nic.Regs: each Read32 or Write32 is one aligned 32-bit atomic
// access on the mapping.
//
// An access outside the window, misaligned, or after the Device is closed is not
// made: the read returns 0xFFFFFFFF, the write is dropped, and the fault is
// counted and the first one kept (Err). It never panics. Register access is
// lock-free; it must not race with Device.Close, which unmaps the window.
type Regs struct {
	phys uint64 // physical address of the window; immutable
	size int    // bytes of the window; immutable
	mem  []byte // the page-aligned mapping; immutable
	off  int    // offset of the window in mem; immutable

	closed atomic.Bool
	faults atomic.Uint64
	first  atomic.Pointer[error]
}

var _ nic.Regs = (*Regs)(nil)

// Phys is the physical address of the window.
func (r *Regs) Phys() uint64 { return r.phys }

// Len is the size of the window in bytes.
func (r *Regs) Len() int { return r.size }

// Err returns the first refused access, or nil.
func (r *Regs) Err() error {
	if p := r.first.Load(); p != nil {
		return *p
	}
	return nil
}

// Faults is the number of refused accesses.
func (r *Regs) Faults() uint64 { return r.faults.Load() }

func (r *Regs) check(op string, off uint32) bool {
	var err error
	switch {
	case r.closed.Load():
		err = fmt.Errorf("physmem: register %s at %#x of %#x: %w", op, off, r.phys, nic.ErrClosed)
	case off%4 != 0:
		err = fmt.Errorf("physmem: register %s at %#x of %#x: not 4-byte aligned", op, off, r.phys)
	case uint64(off)+4 > uint64(r.size):
		err = fmt.Errorf("physmem: register %s at %#x of %#x: outside the %#x-byte window", op, off, r.phys, r.size)
	default:
		return true
	}
	r.faults.Add(1)
	r.first.CompareAndSwap(nil, &err)
	return false
}

// Read32 implements nic.Regs.
func (r *Regs) Read32(off uint32) uint32 {
	if !r.check("read", off) {
		return 0xFFFFFFFF
	}
	return load32(r.mem, r.off+int(off))
}

// Write32 implements nic.Regs.
func (r *Regs) Write32(off uint32, val uint32) {
	if !r.check("write", off) {
		return
	}
	store32(r.mem, r.off+int(off), val)
}

func (r *Regs) unmap() error {
	if r.closed.Swap(true) {
		return nil
	}
	return munmap(r.mem)
}
