package fec_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/nic"
)

// farAllocator hands out Go memory at addresses no device allocator maps (and
// above 4 GiB): buffers from its pools are what a buggy caller would pass to
// Send, and must be refused before a descriptor carries them.
type farAllocator struct{ next uint64 }

func (a *farAllocator) Alloc(size, align int) (*dma.Region, error) {
	if a.next == 0 {
		a.next = 1 << 40
	}
	r := &dma.Region{CPU: make([]byte, size), IOVA: a.next}
	a.next += uint64(size+4095) &^ 4095
	return r, nil
}
func (a *farAllocator) Free(*dma.Region) error                  { return nil }
func (a *farAllocator) Sync(*dma.Region, int, int, dma.SyncDir) {}
func (a *farAllocator) Check(iova uint64, n int) error {
	return fmt.Errorf("far allocator: %#x: %w", iova, dma.ErrNotMapped)
}
func (a *farAllocator) Limit() uint64 { return 0 }

// counter reads one counter of the port's Stats.
func counter(t testing.TB, p nic.Port, name string) uint64 {
	t.Helper()
	v, ok := fec.Counter(p.Stats(), name)
	if !ok {
		t.Fatalf("no counter %q", name)
	}
	return v
}

// sendFrame copies frame into a buffer of RX ring 0's pool and sends it on TX
// ring q.
func sendFrame(t testing.TB, p nic.Port, q int, frame []byte) {
	t.Helper()
	tx := p.TxQueue(q)
	tx.Reclaim()
	b := p.RxQueue(0).Pool().Get()
	if b == nil {
		t.Fatal("pool empty")
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	if tx.Send([]*dma.Buf{b}) != 1 {
		b.Free()
		t.Fatal("TX ring full")
	}
}

// recvFrames polls every RX ring until n frames arrived or 2 s passed, and
// returns copies of them (the buffers go back to their pools).
func recvFrames(t testing.TB, p nic.Port, n int) [][]byte {
	t.Helper()
	var out [][]byte
	bufs := make([]*dma.Buf, 32)
	deadline := time.Now().Add(2 * time.Second)
	for len(out) < n {
		got := 0
		for q := 0; q < p.NumQueues(); q++ {
			k := p.RxQueue(q).Recv(bufs)
			for _, b := range bufs[:k] {
				out = append(out, append([]byte(nil), b.Data()...))
				b.Free()
			}
			got += k
		}
		if got == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d frames in 2s", len(out), n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return out
}

// reclaimAll waits until every TX descriptor of the port is complete.
func reclaimAll(t testing.TB, p nic.Port, ringSize int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for q := 0; q < p.NumQueues(); q++ {
		tx := p.TxQueue(q)
		for tx.Reclaim(); tx.Free() < ringSize-1; tx.Reclaim() {
			if time.Now().After(deadline) {
				t.Fatalf("TX ring %d: %d descriptors still in flight after 2s", q, ringSize-1-tx.Free())
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// frameTo builds an Ethernet frame to dst of n bytes whose payload encodes seq.
func frameTo(dst, src []byte, n, seq int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], src)
	f[12], f[13] = 0x88, 0xB5 // local experimental EtherType
	for i := 14; i < n; i++ {
		f[i] = byte(seq*7 + i)
	}
	if n >= 18 {
		f[14], f[15], f[16], f[17] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	}
	return f
}
