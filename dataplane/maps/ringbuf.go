package maps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"syscall"
)

// Ring buffer record header bits and helper flags (include/uapi/linux/bpf.h).
const (
	ringbufBusyBit    uint32 = 1 << 31 // BPF_RINGBUF_BUSY_BIT: reserved, not committed
	ringbufDiscardBit uint32 = 1 << 30 // BPF_RINGBUF_DISCARD_BIT: committed as discarded
	ringbufHdrSize           = 8       // BPF_RINGBUF_HDR_SZ: u32 len+bits, u32 page offset
	ringbufMaxRecord         = 1<<32/4 - 1

	// RingbufNoWakeup (BPF_RB_NO_WAKEUP) and RingbufForceWakeup
	// (BPF_RB_FORCE_WAKEUP) are the submit/discard/output flags.
	RingbufNoWakeup    uint64 = 1 << 0
	RingbufForceWakeup uint64 = 1 << 1

	// bpf_ringbuf_query flags.
	RingbufAvailData = 0 // BPF_RB_AVAIL_DATA
	RingbufRingSize  = 1 // BPF_RB_RING_SIZE
	RingbufConsPos   = 2 // BPF_RB_CONS_POS
	RingbufProdPos   = 3 // BPF_RB_PROD_POS
)

// ErrNoRecord is returned by RingBuf.Read when no committed record is waiting.
var ErrNoRecord = fmt.Errorf("ring buffer: no record ready: %w", syscall.EAGAIN)

// RingBuf is BPF_MAP_TYPE_RINGBUF (kernel/bpf/ringbuf.c): a multi-producer,
// single-consumer byte ring of max_entries bytes (a power of 2, a multiple
// of the 4 KiB page) carrying records to Go.
//
// # Positions and who writes them
//
// Positions count bytes from creation and never wrap; a position's place in
// the ring is pos & (size-1). The producer position is written only by
// producers (programs, under mu); the consumer position only by the consumer
// (the goroutine calling Read or ReadRecord, under readMu). Every record is
// an 8-byte header (length, BUSY and DISCARD bits) plus its payload, rounded
// up to 8 bytes, as in the kernel; headers live in hdr (atomic words, one per
// 8-byte slot) rather than inline, so that producers and the consumer hand
// records over with atomic stores and loads only.
//
// # Memory and wrap-around
//
// The kernel maps the data pages twice so that a record crossing the end is
// contiguous. xnic allocates the ring twice as long instead: a record that
// crosses the end continues into the second half, and both the program (its
// reserved slice) and the consumer (its returned slice) see it contiguously
// there. Nothing reads the first half's copy of those bytes, so no copy is
// needed. Space is refused like the kernel's: a reservation may not bring the
// producer more than size-1 bytes past the consumer, nor past the oldest
// record still reserved.
//
// # Ownership
//
// Reserve hands a program a slice it owns until it calls Submit or Discard;
// after that the record belongs to the consumer until the consumer moves
// past it. See ReadRecord for how long the consumer's slice lives.
type RingBuf struct {
	spec Spec
	size uint64
	mask uint64
	data []byte          // 2*size bytes; immutable slice header
	hdr  []atomic.Uint32 // record headers, index (pos&mask)/8

	mu   sync.Mutex    // producers: Reserve
	prod atomic.Uint64 // producer position; written under mu
	pend uint64        // oldest position whose record may still be BUSY; guarded by mu
	cons atomic.Uint64 // consumer position; written by the consumer only

	wake chan struct{} // capacity 1: a pending wakeup for the consumer

	readMu sync.Mutex // one consumer at a time
	held   uint64     // bytes of the record ReadRecord last returned; guarded by readMu

	wakeups atomic.Uint64 // wakeups sent (for tests and stats)
}

func newRingBuf(spec Spec) (*RingBuf, error) {
	if err := checkFlagMask(spec, ringbufFlagMask); err != nil {
		return nil, err
	}
	n := spec.MaxEntries
	if spec.KeySize != 0 || spec.ValueSize != 0 || bits.OnesCount32(n) != 1 || n%pageSize != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d, max_entries %d: a ringbuf has no keys or values and max_entries is its byte size, a power of 2 and a multiple of %d", spec.KeySize, spec.ValueSize, n, pageSize)
	}
	if uint64(n) > ringbufMaxDataSz {
		return nil, mapErr(spec.Name, syscall.E2BIG, "%d bytes", n)
	}
	if 2*uint64(n) > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d bytes is over xnic's cap", n)
	}
	spec.NumCPU = 0
	return &RingBuf{
		spec: spec,
		size: uint64(n),
		mask: uint64(n) - 1,
		data: make([]byte, 2*uint64(n)),
		hdr:  make([]atomic.Uint32, n/8),
		wake: make(chan struct{}, 1),
	}, nil
}

// Spec returns the map's spec.
func (r *RingBuf) Spec() Spec { return r.spec }

// Lookup returns nil: a ring buffer has no elements.
func (r *RingBuf) Lookup(key []byte, cpu int) []byte { return nil }

// Update is ENOTSUPP, as the kernel's ringbuf_map_update_elem.
func (r *RingBuf) Update(key, value []byte, flags uint64, cpu int) error { return ENOTSUPP }

// Delete is ENOTSUPP.
func (r *RingBuf) Delete(key []byte) error { return ENOTSUPP }

// NextKey is ENOTSUPP.
func (r *RingBuf) NextKey(key, next []byte) error { return ENOTSUPP }

func recLen(payload uint32) uint64 { return (uint64(payload) + ringbufHdrSize + 7) &^ 7 }

// Reserve claims size bytes for a record (bpf_ringbuf_reserve). It returns
// the record's payload, owned by the caller until Submit or Discard, and its
// offset, which identifies the record to Submit and Discard; ok is false when
// flags is non-zero, size is too large or the ring has no room (the helper
// then returns NULL). It does not allocate.
func (r *RingBuf) Reserve(size uint64, flags uint64) (payload []byte, off uint64, ok bool) {
	if flags != 0 || size > ringbufMaxRecord {
		return nil, 0, false
	}
	l := recLen(uint32(size))
	if l > r.size {
		return nil, 0, false
	}
	r.mu.Lock()
	prod := r.prod.Load()
	cons := r.cons.Load()
	// Move pend past records already committed (the kernel's pending_pos).
	for r.pend < prod {
		h := r.hdr[(r.pend&r.mask)>>3].Load()
		if h&ringbufBusyBit != 0 {
			break
		}
		r.pend += recLen(h &^ (ringbufBusyBit | ringbufDiscardBit))
	}
	next := prod + l
	if next-cons > r.mask || next-r.pend > r.mask {
		r.mu.Unlock()
		return nil, 0, false
	}
	at := prod & r.mask
	r.hdr[at>>3].Store(uint32(size) | ringbufBusyBit)
	r.prod.Store(next)
	r.mu.Unlock()
	off = at + ringbufHdrSize
	return r.data[off : off+size : off+size], off, true
}

// Submit commits the record at off (from Reserve) for the consumer.
func (r *RingBuf) Submit(off uint64, flags uint64) error { return r.commit(off, flags, false) }

// Discard drops the record at off; the consumer skips it.
func (r *RingBuf) Discard(off uint64, flags uint64) error { return r.commit(off, flags, true) }

var errNotReserved error = fmt.Errorf("ring buffer: no reserved record at that offset: %w", syscall.EINVAL)

func (r *RingBuf) commit(off uint64, flags uint64, discard bool) error {
	if off < ringbufHdrSize || off > r.size || off%8 != 0 {
		return errNotReserved
	}
	at := off - ringbufHdrSize
	h := &r.hdr[at>>3]
	v := h.Load()
	if v&ringbufBusyBit == 0 {
		return errNotReserved
	}
	v &^= ringbufBusyBit
	if discard {
		v |= ringbufDiscardBit
	}
	h.Store(v)
	// Wake the consumer as bpf_ringbuf_commit does: always when forced, never
	// with NO_WAKEUP, otherwise only if the consumer waits on this record.
	if flags&RingbufForceWakeup != 0 || (flags&RingbufNoWakeup == 0 && r.cons.Load()&r.mask == at) {
		r.notify()
	}
	return nil
}

func (r *RingBuf) notify() {
	r.wakeups.Add(1)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Output copies data into a new record and commits it (bpf_ringbuf_output):
// EINVAL for flags other than the wakeup flags, EAGAIN when there is no room.
func (r *RingBuf) Output(data []byte, flags uint64) error {
	if flags&^(RingbufNoWakeup|RingbufForceWakeup) != 0 {
		return errBadFlags
	}
	p, off, ok := r.Reserve(uint64(len(data)), 0)
	if !ok {
		return syscall.EAGAIN
	}
	copy(p, data)
	return r.commit(off, flags, false)
}

// Query answers bpf_ringbuf_query: bytes not yet consumed, ring size, consumer
// or producer position; 0 for an unknown flag.
func (r *RingBuf) Query(flags uint64) uint64 {
	switch flags {
	case RingbufAvailData:
		return r.prod.Load() - r.cons.Load()
	case RingbufRingSize:
		return r.size
	case RingbufConsPos:
		return r.cons.Load()
	case RingbufProdPos:
		return r.prod.Load()
	}
	return 0
}

// next returns the next committed record's payload, skipping discarded ones,
// or nil if the next record is still reserved or there is none. The caller
// holds readMu; the consumer position stays at the record.
func (r *RingBuf) next() []byte {
	for {
		cons := r.cons.Load()
		if cons >= r.prod.Load() {
			return nil
		}
		at := cons & r.mask
		h := r.hdr[at>>3].Load()
		if h&ringbufBusyBit != 0 {
			return nil
		}
		n := h &^ ringbufDiscardBit
		if h&ringbufDiscardBit != 0 {
			r.cons.Store(cons + recLen(n))
			continue
		}
		off := at + ringbufHdrSize
		return r.data[off : off+uint64(n) : off+uint64(n)]
	}
}

// release moves the consumer past a record ReadRecord returned earlier.
func (r *RingBuf) release() {
	if r.held != 0 {
		r.cons.Store(r.cons.Load() + r.held)
		r.held = 0
	}
}

// Read copies the next committed record into buf and consumes it. It does not
// wait: ErrNoRecord (EAGAIN) when nothing is ready; io.ErrShortBuffer, with
// the record's length and the record left in place, when buf is too small.
// It first releases the record of a previous ReadRecord.
func (r *RingBuf) Read(buf []byte) (int, error) {
	r.readMu.Lock()
	defer r.readMu.Unlock()
	r.release()
	p := r.next()
	if p == nil {
		return 0, ErrNoRecord
	}
	if len(p) > len(buf) {
		return len(p), io.ErrShortBuffer
	}
	n := copy(buf, p)
	r.cons.Store(r.cons.Load() + recLen(uint32(len(p))))
	return n, nil
}

// ReadRecord waits for the next committed record and returns its payload,
// aliasing the ring: it stays valid, and its space stays unavailable to
// producers, until the next call to Read or ReadRecord (which releases it).
// It waits until a wakeup or ctx is done (then ctx's error). A record
// submitted with BPF_RB_NO_WAKEUP wakes no one, as in the kernel: it is found
// by the next call or the next wakeup.
func (r *RingBuf) ReadRecord(ctx context.Context) ([]byte, error) {
	r.readMu.Lock()
	defer r.readMu.Unlock()
	r.release()
	for {
		if p := r.next(); p != nil {
			r.held = recLen(uint32(len(p)))
			return p, nil
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("ring buffer %q: waiting for a record: %w", r.spec.Name, ctx.Err())
		}
	}
}

// IsNoRecord reports whether err means no record was ready.
func IsNoRecord(err error) bool { return errors.Is(err, syscall.EAGAIN) }
