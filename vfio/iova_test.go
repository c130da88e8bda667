package vfio

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

const kib = 1 << 10

func TestIOVAAllocatorRangesAndHoles(t *testing.T) {
	// The x86 shape: everything but the MSI window.
	rs := []IOVARange{{0, 0xFEDFFFFF}, {0xFEF00000, 1<<48 - 1}}
	a, err := NewIOVAAllocator(rs, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	iova, sz, err := a.Alloc(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if iova != 4*kib || sz != 4*kib {
		t.Fatalf("first block at %#x size %#x, want 0x1000 (IOVA 0 is never used) of 0x1000", iova, sz)
	}
	// A block that does not fit below the window goes above it.
	below := uint64(0xFEE00000) - 2*4*kib
	if _, _, err := a.Alloc(below, 0); err != nil {
		t.Fatal(err)
	}
	big, _, err := a.Alloc(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if big < 0xFEF00000 {
		t.Fatalf("1 MiB block at %#x overlaps the hole or the previous block", big)
	}
	if got := a.Top(); got != 1<<48 {
		t.Fatalf("Top = %#x, want 1<<48", got)
	}
}

func TestIOVAAllocatorAlignment(t *testing.T) {
	a, err := NewIOVAAllocator([]IOVARange{{0x1000, 1<<32 - 1}}, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, align := range []uint64{0, 4 * kib, 64 * kib, 2 << 20, 1 << 30} {
		iova, _, err := a.Alloc(8*kib, align)
		if err != nil {
			t.Fatalf("align %#x: %v", align, err)
		}
		if align != 0 && iova%align != 0 {
			t.Errorf("align %#x: got %#x", align, iova)
		}
		if iova%(4*kib) != 0 {
			t.Errorf("align %#x: %#x not on the granule", align, iova)
		}
	}
	if _, _, err := a.Alloc(4*kib, 3*kib); err == nil {
		t.Error("alignment 3 KiB accepted")
	}
	if _, _, err := a.Alloc(0, 0); err == nil {
		t.Error("zero-size allocation accepted")
	}
}

func TestIOVAAllocatorExhaustionAndReuse(t *testing.T) {
	// Room for exactly four pages.
	a, err := NewIOVAAllocator([]IOVARange{{0x10000, 0x13FFF}}, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for range 4 {
		iova, _, err := a.Alloc(4*kib, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, iova)
	}
	if !slices.Equal(got, []uint64{0x10000, 0x11000, 0x12000, 0x13000}) {
		t.Fatalf("blocks %#x", got)
	}
	if _, _, err := a.Alloc(4*kib, 0); !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("fifth page: %v, want ErrNoMemory", err)
	}
	// Free two neighbours: they merge, and an 8 KiB block fits again.
	if err := a.Free(0x11000); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(0x12000); err != nil {
		t.Fatal(err)
	}
	if fr := a.FreeRanges(); len(fr) != 1 || fr[0] != (IOVARange{0x11000, 0x12FFF}) {
		t.Fatalf("free list %v, want one merged range", fr)
	}
	iova, sz, err := a.Alloc(5*kib, 0)
	if err != nil || iova != 0x11000 || sz != 8*kib {
		t.Fatalf("reuse: %#x %#x %v", iova, sz, err)
	}
	if err := a.Free(0x11000); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(0x11000); err == nil {
		t.Fatal("double free accepted")
	}
	if err := a.Free(0x10800); err == nil {
		t.Fatal("free of an address inside a block accepted")
	}
	for _, b := range []uint64{0x10000, 0x13000} {
		if err := a.Free(b); err != nil {
			t.Fatal(err)
		}
	}
	if fr := a.FreeRanges(); len(fr) != 1 || fr[0] != (IOVARange{0x10000, 0x13FFF}) || a.InUse() != 0 {
		t.Fatalf("after freeing everything: %v, %d in use", fr, a.InUse())
	}
}

func TestIOVAAllocatorConstruction(t *testing.T) {
	// Edges are trimmed to the granule; sub-granule ranges vanish; limit clips.
	a, err := NewIOVAAllocator([]IOVARange{{0x1800, 0x5FFF}, {0x9000, 0x9FFE}, {0x20000, 0xFFFFF}}, 4*kib, 0x40000)
	if err != nil {
		t.Fatal(err)
	}
	want := []IOVARange{{0x2000, 0x5FFF}, {0x20000, 0x3FFFF}}
	if got := a.FreeRanges(); !slices.Equal(got, want) {
		t.Fatalf("free ranges %v, want %v", got, want)
	}
	if a.Top() != 0x40000 {
		t.Fatalf("Top %#x", a.Top())
	}
	// Overlapping and unsorted input merges.
	a, err = NewIOVAAllocator([]IOVARange{{0x8000, 0xFFFF}, {0x1000, 0x8FFF}}, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.FreeRanges(); !slices.Equal(got, []IOVARange{{0x1000, 0xFFFF}}) {
		t.Fatalf("merged %v", got)
	}
	// The whole 64-bit space: the top block can be handed out and Top wraps.
	a, err = NewIOVAAllocator([]IOVARange{{0, ^uint64(0)}}, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Top() != 0 {
		t.Fatalf("Top of the full space %#x, want 0 (2^64)", a.Top())
	}
	if _, err := NewIOVAAllocator([]IOVARange{{0x1000, 0x1FFF}}, 3000, 0); err == nil {
		t.Fatal("granule 3000 accepted")
	}
	if _, err := NewIOVAAllocator([]IOVARange{{0x10, 0x7FF}}, 4*kib, 0); !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("no usable range: %v", err)
	}
	if _, err := NewIOVAAllocator([]IOVARange{{0x2000, 0x1000}}, 4*kib, 0); err == nil {
		t.Fatal("inverted range accepted")
	}
}

func TestIOVAAllocatorConcurrent(t *testing.T) {
	a, err := NewIOVAAllocator([]IOVARange{{0x1000, 1<<32 - 1}}, 4*kib, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				iova, _, err := a.Alloc(uint64(4*kib*(1+(g+i)%3)), 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[iova] {
					t.Errorf("IOVA %#x handed out twice", iova)
				}
				seen[iova] = true
				mu.Unlock()
				if i%2 == 0 {
					mu.Lock()
					delete(seen, iova)
					mu.Unlock()
					if err := a.Free(iova); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if a.InUse() != len(seen) {
		t.Fatalf("%d in use, %d expected", a.InUse(), len(seen))
	}
}
