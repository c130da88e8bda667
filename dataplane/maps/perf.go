package maps

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// PerfEventArray is BPF_MAP_TYPE_PERF_EVENT_ARRAY (kernel/bpf/arraymap.c)
// for bpf_perf_event_output: max_entries slots (0 in the object means one per
// CPU, as libbpf does), each holding what the kernel's slot holds, a
// BPF-output perf event on one CPU with its ring buffer. In xnic a slot is
// opened from Go (Open, or NewPerfReader for every slot) instead of with a
// perf event file descriptor, and records reach Go through Read.
//
// The kernel's rules for output are kept (kernel/trace/bpf_trace.c,
// __bpf_perf_event_output): an index past max_entries is -E2BIG, an empty
// slot -ENOENT, a slot whose event is on another CPU than the running
// program -EOPNOTSUPP, a full ring -ENOSPC (the loss is counted and
// reported to the reader with a PERF_RECORD_LOST written ahead of the next
// sample that fits, as the kernel does). A ring holds perCPUBytes of
// records, each taking what a PERF_RECORD_SAMPLE with PERF_SAMPLE_RAW takes
// there: an 8-byte header, a u32 size and the raw data, padded so that size
// and data end on 8 bytes (the padding is part of the raw sample, zeros).
type PerfEventArray struct {
	spec  Spec
	slots []atomic.Pointer[perfRing]
	// wake is signalled by an output while waiting (readers blocked in
	// Read) is not zero: a reader counts itself waiting before it polls a
	// last time, an output loads waiting after it published its record, so
	// one of them sees the other.
	wake    chan struct{}
	waiting atomic.Int32
	// held keeps rings that were replaced or closed readable until the
	// reader drains them.
	mu     sync.Mutex
	closed []*perfRing
}

// perfRing is one slot's ring, shared by the programs that write it and the
// reader as the kernel's perf ring is (kernel/events/ring_buffer.c): the
// producer publishes records by advancing head, the reader frees them by
// advancing tail, and neither takes the other's lock. Its size is a power of
// two, so positions are masked, not divided. The JIT reads cpu, mask,
// head, lost and tail and adds to lost from native code (PerfLayout in
// perf_native_unsafe.go): a change to these fields or to Output's first,
// lock-free check changes that code's contract too.
type perfRing struct {
	cpu  int    // immutable
	buf  []byte // immutable slice; bytes [tail, head) are the reader's
	mask uint64 // immutable: len(buf)-1
	// head is where the next record goes; its low bit (records are 8-byte
	// multiples, so otherwise clear) is the producers' lock: a producer
	// sets it with a compare-and-swap, writes its record and stores the new
	// head, which clears it and publishes the record at once (programs of
	// one CPU slot, so uncontended; the bit only guards against runners
	// that share a slot). Only producers write it.
	head atomic.Uint64
	// lost counts the records refused since the last loss record: a
	// refusing producer adds to it without the lock; the producer that
	// writes the loss record takes it to zero holding head's lock bit
	// (rb->lost in the kernel).
	lost atomic.Uint64
	// Only the reader writes tail, under rmu (one reader at a time), after
	// it copied the record out.
	tail atomic.Uint64
	rmu  sync.Mutex
}

const (
	perfHeaderSize = 8 // struct perf_event_header
	// PerfCurrentCPU (BPF_F_CURRENT_CPU) is the index meaning "this CPU".
	PerfCurrentCPU = 0xffffffff
)

func newPerfEventArray(spec Spec) (*PerfEventArray, error) {
	if err := checkFlagMask(spec, flagAccessMask|FlagNumaNode|FlagPreserveElems); err != nil {
		return nil, err
	}
	// Sizes left out of the map's definition (xdp-tools' xdpdump, the
	// xdp-tutorial's tcpdump lesson declare none) are the only ones the kernel
	// takes, as libbpf and cilium/ebpf fill them in (cilium/ebpf map.go,
	// the PerfEventArray case of createMap: "KeySize must be zero or four").
	if spec.KeySize == 0 {
		spec.KeySize = 4
	}
	if spec.ValueSize == 0 {
		spec.ValueSize = 4
	}
	if spec.KeySize != 4 || spec.ValueSize != 4 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: a perf event array has u32 keys (CPU index) and u32 values (perf event fd)", spec.KeySize, spec.ValueSize)
	}
	if spec.MaxEntries == 0 {
		spec.MaxEntries = uint32(spec.NumCPU)
	}
	if spec.MaxEntries > 1<<16 {
		return nil, mapErr(spec.Name, syscall.E2BIG, "%d slots", spec.MaxEntries)
	}
	return &PerfEventArray{spec: spec, slots: make([]atomic.Pointer[perfRing], spec.MaxEntries), wake: make(chan struct{}, 1)}, nil
}

// Spec returns the map's spec (max_entries filled in).
func (a *PerfEventArray) Spec() Spec { return a.spec }

// Lookup returns nil: programs cannot look up perf event arrays (the
// verifier refuses it) and the values are descriptors, not data.
func (a *PerfEventArray) Lookup(key []byte, cpu int) []byte { return nil }

// Update is EOPNOTSUPP: a slot takes a perf event file descriptor in the
// kernel; in xnic open it from Go with Open or NewPerfReader.
func (a *PerfEventArray) Update(key, value []byte, flags uint64, cpu int) error {
	return mapErr(a.spec.Name, syscall.EOPNOTSUPP, "perf event array slots are opened with PerfEventArray.Open or NewPerfReader, not with a file descriptor")
}

// Delete empties a slot (records already in it stay readable).
func (a *PerfEventArray) Delete(key []byte) error {
	i, ok := keyIndex(key)
	if !ok || i >= a.spec.MaxEntries {
		return errBadKeySize
	}
	if old := a.slots[i].Swap(nil); old != nil {
		a.retire(old)
		return nil
	}
	return errNoEntry
}

// NextKey walks the indexes, as for arrays.
func (a *PerfEventArray) NextKey(key, next []byte) error {
	return arrayNextKey(a.spec.MaxEntries, key, next)
}

// Open puts a ring of perCPUBytes (rounded up to a power of two, at least
// one page) in slot index, for programs running on CPU slot cpu (what the
// kernel's event->oncpu is). The kernel maps a power-of-two number of data
// pages (kernel/events/core.c, perf_mmap) and cilium/ebpf's perf.NewReader
// rounds its per-CPU size up the same way.
func (a *PerfEventArray) Open(index uint32, cpu int, perCPUBytes int) error {
	if index >= a.spec.MaxEntries {
		return mapErr(a.spec.Name, syscall.E2BIG, "slot %d of %d", index, a.spec.MaxEntries)
	}
	// The cap (a power of two, 1 GiB) bounds the rounding too, on 32 bits.
	if uint64(perCPUBytes) > maxMapBytes {
		return mapErr(a.spec.Name, syscall.ENOMEM, "%d bytes is over xnic's cap", perCPUBytes)
	}
	size := pageSize
	for size < perCPUBytes {
		size <<= 1
	}
	r := &perfRing{cpu: cpu, buf: make([]byte, size), mask: uint64(size - 1)}
	if old := a.slots[index].Swap(r); old != nil {
		a.retire(old)
	}
	return nil
}

func (a *PerfEventArray) retire(r *perfRing) {
	a.mu.Lock()
	a.closed = append(a.closed, r)
	a.mu.Unlock()
}

// perfSampleSize is the ring space of one sample of n raw bytes, and the raw
// size the reader sees (n padded so that the u32 size and data end on 8).
func perfSampleSize(n uint64) (total, raw uint64) {
	raw = (n+4+7)&^7 - 4
	return perfHeaderSize + 4 + raw, raw
}

// Output writes one sample of meta followed by pkt (bpf_perf_event_output)
// to slot index (PerfCurrentCPU: the slot of cpu) for a program running on
// CPU slot cpu. It does not allocate. A full ring is refused after a few
// loads and compares, without the lock (perf_output_begin's fail path).
func (a *PerfEventArray) Output(index uint64, cpu int, meta, pkt []byte) error {
	if index == PerfCurrentCPU {
		index = uint64(cpu)
	}
	if index >= uint64(len(a.slots)) {
		return errFull
	}
	r := a.slots[index].Load()
	if r == nil {
		return errNoEntry
	}
	if r.cpu != cpu {
		return errNotOnCPU
	}
	n := uint64(len(meta) + len(pkt))
	total, raw := perfSampleSize(n)
	h := r.head.Load()
	if !r.fits(h&^perfHeadLocked, total, r.lost.Load()) {
		r.lost.Add(1)
		return errNoSpace
	}
	h = r.lock(h)
	// lost is loaded once: a refusal without the lock may add to it
	// meanwhile, and the loss record is only written if its room was
	// checked.
	lost := r.lost.Load()
	if !r.fits(h, total, lost) {
		r.head.Store(h)
		r.lost.Add(1)
		return errNoSpace
	}
	if lost != 0 {
		h = r.putLost(h, r.lost.Swap(0))
	}
	r.head.Store(r.putSample(h, total, raw, meta, pkt))
	if a.waiting.Load() != 0 {
		a.notify()
	}
	return nil
}

// perfHeadLocked is head's lock bit.
const perfHeadLocked = 1

// lock sets head's lock bit, from h, head as the caller last loaded it, and
// returns head without the bit: the caller owns the ring's producer side
// until it stores a new head.
func (r *perfRing) lock(h uint64) uint64 {
	for h&perfHeadLocked != 0 || !r.head.CompareAndSwap(h, h|perfHeadLocked) {
		if h&perfHeadLocked != 0 {
			runtime.Gosched()
		}
		h = r.head.Load()
	}
	return h
}

// fits says whether a sample of total bytes, and the loss record ahead of it
// if lost is not zero, fit after head: the ring never fills completely
// (perf_output_begin's CIRC_SPACE check).
func (r *perfRing) fits(head, total, lost uint64) bool {
	if lost != 0 {
		total += perfLostSize
	}
	return head+total-r.tail.Load() < uint64(len(r.buf))
}

// putLost writes the PERF_RECORD_LOST the kernel writes ahead of the next
// sample that fits (header, event id, count) at h and returns the new head.
func (r *perfRing) putLost(h, lost uint64) uint64 {
	var rec [perfLostSize]byte
	binary.LittleEndian.PutUint32(rec[0:], perfRecordLost)
	binary.LittleEndian.PutUint16(rec[6:], perfLostSize)
	binary.LittleEndian.PutUint64(rec[16:], lost)
	return r.put(h, rec[:])
}

// putSample writes a sample record at h and returns the new head: in place
// when it does not wrap, else piece by piece. The caller holds head's lock
// bit and checked the space.
func (r *perfRing) putSample(h, total, raw uint64, meta, pkt []byte) uint64 {
	// type, misc, size as perf_event_header; xnic keeps the frame bytes'
	// length in type's upper half and the data's in misc (the consumer's
	// FrameOffset/FrameLen; the kernel's sample does not say).
	typ := perfRecordSample | uint32(min(len(pkt), 0xffff))<<16
	misc := uint16(min(len(meta), 0xffff))
	at := h & r.mask
	if at+total <= uint64(len(r.buf)) {
		rec := r.buf[at : at+total]
		binary.LittleEndian.PutUint32(rec[0:], typ)
		binary.LittleEndian.PutUint16(rec[4:], misc)
		binary.LittleEndian.PutUint16(rec[6:], uint16(total))
		binary.LittleEndian.PutUint32(rec[8:], uint32(raw))
		data := rec[perfHeaderSize+4:]
		k := copy(data, meta)
		k += copy(data[k:], pkt)
		clear(data[k:])
		return h + total
	}
	var hdr [perfHeaderSize + 4]byte
	binary.LittleEndian.PutUint32(hdr[0:], typ)
	binary.LittleEndian.PutUint16(hdr[4:], misc)
	binary.LittleEndian.PutUint16(hdr[6:], uint16(total))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(raw))
	h = r.put(h, hdr[:])
	h = r.put(h, meta)
	h = r.put(h, pkt)
	var pad [8]byte
	return r.put(h, pad[:raw-uint64(len(meta)+len(pkt))])
}

const (
	perfLostSize     = 24
	perfRecordLost   = 2 // PERF_RECORD_LOST
	perfRecordSample = 9 // PERF_RECORD_SAMPLE
)

var (
	errNotOnCPU error = syscall.EOPNOTSUPP
	errNoSpace  error = syscall.ENOSPC
)

// put copies b at h, wrapping, and returns the position after it; the
// caller holds head's lock bit and checked the space.
func (r *perfRing) put(h uint64, b []byte) uint64 {
	for len(b) > 0 {
		n := copy(r.buf[h&r.mask:], b)
		b = b[n:]
		h += uint64(n)
	}
	return h
}

// get copies the bytes at t into b, wrapping, and returns the position
// after them; the caller holds rmu and saw them published.
func (r *perfRing) get(t uint64, b []byte) uint64 {
	for len(b) > 0 {
		n := copy(b, r.buf[t&r.mask:])
		b = b[n:]
		t += uint64(n)
	}
	return t
}

func (a *PerfEventArray) notify() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// PerfRecord is one record read from a perf event array.
type PerfRecord struct {
	// CPU is the slot's CPU.
	CPU int
	// RawSample is the sample's data (meta then packet bytes, then the
	// kernel's zero padding); nil for a loss record.
	RawSample []byte
	// FrameOffset and FrameLen locate the frame bytes the program asked
	// for (BPF_F_CTXLEN_MASK) in RawSample, after its own data.
	FrameOffset, FrameLen int
	// LostSamples is the number of samples refused (ring full) before this
	// point, in a loss record (which comes just before the next sample
	// that fitted, as in the kernel's ring).
	LostSamples uint64
}

// PerfReader reads the records of every slot of a PerfEventArray, like
// cilium/ebpf's perf.Reader over the kernel's per-CPU rings.
type PerfReader struct {
	a *PerfEventArray
	// next is the slot to look at first (round robin).
	next int
	// rings is poll's list, kept between calls.
	rings []*perfRing
}

// NewPerfReader opens every slot i of a for CPU i with perCPUBytes each and
// returns a reader for them.
func NewPerfReader(a *PerfEventArray, perCPUBytes int) (*PerfReader, error) {
	for i := range a.spec.MaxEntries {
		if err := a.Open(i, int(i), perCPUBytes); err != nil {
			return nil, err
		}
	}
	return &PerfReader{a: a}, nil
}

// Read returns the next record, waiting until one comes or ctx ends. One
// goroutine reads at a time.
func (p *PerfReader) Read(ctx context.Context) (PerfRecord, error) {
	for {
		if rec, ok := p.poll(); ok {
			return rec, nil
		}
		p.a.waiting.Add(1)
		rec, ok := p.poll()
		if ok {
			p.a.waiting.Add(-1)
			return rec, nil
		}
		select {
		case <-ctx.Done():
			p.a.waiting.Add(-1)
			return PerfRecord{}, fmt.Errorf("perf reader: %w", ctx.Err())
		case <-p.a.wake:
			p.a.waiting.Add(-1)
		}
	}
}

// Poll returns the next record if one is waiting, without blocking.
func (p *PerfReader) Poll() (PerfRecord, bool) { return p.poll() }

// poll takes one record (or loss report) from any ring: the retired ones
// first, then the slots round robin.
func (p *PerfReader) poll() (PerfRecord, bool) {
	p.a.mu.Lock()
	p.rings = append(p.rings[:0], p.a.closed...)
	p.a.mu.Unlock()
	for i := range p.a.slots {
		j := (p.next + i) % len(p.a.slots)
		if r := p.a.slots[j].Load(); r != nil {
			p.rings = append(p.rings, r)
		}
	}
	for _, r := range p.rings {
		if rec, ok := r.take(); ok {
			p.next = (p.next + 1) % max(len(p.a.slots), 1)
			return rec, true
		}
	}
	clear(p.rings)
	// Drained retired rings are dropped.
	p.a.mu.Lock()
	live := p.a.closed[:0]
	for _, r := range p.a.closed {
		if r.head.Load()&^perfHeadLocked != r.tail.Load() {
			live = append(live, r)
		}
	}
	clear(p.a.closed[len(live):])
	p.a.closed = live
	p.a.mu.Unlock()
	return PerfRecord{}, false
}

// take copies out the oldest record published in r, if any, and frees its
// space.
func (r *perfRing) take() (PerfRecord, bool) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	t := r.tail.Load()
	if r.head.Load()&^perfHeadLocked == t {
		return PerfRecord{}, false
	}
	var hdr [perfHeaderSize]byte
	t = r.get(t, hdr[:])
	typ := binary.LittleEndian.Uint32(hdr[:])
	if typ == perfRecordLost {
		var rest [perfLostSize - perfHeaderSize]byte
		r.tail.Store(r.get(t, rest[:]))
		return PerfRecord{CPU: r.cpu, LostSamples: binary.LittleEndian.Uint64(rest[8:])}, true
	}
	var size [4]byte
	t = r.get(t, size[:])
	raw := make([]byte, binary.LittleEndian.Uint32(size[:]))
	r.tail.Store(r.get(t, raw))
	meta, pkt := int(binary.LittleEndian.Uint16(hdr[4:])), int(typ>>16)
	if meta+pkt > len(raw) {
		meta, pkt = len(raw), 0
	}
	return PerfRecord{CPU: r.cpu, RawSample: raw, FrameOffset: meta, FrameLen: pkt}, true
}
