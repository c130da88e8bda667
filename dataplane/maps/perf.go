package maps

import (
	"context"
	"encoding/binary"
	"fmt"
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
	wake  chan struct{}
	// held keeps rings that were replaced or closed readable until the
	// reader drains them.
	mu     sync.Mutex
	closed []*perfRing
}

// perfRing is one slot's ring: records in a byte ring, producer side under
// mu (programs of one CPU, so uncontended).
type perfRing struct {
	cpu  int
	mu   sync.Mutex
	buf  []byte
	head uint64 // bytes written (producer)
	tail uint64 // bytes read (consumer)
	lost uint64 // records refused since the reader last saw a loss
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

// Open puts a ring of perCPUBytes (at least one page) in slot index, for
// programs running on CPU slot cpu (what the kernel's event->oncpu is).
func (a *PerfEventArray) Open(index uint32, cpu int, perCPUBytes int) error {
	if index >= a.spec.MaxEntries {
		return mapErr(a.spec.Name, syscall.E2BIG, "slot %d of %d", index, a.spec.MaxEntries)
	}
	if perCPUBytes < pageSize {
		perCPUBytes = pageSize
	}
	if uint64(perCPUBytes) > maxMapBytes {
		return mapErr(a.spec.Name, syscall.ENOMEM, "%d bytes is over xnic's cap", perCPUBytes)
	}
	if old := a.slots[index].Swap(&perfRing{cpu: cpu, buf: make([]byte, perCPUBytes)}); old != nil {
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
// CPU slot cpu. It does not allocate.
func (a *PerfEventArray) Output(index uint64, cpu int, meta, pkt []byte) error {
	if index == PerfCurrentCPU {
		index = uint64(cpu)
	}
	if index >= uint64(a.spec.MaxEntries) {
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
	r.mu.Lock()
	need := total
	if r.lost != 0 {
		need += perfLostSize
	}
	// perf_output_begin: the ring never fills completely (CIRC_SPACE).
	if r.head+need-r.tail >= uint64(len(r.buf)) {
		r.lost++
		r.mu.Unlock()
		return errNoSpace
	}
	if r.lost != 0 {
		// The PERF_RECORD_LOST the kernel writes ahead of the next
		// sample that fits: header, event id, count.
		var rec [perfLostSize]byte
		binary.LittleEndian.PutUint32(rec[0:], perfRecordLost)
		binary.LittleEndian.PutUint16(rec[6:], perfLostSize)
		binary.LittleEndian.PutUint64(rec[16:], r.lost)
		r.put(rec[:])
		r.lost = 0
	}
	var hdr [perfHeaderSize + 4]byte
	// type, misc, size as perf_event_header; xnic keeps the frame bytes'
	// length in type's upper half and the data's in misc (the consumer's
	// FrameOffset/FrameLen; the kernel's sample does not say).
	binary.LittleEndian.PutUint32(hdr[0:], perfRecordSample|uint32(min(len(pkt), 0xffff))<<16)
	binary.LittleEndian.PutUint16(hdr[4:], uint16(min(len(meta), 0xffff)))
	binary.LittleEndian.PutUint16(hdr[6:], uint16(total))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(raw))
	r.put(hdr[:])
	r.put(meta)
	r.put(pkt)
	var pad [8]byte
	r.put(pad[:raw-n])
	r.mu.Unlock()
	a.notify()
	return nil
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

// put copies b at head, wrapping; caller holds mu and checked the space.
func (r *perfRing) put(b []byte) {
	for len(b) > 0 {
		at := r.head % uint64(len(r.buf))
		n := copy(r.buf[at:], b)
		b = b[n:]
		r.head += uint64(n)
	}
}

func (r *perfRing) get(b []byte) {
	for len(b) > 0 {
		at := r.tail % uint64(len(r.buf))
		n := copy(b, r.buf[at:])
		b = b[n:]
		r.tail += uint64(n)
	}
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
		select {
		case <-ctx.Done():
			return PerfRecord{}, fmt.Errorf("perf reader: %w", ctx.Err())
		case <-p.a.wake:
		}
	}
}

// Poll returns the next record if one is waiting, without blocking.
func (p *PerfReader) Poll() (PerfRecord, bool) { return p.poll() }

// poll takes one record (or loss report) from any ring.
func (p *PerfReader) poll() (PerfRecord, bool) {
	p.a.mu.Lock()
	rings := make([]*perfRing, 0, len(p.a.closed)+len(p.a.slots))
	rings = append(rings, p.a.closed...)
	p.a.mu.Unlock()
	for i := range p.a.slots {
		j := (p.next + i) % len(p.a.slots)
		if r := p.a.slots[j].Load(); r != nil {
			rings = append(rings, r)
		}
	}
	for _, r := range rings {
		if rec, ok := r.take(); ok {
			p.next = (p.next + 1) % max(len(p.a.slots), 1)
			return rec, true
		}
	}
	// Drained retired rings are dropped.
	p.a.mu.Lock()
	live := p.a.closed[:0]
	for _, r := range p.a.closed {
		r.mu.Lock()
		if r.head != r.tail {
			live = append(live, r)
		}
		r.mu.Unlock()
	}
	p.a.closed = live
	p.a.mu.Unlock()
	return PerfRecord{}, false
}

func (r *perfRing) take() (PerfRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.head == r.tail {
		return PerfRecord{}, false
	}
	var hdr [perfHeaderSize]byte
	r.get(hdr[:])
	typ := binary.LittleEndian.Uint32(hdr[:])
	if typ == perfRecordLost {
		var rest [perfLostSize - perfHeaderSize]byte
		r.get(rest[:])
		return PerfRecord{CPU: r.cpu, LostSamples: binary.LittleEndian.Uint64(rest[8:])}, true
	}
	var size [4]byte
	r.get(size[:])
	raw := make([]byte, binary.LittleEndian.Uint32(size[:]))
	r.get(raw)
	meta, pkt := int(binary.LittleEndian.Uint16(hdr[4:])), int(typ>>16)
	if meta+pkt > len(raw) {
		meta, pkt = len(raw), 0
	}
	return PerfRecord{CPU: r.cpu, RawSample: raw, FrameOffset: meta, FrameLen: pkt}, true
}
