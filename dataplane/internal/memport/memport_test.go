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

// TestRecvWraps: Recv takes frames in order across the ring's end, leaves
// the slots it took empty, and hands the buffers over owned by the caller.
func TestRecvWraps(t *testing.T) {
	p, err := New(Config{RxRing: 4, PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	rx := p.Rx(0)
	bufs := make([]*dma.Buf, 8)
	seq := byte(0)
	inject := func(n int) {
		for range n {
			seq++
			if !rx.Inject([]byte{seq, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) {
				t.Fatalf("frame %d refused", seq)
			}
		}
	}
	next := byte(1)
	recv := func(max, want int) {
		t.Helper()
		n := rx.Recv(bufs[:max])
		if n != want {
			t.Fatalf("received %d, want %d", n, want)
		}
		for _, b := range bufs[:n] {
			if b.Data()[0] != next || b.Owner() != dma.OwnerApp {
				t.Errorf("frame %d owned by %v, want frame %d owned by the app", b.Data()[0], b.Owner(), next)
			}
			next++
			b.Free()
		}
	}
	inject(3)
	recv(2, 2) // head at slot 2
	inject(3)  // slots 3, 0, 1
	recv(8, 4) // 2, 3 then 0, 1: across the end
	inject(4)
	recv(3, 3)
	recv(8, 1)
	for i, b := range rx.ring {
		if b != nil {
			t.Errorf("slot %d still holds a buffer", i)
		}
	}
	if err := p.CheckIdle(); err != nil {
		t.Error(err)
	}
}

// TestSendCounts: the counters Send adds once per call are those of the
// frames the ring took, a refused owner is counted per frame, and a call
// that takes nothing writes no tail.
func TestSendCounts(t *testing.T) {
	p, err := New(Config{TxRing: 4, PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	pool := p.Rx(0).Pool()
	bufs := make([]*dma.Buf, 6)
	if pool.GetBurst(bufs) != 6 {
		t.Fatal("no buffers")
	}
	for i, b := range bufs {
		b.Len = 60 + i
	}
	bufs[1].SetOwner(dma.OwnerRx) // not the sender's: the device counts it
	tx := p.Tx(0)
	if n := tx.Send(bufs); n != 4 {
		t.Fatalf("sent %d on a ring of 4", n)
	}
	if pk, by, tails, bad := tx.Counts(); pk != 4 || by != 60+61+62+63 || tails != 1 || bad != 1 {
		t.Errorf("counts %d packets %d bytes %d tails %d bad, want 4 246 1 1", pk, by, tails, bad)
	}
	if n := tx.Send(bufs[4:]); n != 0 {
		t.Fatalf("sent %d on a full ring", n)
	}
	if _, _, tails, _ := tx.Counts(); tails != 1 {
		t.Errorf("%d tails after a send that took nothing", tails)
	}
	if n := tx.Reclaim(); n != 4 {
		t.Fatalf("reclaimed %d", n)
	}
	if n := tx.Send(bufs[4:]); n != 2 {
		t.Fatalf("sent %d of 2", n)
	}
	if pk, by, tails, _ := tx.Counts(); pk != 6 || by != 246+64+65 || tails != 2 {
		t.Errorf("counts %d packets %d bytes %d tails, want 6 375 2", pk, by, tails)
	}
	tx.Reclaim()
	if err := p.CheckIdle(); err != nil {
		t.Error(err)
	}
}
