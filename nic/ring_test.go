package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// syncRec records Sync calls on top of a real allocator.
type syncRec struct {
	dma.Allocator
	calls [][2]int // offset, length
}

func (s *syncRec) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	s.calls = append(s.calls, [2]int{off, n})
	s.Allocator.Sync(r, off, n, dir)
}

func TestSyncRing(t *testing.T) {
	mem := sim.NewMemory(sim.MemoryConfig{NonCoherent: true}, nil)
	ring, err := mem.Alloc(8*16, 128)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first, count int
		want         [][2]int
	}{
		{0, 8, [][2]int{{0, 128}}},
		{2, 3, [][2]int{{32, 48}}},
		{6, 2, [][2]int{{96, 32}}},
		{6, 4, [][2]int{{96, 32}, {0, 32}}}, // wraps after descriptor 7
		{7, 8, [][2]int{{112, 16}, {0, 112}}},
	} {
		rec := &syncRec{Allocator: mem}
		nic.SyncRing(rec, ring, 16, 8, tc.first, tc.count, dma.ForDevice)
		if len(rec.calls) != len(tc.want) {
			t.Fatalf("first %d count %d: syncs %v, want %v", tc.first, tc.count, rec.calls, tc.want)
		}
		for i := range tc.want {
			if rec.calls[i] != tc.want[i] {
				t.Fatalf("first %d count %d: syncs %v, want %v", tc.first, tc.count, rec.calls, tc.want)
			}
		}
	}
	if n := mem.Faults().Count(); n != 0 {
		t.Fatalf("%d faults: %v", n, mem.Faults().List())
	}
}

func TestPutBufs(t *testing.T) {
	mem := sim.NewMemory(sim.MemoryConfig{}, nil)
	pa, err := dma.NewPool(mem, 8, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := dma.NewPool(mem, 8, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	get := func(p *dma.Pool) *dma.Buf {
		b := p.Get()
		if b == nil {
			t.Fatal("pool empty")
		}
		return b
	}
	// Runs: a a b a b b, then the pools are whole again.
	bs := []*dma.Buf{get(pa), get(pa), get(pb), get(pa), get(pb), get(pb)}
	if pa.Stats().Free != 5 || pb.Stats().Free != 5 {
		t.Fatalf("before: free %d and %d", pa.Stats().Free, pb.Stats().Free)
	}
	nic.PutBufs(bs)
	if pa.Stats().Free != 8 || pb.Stats().Free != 8 {
		t.Fatalf("after: free %d and %d, want 8 and 8", pa.Stats().Free, pb.Stats().Free)
	}
	for i, b := range bs {
		if b != nil {
			t.Fatalf("bs[%d] not cleared", i)
		}
	}
	bs = make([]*dma.Buf, 2)
	if allocs := testing.AllocsPerRun(100, func() {
		bs[0], bs[1] = pa.Get(), pb.Get()
		nic.PutBufs(bs)
	}); allocs != 0 {
		t.Fatalf("PutBufs allocates %v times per call", allocs)
	}
}
