package nictest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// FarAllocator hands out ordinary Go memory at IOVAs no device allocator maps
// (1 TiB up, so above 4 GiB too), and its Check refuses every address: buffers
// from its pools are what a buggy caller would pass to Send, and a driver must
// refuse them before a descriptor carries them. The zero value is ready.
type FarAllocator struct{ next uint64 }

// Alloc implements dma.Allocator.
func (a *FarAllocator) Alloc(size, align int) (*dma.Region, error) {
	if a.next == 0 {
		a.next = 1 << 40
	}
	r := &dma.Region{CPU: make([]byte, size), IOVA: a.next}
	a.next += uint64(size+4095) &^ 4095
	return r, nil
}

// Free implements dma.Allocator.
func (a *FarAllocator) Free(*dma.Region) error { return nil }

// Sync implements dma.Allocator.
func (a *FarAllocator) Sync(*dma.Region, int, int, dma.SyncDir) {}

// Check implements dma.Allocator: no address is mapped for a device.
func (a *FarAllocator) Check(iova uint64, n int) error {
	return fmt.Errorf("far allocator: %#x: %w", iova, dma.ErrNotMapped)
}

// Limit implements dma.Allocator.
func (a *FarAllocator) Limit() uint64 { return 0 }

var _ dma.Allocator = (*FarAllocator)(nil)

// Counter returns the named counter of p.Stats, and fails the test when there
// is none.
func Counter(t testing.TB, p nic.Port, name string) uint64 {
	t.Helper()
	v, ok := nic.CounterValue(p.Stats(), name)
	if !ok {
		t.Fatalf("no counter %q", name)
	}
	return v
}

// RecvFrames polls every RX queue of p until n frames arrived, and returns
// copies of them in arrival order per poll round; the buffers go back to their
// pools. It fails the test when a buffer does not name the queue it came from
// or is not the caller's (OwnerApp), or when timeout passes without progress.
func RecvFrames(t testing.TB, p nic.Port, n int, timeout time.Duration) [][]byte {
	t.Helper()
	var got [][]byte
	bufs := make([]*dma.Buf, 32)
	deadline := time.Now().Add(timeout)
	for len(got) < n {
		progress := false
		for q := 0; q < p.NumQueues(); q++ {
			k := p.RxQueue(q).Recv(bufs)
			for _, b := range bufs[:k] {
				if int(b.Queue) != q || b.Owner() != dma.OwnerApp {
					t.Fatalf("buffer from RX queue %d says Queue=%d, owner %v", q, b.Queue, b.Owner())
				}
				got = append(got, bytes.Clone(b.Data()))
				Scribble(b)
				b.Free()
			}
			progress = progress || k > 0
		}
		if !progress {
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d frames in %v", len(got), n, timeout)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return got
}

// Scribble writes over the whole of b's slot, headroom and tailroom included,
// as an XDP program or the CPU may before the buffer goes back to its pool
// (a program rewrites the frame and drops it; an application zeroes it). On
// a non-coherent device the CPU's cache then holds those lines dirty: a driver
// that posts the buffer for receive without cleaning it first gets them
// written back over the next frame (sim's cache model does so), so every test
// that receives through RecvFrames checks that clean.
func Scribble(b *dma.Buf) {
	for i := range b.Mem {
		b.Mem[i] = 0xA5 ^ byte(i)
	}
}

// ReclaimAll reclaims every TX queue of p until all its descriptors are free
// (ringSize-1 of them: a ring never fills its last one), and fails the test
// when timeout passes first.
func ReclaimAll(t testing.TB, p nic.Port, ringSize int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for q := 0; q < p.NumQueues(); q++ {
		tx := p.TxQueue(q)
		for tx.Reclaim(); tx.Free() < ringSize-1; tx.Reclaim() {
			if time.Now().After(deadline) {
				t.Fatalf("TX queue %d: %d descriptors still in flight after %v", q, ringSize-1-tx.Free(), timeout)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// Transmit sends frames through p's TX queue q in bursts of up to burst,
// copying each into a buffer from RX queue 0's pool and reclaiming as it
// goes; it returns when the queue has taken every frame, and fails the test
// when timeout passes first. Buffers Send refuses go back to the pool.
func Transmit(t testing.TB, p nic.Port, q int, frames [][]byte, burst int, timeout time.Duration) {
	t.Helper()
	SendAll(t, p.RxQueue(0).Pool(), p.TxQueue(q), len(frames), burst, timeout, func(b *dma.Buf, j int) {
		b.Len = copy(b.Mem[b.Off:], frames[j])
	})
}

// SendAll sends n frames through tx in bursts of up to burst, reclaiming as
// it goes: fill writes frame j into a buffer from pool (and may set its
// metadata) each time the frame is tried. It returns when tx has taken all
// n, and fails the test when timeout passes first. Buffers Send refuses go
// back to the pool.
func SendAll(t testing.TB, pool *dma.Pool, tx nic.TxQueue, n, burst int, timeout time.Duration, fill func(b *dma.Buf, j int)) {
	t.Helper()
	bufs := make([]*dma.Buf, 0, burst)
	deadline := time.Now().Add(timeout)
	for i := 0; i < n; {
		bufs = bufs[:0]
		for j := i; j < n && len(bufs) < burst; j++ {
			b := pool.Get()
			if b == nil {
				break
			}
			fill(b, j)
			bufs = append(bufs, b)
		}
		k := tx.Send(bufs)
		for _, b := range bufs[k:] {
			b.Free()
		}
		i += k
		tx.Reclaim()
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("transmit stuck after %d of %d frames", i, n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}
