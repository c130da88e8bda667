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

// GuestIO copies to and from another party's memory at IOVAs. The other
// party handles the requests in the order they are made: a ReadGuest begun
// after PostWriteGuest returned reads what that write wrote.
type GuestIO interface {
	ReadGuest(iova uint64, p []byte) error
	// PostWriteGuest starts writing p at iova and returns once the request
	// is on its way (p may be reused); done waits for its outcome.
	PostWriteGuest(iova uint64, p []byte) (done func() error, err error)
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

	dead    atomic.Bool // unmapped: no more fetches or write-backs
	watched atomic.Bool // spans is not empty; written under mu

	mu      sync.Mutex // serialises fetches, and the write-backs' looks at the mirror
	spans   []msgSpan  // views under watch; guarded by mu
	scratch []byte     // fetch buffer; guarded by mu
	out     []byte     // write-back staging; guarded by Memory.wbMu
	old     []byte     // the clean bytes out replaced; guarded by Memory.wbMu
	runs    []writeRun // staged runs; guarded by Memory.wbMu
	small   [][2]int   // descriptor-sized views, merged; guarded by Memory.wbMu
	large   [][2]int   // larger views, merged; guarded by Memory.wbMu
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
	r.watched.Store(true)
}

// Watched reports whether a message-only range has views WriteBack must look
// at (cheap: no lock), so an owner that calls WriteBack periodically can skip
// the device lock when nothing was viewed.
func (m *Memory) Watched() bool {
	for _, mp := range *m.snap.Load() {
		if mp.msg != nil && mp.msg.watched.Load() {
			return true
		}
	}
	return false
}

// msgDescMax is the largest view WriteBack counts as a descriptor's: it sends
// the device's writes to larger views (frames) before those to descriptors, as
// a device writes a frame before the descriptor that hands it over (a driver
// polling its ring must not see the descriptor done before the frame is
// there). The models view one descriptor at a time for their write-backs.
const msgDescMax = 64

// WriteBack sends the bytes the device wrote into message-only ranges to the
// other party, each run of changed bytes in one GuestIO.PostWriteGuest: first
// the runs in views larger than msgDescMax, then those in descriptor-sized
// views. It sends them all holding the ranges' locks, which fetches take to
// read, so a fetch after it reads what it wrote, and marks them sent at once;
// it then waits for the outcomes holding no lock a View needs, and a run the
// other party did not take is marked unsent again (for the next WriteBack)
// where no fetch has seen the other party's bytes since. It takes the device
// lock (see SetDeviceLock) only while it compares, so the caller must not hold
// it. Spans not viewed for msgRetain are dropped after this last look.
func (m *Memory) WriteBack() error {
	m.wbMu.Lock() // one WriteBack at a time
	defer m.wbMu.Unlock()
	m.wbList = m.wbList[:0]
	for _, mp := range *m.snap.Load() {
		if mp.msg != nil {
			m.wbList = append(m.wbList, mp.msg)
		}
	}
	if len(m.wbList) == 0 {
		return nil
	}
	now := time.Now()
	// The device lock before r.mu, as View takes them (the model holds its
	// lock when it calls View, which fetches under r.mu); the ranges in IOVA
	// order.
	l := m.lockDevice()
	for _, r := range m.wbList {
		r.mu.Lock()
		r.runs = r.runs[:0]
		if !r.dead.Load() {
			r.stageLocked(now)
		}
	}
	if l != nil {
		l.Unlock()
	}
	var err error
	for _, desc := range []bool{false, true} {
		for _, r := range m.wbList {
			if err == nil {
				err = r.postLocked(desc)
			}
		}
	}
	for _, r := range m.wbList {
		r.mu.Unlock()
	}
	for _, r := range m.wbList {
		if e := m.settle(r); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// writeRun is one run of changed bytes, staged in msgRange.out with the bytes
// the clean copy had in msgRange.old.
type writeRun struct {
	off, at, n int
	desc       bool         // in a descriptor-sized view
	done       func() error // set once posted
}

// postLocked posts r's staged runs of one kind and marks them clean.
func (r *msgRange) postLocked(desc bool) error {
	for i := range r.runs {
		w := &r.runs[i]
		if w.desc != desc {
			continue
		}
		if r.dead.Load() {
			return nil // unmapped since the staging: the other party took the memory back
		}
		done, err := r.io.PostWriteGuest(r.iova+uint64(w.off), r.out[w.at:w.at+w.n])
		if err != nil {
			return fmt.Errorf("sim: write-back of %d bytes at 0x%x: %w", w.n, r.iova+uint64(w.off), err)
		}
		w.done = done
		copy(r.clean[w.off:w.off+w.n], r.out[w.at:w.at+w.n])
	}
	return nil
}

// settle waits for r's posted runs; a run not taken (or never posted) is
// dirty again where the clean copy still holds what was staged.
func (m *Memory) settle(r *msgRange) error {
	var first error
	for i := range r.runs {
		w := &r.runs[i]
		var err error
		if w.done != nil {
			err = w.done()
		}
		if err == nil && w.done != nil {
			continue
		}
		r.mu.Lock()
		clean, staged, old := r.clean[w.off:w.off+w.n], r.out[w.at:w.at+w.n], r.old[w.at:w.at+w.n]
		for k := range clean {
			if clean[k] == staged[k] {
				clean[k] = old[k]
			}
		}
		r.mu.Unlock()
		if err != nil && first == nil {
			m.faults.Add("dma-write", "", r.iova+uint64(w.off), "%d-byte write-back of message-only memory: %v", w.n, err)
			first = fmt.Errorf("sim: write-back of %d bytes at 0x%x: %w", w.n, r.iova+uint64(w.off), err)
		}
	}
	return first
}

// stageLocked copies every run of bytes that differ between the mirror and
// the clean copy, in the watched spans, to r.out and lists it in r.runs: a
// byte in a descriptor-sized view as a descriptor's, each byte once. It drops
// the spans last viewed msgRetain before now. r.out and r.runs are guarded by
// Memory.wbMu.
func (r *msgRange) stageLocked(now time.Time) {
	slices.SortFunc(r.spans, func(a, b msgSpan) int { return cmp.Compare(a.off, b.off) })
	r.out, r.old = r.out[:0], r.old[:0]
	r.small = mergeSpans(r.small[:0], r.spans, true)
	r.large = mergeSpans(r.large[:0], r.spans, false)
	si := 0
	for _, iv := range r.large { // minus the descriptor-sized views
		pos, end := iv[0], iv[1]
		for si < len(r.small) && r.small[si][1] <= pos {
			si++
		}
		for k := si; k < len(r.small) && r.small[k][0] < end; k++ {
			if pos < r.small[k][0] {
				r.stageRange(pos, r.small[k][0], false)
			}
			pos = max(pos, r.small[k][1])
		}
		if pos < end {
			r.stageRange(pos, end, false)
		}
	}
	for _, iv := range r.small {
		r.stageRange(iv[0], iv[1], true)
	}
	kept := r.spans[:0]
	for _, s := range r.spans {
		if now.Sub(s.at) < msgRetain {
			kept = append(kept, s)
		}
	}
	r.spans = kept
	r.watched.Store(len(kept) > 0)
}

// mergeSpans appends to dst the union of the spans (sorted by offset) that are
// descriptor-sized (or, with small false, larger), as [lo, hi) intervals.
func mergeSpans(dst [][2]int, spans []msgSpan, small bool) [][2]int {
	for _, s := range spans {
		if (s.n <= msgDescMax) != small {
			continue
		}
		if n := len(dst); n > 0 && s.off <= dst[n-1][1] {
			dst[n-1][1] = max(dst[n-1][1], s.off+s.n)
			continue
		}
		dst = append(dst, [2]int{s.off, s.off + s.n})
	}
	return dst
}

// stageRange stages the changed runs of [lo, hi).
func (r *msgRange) stageRange(lo, hi int, desc bool) {
	for i := lo; i < hi; {
		if r.dev[i] == r.clean[i] {
			i++
			continue
		}
		j := i + 1
		for j < hi && r.dev[j] != r.clean[j] {
			j++
		}
		r.runs = append(r.runs, writeRun{off: i, at: len(r.out), n: j - i, desc: desc})
		r.out = append(r.out, r.dev[i:j]...)
		r.old = append(r.old, r.clean[i:j]...)
		i = j
	}
}

// viewMsg is View for a message-only mapping: fetch, then the view.
func (m *Memory) viewMsg(op string, mp *mapping, iova uint64, v []byte) ([]byte, error) {
	if err := mp.msg.fetch(iova, v); err != nil {
		m.faults.Add(op, "", iova, "%d-byte DMA read of message-only memory: %v", len(v), err)
		return nil, fmt.Errorf("sim: %s of %d bytes at 0x%x: %w: %v", op, len(v), iova, dma.ErrNotMapped, err)
	}
	return v, nil
}
