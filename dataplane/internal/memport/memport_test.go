package memport

import (
	"bytes"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// TestInjectBurst: a burst lands on the ring in order as single injections
// would, what the ring cannot hold is dropped and counted (the buffers go
// back to the pool), and an empty pool stops the burst.
func TestInjectBurst(t *testing.T) {
	p, err := New(Config{RxRing: 4, PoolSize: 6})
	if err != nil {
		t.Fatal(err)
	}
	rx := p.Rx(0)
	frame := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	if n := rx.InjectBurst(frame, 10); n != 4 {
		t.Fatalf("took %d of 10 on a ring of 4", n)
	}
	if got := rx.full.Load(); got != 6 {
		t.Errorf("ring-full drops %d, want 6", got)
	}
	bufs := make([]*dma.Buf, 8)
	n := rx.Recv(bufs)
	if n != 4 {
		t.Fatalf("received %d", n)
	}
	for _, b := range bufs[:n] {
		if !bytes.Equal(b.Data(), frame) || b.Owner() != dma.OwnerApp {
			t.Errorf("frame %x owner %v", b.Data(), b.Owner())
		}
	}
	// 4 buffers out, 2 in the pool: a burst of 3 takes 2.
	if n := rx.InjectBurst(frame, 3); n != 2 {
		t.Fatalf("took %d with 2 buffers free", n)
	}
	if got := rx.noBuf.Load(); got != 1 {
		t.Errorf("no-buffer drops %d, want 1", got)
	}
	for _, b := range bufs[:4] {
		b.Free()
	}
	n = rx.Recv(bufs)
	for _, b := range bufs[:n] {
		b.Free()
	}
	if err := p.CheckIdle(); err != nil {
		t.Error(err)
	}
}

// TestSharedAlloc: ports given one Alloc draw their pools from it (the
// dataplane's test for sharing memory), ports without one do not.
func TestSharedAlloc(t *testing.T) {
	a := &Alloc{}
	p0, _ := New(Config{Name: "a", Alloc: a})
	p1, _ := New(Config{Name: "b", Alloc: a})
	p2, _ := New(Config{Name: "c"})
	if p0.Rx(0).Pool().Allocator() != p1.Rx(0).Pool().Allocator() {
		t.Error("ports with one Alloc have pools of different allocators")
	}
	if p0.Rx(0).Pool().Allocator() == p2.Rx(0).Pool().Allocator() {
		t.Error("a port without Alloc shares another's")
	}
}
