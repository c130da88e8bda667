package sim

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// IRQ is one interrupt vector of a model: a channel the model signals and the
// driver waits on. Like an eventfd, signals that arrive while nobody waits
// coalesce into one. Safe for concurrent use.
type IRQ struct {
	vector int
	ch     chan struct{} // capacity 1: the pending signal
	done   chan struct{} // closed when the vector is torn down
	fired  atomic.Uint64 // signals delivered (coalesced or not)
}

func newIRQ(vector int) *IRQ {
	return &IRQ{vector: vector, ch: make(chan struct{}, 1), done: make(chan struct{})}
}

// Vector is the MSI-X vector number.
func (q *IRQ) Vector() int { return q.vector }

// Fired counts the signals the model raised on this vector.
func (q *IRQ) Fired() uint64 { return q.fired.Load() }

// signal raises the interrupt. It never blocks and never allocates.
func (q *IRQ) signal() {
	q.fired.Add(1)
	select {
	case q.ch <- struct{}{}:
	default: // already pending: coalesce
	}
}

// Wait implements nic.IRQ. A vector torn down by DisableIRQs or Close returns
// an error wrapping nic.ErrClosed.
func (q *IRQ) Wait(timeout time.Duration) (bool, error) {
	select {
	case <-q.ch:
		return true, nil
	case <-q.done:
		return false, fmt.Errorf("sim: wait on MSI-X vector %d: %w", q.vector, nic.ErrClosed)
	default:
	}
	if timeout == 0 {
		return false, nil
	}
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-q.ch:
		return true, nil
	case <-q.done:
		return false, fmt.Errorf("sim: wait on MSI-X vector %d: %w", q.vector, nic.ErrClosed)
	case <-tc:
		return false, nil
	}
}

// Fd implements nic.IRQ: models have no file descriptor.
func (q *IRQ) Fd() int { return -1 }

var _ nic.IRQ = (*IRQ)(nil)
