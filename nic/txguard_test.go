package nic

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// window is an allocator whose device maps only [lo, hi).
type window struct {
	next, lo, hi uint64
	checks       int
}

func (w *window) Alloc(size, align int) (*dma.Region, error) {
	r := &dma.Region{CPU: make([]byte, size), IOVA: w.next}
	w.next += uint64(size+4095) &^ 4095
	return r, nil
}
func (w *window) Free(*dma.Region) error                  { return nil }
func (w *window) Sync(*dma.Region, int, int, dma.SyncDir) {}
func (w *window) Limit() uint64                           { return 0 }
func (w *window) NonCoherent() bool                       { return false }
func (w *window) Check(iova uint64, n int) error {
	w.checks++
	if iova < w.lo || iova+uint64(n) > w.hi {
		return errors.New("not mapped")
	}
	return nil
}

func TestTxGuard(t *testing.T) {
	w := &window{next: 0x10000, lo: 0x10000, hi: 0x200000}
	in, err := dma.NewPool(w, 8, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	w.next = 0x400000 // a pool outside the mapped window
	out, err := dma.NewPool(w, 8, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	g := NewTxGuard(w, 14, 1514, func(iova uint64, n int) error {
		if iova+uint64(n) > 0x100000 {
			return errors.New("beyond the device's address width")
		}
		return nil
	})
	b := in.Get()
	b.Len = 60
	if tp, ok := g.OK(b); !ok || tp == nil || tp.Pool != in || !tp.Coherent {
		t.Fatalf("a buffer of a mapped, reachable pool: %+v %v", tp, ok)
	}
	checks := w.checks
	if _, ok := g.OK(b); !ok || w.checks != checks {
		t.Fatalf("a trusted pool's buffer checked again (%d checks)", w.checks-checks)
	}
	o := out.Get()
	o.Len = 60
	if _, ok := g.OK(o); ok || g.RefusedDMA.Load() != 1 {
		t.Fatalf("a buffer outside the mapping: ok %v, refused %d", ok, g.RefusedDMA.Load())
	}
	for _, l := range []int{0, 13, 1515} {
		b.Len = l
		if _, ok := g.OK(b); ok {
			t.Fatalf("length %d accepted", l)
		}
	}
	b.Len, b.Off = 60, len(b.Mem)-10
	if _, ok := g.OK(b); ok || g.RefusedLen.Load() != 4 {
		t.Fatalf("a frame past its slot: ok %v, refused %d", ok, g.RefusedLen.Load())
	}
	// A buffer with no pool, inside the mapping but beyond the reach.
	lone := &dma.Buf{Mem: make([]byte, 2048), IOVA: 0x180000, Len: 60}
	if _, ok := g.OK(lone); ok {
		t.Fatal("a buffer beyond the device's reach accepted")
	}
	b.Off = dma.Headroom
	if n := testing.AllocsPerRun(100, func() { g.OK(b) }); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
