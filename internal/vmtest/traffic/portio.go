package traffic

import (
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// PortIO adapts a driver's port to a Client's send and recv functions, for
// the guest tests of every driver: frames go out on TX queue 0 in buffers of
// RX queue 0's pool, and come in from the RX queues. The frame Recv returned
// last stays PortIO's (Held) until the next Recv or Drain.
type PortIO struct {
	p       nic.Port
	rxq     int // RX queues read: the first rxq (all when 0)
	held    *dma.Buf
	burst   []*dma.Buf
	pending []*dma.Buf
}

// NewPortIO makes the adapter; rxQueues limits reception to the first ones
// (0: every queue), for a test that leaves the others to someone else.
func NewPortIO(p nic.Port, rxQueues int) *PortIO {
	return &PortIO{p: p, rxq: rxQueues, burst: make([]*dma.Buf, 32)}
}

// Send copies frame into a buffer and puts it on TX queue 0 (the Client's
// send function). A full pool or ring wraps ErrFull, so the Client retries.
func (io *PortIO) Send(frame []byte) error {
	tx := io.p.TxQueue(0)
	tx.Reclaim()
	b := io.p.RxQueue(0).Pool().Get()
	if b == nil {
		return fmt.Errorf("pool empty: %w", ErrFull)
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	if tx.Send([]*dma.Buf{b}) != 1 {
		b.Free()
		return fmt.Errorf("tx ring full: %w", ErrFull)
	}
	return nil
}

// Recv hands out the next received frame (the Client's recv function),
// freeing the one before.
func (io *PortIO) Recv() ([]byte, bool) {
	if io.held != nil {
		io.held.Free()
		io.held = nil
	}
	if len(io.pending) == 0 {
		n := io.p.NumQueues()
		if io.rxq > 0 {
			n = min(n, io.rxq)
		}
		for q := 0; q < n; q++ {
			k := io.p.RxQueue(q).Recv(io.burst)
			io.pending = append(io.pending, io.burst[:k]...)
		}
	}
	if len(io.pending) == 0 {
		return nil, false
	}
	io.held, io.pending = io.pending[0], io.pending[1:]
	return io.held.Data(), true
}

// Held is the buffer of the frame Recv returned last (its Queue, metadata),
// or nil.
func (io *PortIO) Held() *dma.Buf { return io.held }

// Drain frees what the adapter holds and reclaims TX queue 0.
func (io *PortIO) Drain() {
	if io.held != nil {
		io.held.Free()
		io.held = nil
	}
	for _, b := range io.pending {
		b.Free()
	}
	io.pending = nil
	io.p.TxQueue(0).Reclaim()
}
