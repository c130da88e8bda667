package igb_test

import (
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
)

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
