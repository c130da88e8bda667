package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// Message-only memory: ranges of another party's memory that can be reached
// only by asking that party to copy (a vfio-user client without a memory file
// descriptor answers DMA_READ and DMA_WRITE messages). The models access
// memory through View, a slice, so such a range is given a mirror: View fetches
// the bytes it returns from the other party first (as the device's read), and
// the bytes the device changes in a view are copied back by WriteBack, which
// the owner calls at the points where the device's writes must be visible
// (before it signals an interrupt, and periodically). WriteBack sends only the
// bytes that differ from what was last fetched or written, so bytes the other
// party wrote meanwhile next to the device's are not overwritten with stale
// ones. Accesses outside every mapped range are refused as for any mapping.

// GuestIO copies to and from another party's memory at IOVAs.
type GuestIO interface {
	ReadGuest(iova uint64, p []byte) error
	WriteGuest(iova uint64, p []byte) error
}

// msgRetain is how long a view's bytes stay under WriteBack's watch after the
// View that returned them: a model may keep a view through one step of its
// device side (igbsim keeps a TX ring view while the frames go to the wire) and
// write to it later in that step.
const msgRetain = 100 * time.Millisecond

// msgSpanMax bounds the spans one range watches; the oldest is dropped (after
// a last write-back) when a new one comes.
const msgSpanMax = 1024

// msgRange is the mirror of one message-only mapping.
type msgRange struct {
	io    GuestIO // immutable
	iova  uint64  // immutable
	dev   []byte  // immutable: the mirror, the device's view
	clean []byte  // immutable slice: the other party's bytes as last fetched or written back; guarded by mu

	dead atomic.Bool // unmapped: no more fetches or write-backs

	wb sync.Mutex // one write-back at a time; taken before mu, held while sending

	mu      sync.Mutex // serialises fetches, and the write-backs' looks at the mirror
	spans   []msgSpan  // views under watch; guarded by mu
	scratch []byte     // fetch buffer; guarded by mu
	out     []byte     // write-back staging; guarded by wb
}

// msgSpan is a viewed part of a range (offsets into the mirror).
type msgSpan struct {
	off, n int
	at     time.Time // the last View of it
}

// MapMessages maps [iova, iova+len(mirror)) as message-only memory reached
// through io. mirror and clean are the caller's buffers of equal length
// (zeroed: nothing has been fetched yet) and must stay valid until
// UnmapExternal returns; the device writes only mirror.
func (m *Memory) MapMessages(iova uint64, mirror, clean []byte, io GuestIO) error {
	if io == nil || len(clean) != len(mirror) {
		return fmt.Errorf("sim: message-only map at 0x%x: want a GuestIO and a clean copy as long as the mirror", iova)
	}
	r := &msgRange{io: io, iova: iova, dev: mirror, clean: clean}
	return m.mapExternalMsg(iova, mirror, r)
}

// fetch makes v (the device's view of [iova, iova+len(v)) of r) hold the other
// party's current bytes, except those the device wrote and WriteBack has not
// sent yet, and watches v for the device's writes.
func (r *msgRange) fetch(iova uint64, v []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead.Load() {
		return errors.New("the range was unmapped")
	}
	n := len(v)
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	tmp := r.scratch[:n]
	if err := r.io.ReadGuest(iova, tmp); err != nil {
		return err
	}
	off := int(iova - r.iova)
	clean := r.clean[off : off+n]
	for i, b := range tmp {
		if v[i] == clean[i] {
			v[i] = b
		}
		clean[i] = b
	}
	r.watchLocked(off, n, time.Now())
	return nil
}

func (r *msgRange) watchLocked(off, n int, now time.Time) {
	for i := range r.spans {
		if s := &r.spans[i]; s.off == off && s.n == n {
			s.at = now
			return
		}
	}
	if len(r.spans) == msgSpanMax {
		// The least recently viewed goes; WriteBack checked it at least
		// once if it ran since, and the device's writes to it are rare
		// this late.
		old := 0
		for i, s := range r.spans {
			if s.at.Before(r.spans[old].at) {
				old = i
			}
		}
		r.spans[old] = r.spans[len(r.spans)-1]
		r.spans = r.spans[:len(r.spans)-1]
	}
	r.spans = append(r.spans, msgSpan{off: off, n: n, at: now})
}

// WriteBack sends the bytes the device wrote into message-only ranges to the
// other party, each run of changed bytes in one GuestIO.WriteGuest, ranges in
// IOVA order. It takes the device lock (see SetDeviceLock) only while it
// compares, so the caller must not hold it; it waits for the other party
// holding no lock a View needs. A run not sent (an error) stays to be sent by
// the next WriteBack. Spans not viewed for msgRetain are dropped after this
// last look.
func (m *Memory) WriteBack() error {
	var errs []error
	for _, mp := range *m.snap.Load() {
		if mp.msg != nil {
			if err := m.writeBackRange(mp.msg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// writeRun is one run of changed bytes, staged in msgRange.out.
type writeRun struct{ off, at, n int }

func (m *Memory) writeBackRange(r *msgRange) error {
	r.wb.Lock() // one write-back of r at a time: runs land in the order staged
	defer r.wb.Unlock()
	// The device lock before r.mu, as View takes them (the model holds its
	// lock when it calls View, which fetches under r.mu).
	l := m.lockDevice()
	r.mu.Lock()
	var runs []writeRun
	if !r.dead.Load() {
		runs = r.stageLocked(time.Now())
	}
	r.mu.Unlock()
	if l != nil {
		l.Unlock()
	}
	for _, w := range runs {
		if r.dead.Load() {
			return nil // unmapped meanwhile: the other party took the memory back
		}
		b := r.out[w.at : w.at+w.n]
		if err := r.io.WriteGuest(r.iova+uint64(w.off), b); err != nil {
			m.faults.Add("dma-write", "", r.iova+uint64(w.off), "%d-byte write-back of message-only memory: %v", w.n, err)
			return fmt.Errorf("sim: write-back of %d bytes at 0x%x: %w", w.n, r.iova+uint64(w.off), err)
		}
		// Sent: these are the other party's bytes now. Until here the run
		// differed from the clean copy, so a fetch meanwhile kept the
		// device's bytes in the mirror.
		r.mu.Lock()
		copy(r.clean[w.off:w.off+w.n], b)
		r.mu.Unlock()
	}
	return nil
}

// stageLocked copies every run of bytes that differ between the mirror and
// the clean copy, in the watched spans (merged where they overlap), to r.out,
// and drops the spans last viewed msgRetain before now. r.out is guarded by
// r.wb.
func (r *msgRange) stageLocked(now time.Time) []writeRun {
	slices.SortFunc(r.spans, func(a, b msgSpan) int { return cmp.Compare(a.off, b.off) })
	var runs []writeRun
	r.out = r.out[:0]
	from := 0 // bytes below from were looked at already
	for _, s := range r.spans {
		lo, hi := max(s.off, from), s.off+s.n
		for i := lo; i < hi; {
			if r.dev[i] == r.clean[i] {
				i++
				continue
			}
			j := i + 1
			for j < hi && r.dev[j] != r.clean[j] {
				j++
			}
			runs = append(runs, writeRun{off: i, at: len(r.out), n: j - i})
			r.out = append(r.out, r.dev[i:j]...)
			i = j
		}
		from = max(from, hi)
	}
	kept := r.spans[:0]
	for _, s := range r.spans {
		if now.Sub(s.at) < msgRetain {
			kept = append(kept, s)
		}
	}
	r.spans = kept
	return runs
}

// viewMsg is View for a message-only mapping: fetch, then the view.
func (m *Memory) viewMsg(op string, mp *mapping, iova uint64, v []byte) ([]byte, error) {
	if err := mp.msg.fetch(iova, v); err != nil {
		m.faults.Add(op, "", iova, "%d-byte DMA read of message-only memory: %v", len(v), err)
		return nil, fmt.Errorf("sim: %s of %d bytes at 0x%x: %w: %v", op, len(v), iova, dma.ErrNotMapped, err)
	}
	return v, nil
}
