package igb_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
)

// farAllocator hands out ordinary Go memory at IOVAs no device allocator maps
// (1 TiB up): buffers from its pools are what a buggy caller would pass to
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

// counter reads one counter of the port's Stats, failing the test if it is
// missing.
func counter(t testing.TB, p nic.Port, name string) uint64 {
	t.Helper()
	v, ok := igb.Counter(p.Stats(), name)
	if !ok {
		t.Fatalf("no counter %q", name)
	}
	return v
}

// portIO adapts a port's queue 0 (TX) and every RX queue to traffic.Client's
// send and recv functions. Frames are copied into buffers of RX queue 0's pool.
type portIO struct {
	p       nic.Port
	held    *dma.Buf // the frame recv returned last; freed on the next call
	burst   []*dma.Buf
	pending []*dma.Buf // received but not yet handed out
	queues  []int      // RX queue of each handed-out frame, when recording
	record  bool
}

func newPortIO(p nic.Port) *portIO {
	return &portIO{p: p, burst: make([]*dma.Buf, 32)}
}

func (io *portIO) send(frame []byte) error {
	tx := io.p.TxQueue(0)
	tx.Reclaim()
	b := io.p.RxQueue(0).Pool().Get()
	if b == nil {
		return fmt.Errorf("pool empty: %w", traffic.ErrFull)
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	if tx.Send([]*dma.Buf{b}) != 1 {
		b.Free()
		return fmt.Errorf("tx ring full: %w", traffic.ErrFull)
	}
	return nil
}

func (io *portIO) recv() ([]byte, bool) {
	if io.held != nil {
		io.held.Free()
		io.held = nil
	}
	if len(io.pending) == 0 {
		for q := 0; q < io.p.NumQueues(); q++ {
			n := io.p.RxQueue(q).Recv(io.burst)
			io.pending = append(io.pending, io.burst[:n]...)
		}
	}
	if len(io.pending) == 0 {
		return nil, false
	}
	b := io.pending[0]
	io.pending = io.pending[1:]
	io.held = b
	if io.record {
		io.queues = append(io.queues, int(b.Queue))
	}
	return b.Data(), true
}

// drain frees whatever the adapter still holds.
func (io *portIO) drain() {
	if io.held != nil {
		io.held.Free()
		io.held = nil
	}
	for _, b := range io.pending {
		b.Free()
	}
	io.pending = nil
}

// reclaimAll waits until every TX descriptor of the port is complete.
func reclaimAll(t testing.TB, p nic.Port, ringSize int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q := 0; q < p.NumQueues(); q++ {
		tx := p.TxQueue(q)
		for tx.Reclaim(); tx.Free() < ringSize-1; tx.Reclaim() {
			if time.Now().After(deadline) {
				t.Fatalf("TX queue %d: %d descriptors still in flight after 5s", q, ringSize-1-tx.Free())
			}
			time.Sleep(time.Millisecond)
		}
	}
}
