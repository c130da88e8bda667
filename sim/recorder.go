package sim

import (
	"bytes"
	"slices"
	"sync"
)

// Recorder keeps a copy of every frame it receives, in order: the test's end
// of a wire (PairEnd.SetReceiver(rec.Receive)). Safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	frames [][]byte // guarded by mu
}

// Receive records a copy of frame; it is a Receiver.
func (r *Recorder) Receive(frame []byte) {
	c := bytes.Clone(frame)
	r.mu.Lock()
	r.frames = append(r.frames, c)
	r.mu.Unlock()
}

// Frames returns the frames recorded so far, oldest first. The slice is the
// caller's; the frames must not be modified.
func (r *Recorder) Frames() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.frames)
}
