package sim

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Receiver takes one frame arriving from a wire. frame is valid only during the
// call (the link reuses its memory): copy what must outlive it. Receivers must not
// block for long; a device model copies the frame into its RX ring and returns.
type Receiver func(frame []byte)

// Link is one end of a wire that carries whole Ethernet frames (destination MAC
// to the end of the payload, no preamble and no FCS), as QEMU's netdevs do.
type Link interface {
	// Send puts frame on the wire. The link is done with frame when Send returns
	// (the caller keeps ownership). It returns an error when the link is closed
	// or the frame could not be sent; a frame the far end drops is not an error.
	Send(frame []byte) error
	// SetReceiver sets the function that frames arriving at this end are handed
	// to (nil: drop them). It may be called at any time.
	SetReceiver(r Receiver)
	// Close releases the link; Send fails afterwards.
	Close() error
}

// ErrLinkClosed is wrapped by Send on a closed link.
var ErrLinkClosed = errors.New("sim: link closed")

// LinkStats counts what passed through one end of a link.
type LinkStats struct {
	Sent      uint64 // frames Send accepted
	Received  uint64 // frames handed to the receiver
	Dropped   uint64 // frames that arrived with no receiver set
	SendBytes uint64
	RecvBytes uint64
}

// linkCounters are the atomic counters behind LinkStats.
type linkCounters struct {
	sent, received, dropped, sendBytes, recvBytes atomic.Uint64
}

func (c *linkCounters) snapshot() LinkStats {
	return LinkStats{
		Sent: c.sent.Load(), Received: c.received.Load(), Dropped: c.dropped.Load(),
		SendBytes: c.sendBytes.Load(), RecvBytes: c.recvBytes.Load(),
	}
}

// receiverSlot holds the receiver so the delivery path reads it lock-free.
type receiverSlot struct{ p atomic.Pointer[Receiver] }

func (s *receiverSlot) set(r Receiver) {
	if r == nil {
		s.p.Store(nil)
		return
	}
	s.p.Store(&r)
}

// deliver hands frame to the receiver, or counts a drop.
func (s *receiverSlot) deliver(c *linkCounters, frame []byte) {
	if r := s.p.Load(); r != nil {
		c.received.Add(1)
		c.recvBytes.Add(uint64(len(frame)))
		(*r)(frame)
		return
	}
	c.dropped.Add(1)
}

// PairEnd is one end of an in-memory wire made by NewPair. Send delivers the
// frame to the other end's receiver synchronously, on the caller's goroutine,
// without copying or allocating. Safe for concurrent use.
type PairEnd struct {
	peer   *PairEnd // immutable after NewPair
	name   string   // immutable
	recv   receiverSlot
	cnt    linkCounters
	closed atomic.Bool
	mu     sync.Mutex // serialises deliveries into this end's receiver
}

// NewPair returns the two ends of an in-memory wire.
func NewPair() (a, b *PairEnd) {
	a, b = &PairEnd{name: "a"}, &PairEnd{name: "b"}
	a.peer, b.peer = b, a
	return a, b
}

// Send implements Link. The peer's receiver runs before Send returns; deliveries
// into one end are serialised, so a receiver never runs concurrently with itself.
func (e *PairEnd) Send(frame []byte) error {
	if e.closed.Load() {
		return fmt.Errorf("sim: send on pair end %s: %w", e.name, ErrLinkClosed)
	}
	e.cnt.sent.Add(1)
	e.cnt.sendBytes.Add(uint64(len(frame)))
	p := e.peer
	if p.closed.Load() {
		p.cnt.dropped.Add(1)
		return nil
	}
	p.mu.Lock()
	p.recv.deliver(&p.cnt, frame)
	p.mu.Unlock()
	return nil
}

// SetReceiver implements Link.
func (e *PairEnd) SetReceiver(r Receiver) { e.recv.set(r) }

// Close implements Link. Frames sent to a closed end are dropped.
func (e *PairEnd) Close() error {
	e.closed.Store(true)
	return nil
}

// Stats returns this end's counters.
func (e *PairEnd) Stats() LinkStats { return e.cnt.snapshot() }

var _ Link = (*PairEnd)(nil)
