package sim

import (
	"sync"

	"github.com/xnic-dev/xnic/nic"
)

// Wire is where a device model's frames go and come from: a Link it is attached
// to, or a transmit function set instead. It is the Attach/SetTransmit plumbing
// every model needs, and knows nothing of the device. It also carries frames
// at the link's line rate (linerate.go).
//
// The model's lock (passed to Attach and SetTransmit) guards link and sink,
// and the model reads Sink under that lock. The line-rate state has a lock of
// its own, taken after the model's (never before). The zero value is detached
// and unpaced.
type Wire struct {
	link Link         // guarded by the model's lock
	sink func([]byte) // guarded by the model's lock; nil: transmitted frames go nowhere

	pmu    sync.Mutex           // guards the fields below
	paced  bool                 // SetLineRate was given a link
	rate   func() nic.LinkState // the negotiated speed and duplex; nil: unpaced
	last   nic.LinkState        // the last up state rate reported
	clock  Clock                // nil: the monotonic clock
	rx, tx int64                // picoseconds on the clock: when each lane is next free
	txFIFO int                  // bytes the transmitter may hold beyond the wire (TxWait)
	txBusy bool                 // a frame departed and the transmitter has not been idle since (TxIdle)
}

// Attach connects the wire to link, under mu: frames the model transmits go out
// on link (Send errors are dropped frames), and frames arriving on link are
// handed to recv. A link attached before stops delivering to the model. nil
// detaches (and drops transmitted frames). The link's receiver is set with mu
// released, so recv may take mu.
func (w *Wire) Attach(mu sync.Locker, link Link, recv Receiver) {
	mu.Lock()
	old := w.link
	w.link = link
	if link != nil {
		w.sink = func(f []byte) { _ = link.Send(f) }
	} else {
		w.sink = nil
	}
	mu.Unlock()
	if old != nil && old != link {
		old.SetReceiver(nil)
	}
	if link != nil {
		link.SetReceiver(recv)
	}
}

// SetTransmit sends transmitted frames to f (nil: nowhere) instead of the link,
// under mu. The link, if any, still delivers arriving frames.
func (w *Wire) SetTransmit(mu sync.Locker, f func(frame []byte)) {
	mu.Lock()
	w.sink = f
	mu.Unlock()
}

// Sink is where transmitted frames go, or nil. Call it with the model's lock
// held; call what it returns without it (the far end may deliver back into
// the model).
func (w *Wire) Sink() func(frame []byte) { return w.sink }
