package bpf

import (
	"math"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// RingBuffer is what a BPF_MAP_TYPE_RINGBUF map offers the ringbuf helpers
// (maps.RingBuf implements it). Reserve returns a record's payload and the
// offset naming it, or ok=false when the ring has no room; Submit publishes
// the record, Discard drops it; Output copies data in as one record.
type RingBuffer interface {
	Reserve(size, flags uint64) (payload []byte, off uint64, ok bool)
	Submit(off, flags uint64) error
	Discard(off, flags uint64) error
	Output(data []byte, flags uint64) error
}

var _ RingBuffer = (*maps.RingBuf)(nil)

// ringRecord is a record reserved by the running program.
type ringRecord struct {
	region uint64
	off    uint64
	rb     RingBuffer
}

func ringOf(m maps.Map) RingBuffer {
	rb, _ := m.(RingBuffer)
	return rb
}

// ringbuf runs the bpf_ringbuf_* helpers.
func (r *Runner) ringbuf(p *Program, pc int, id int32, reg *[16]uint64) uint64 {
	switch id {
	case helperRingbufOutput, helperRingbufReserve:
		m := r.mapArg(reg[1])
		if m == nil {
			return r.argFault(p, pc, argMap)
		}
		if m.ring == nil {
			return r.argFault(p, pc, argMapType)
		}
		if id == helperRingbufOutput {
			size := reg[3]
			if size == 0 || size > math.MaxUint32 {
				return r.argFault(p, pc, argSize)
			}
			data := loadSlice(r.regions, reg[2], size)
			if data == nil {
				return r.argFault(p, pc, argMem)
			}
			return errnoOf(m.ring.Output(data, reg[4]))
		}
		rec, off, ok := m.ring.Reserve(reg[2], reg[3])
		if !ok {
			return 0
		}
		ptr := r.addRegion(rec, true)
		if ptr == 0 {
			_ = m.ring.Discard(off, 0)
			r.setFault(p, pc, faultRegions, 0, 0)
			return 0
		}
		r.records = append(r.records, ringRecord{region: ptr >> 32, off: off, rb: m.ring})
		return ptr
	}
	// submit / discard: the pointer must be a record reserved in this run.
	ptr := reg[1]
	for i := range r.records {
		rc := &r.records[i]
		if rc.region == ptr>>32 && ptr&math.MaxUint32 == 0 {
			var err error
			if id == helperRingbufDiscard {
				err = rc.rb.Discard(rc.off, reg[2])
			} else {
				err = rc.rb.Submit(rc.off, reg[2])
			}
			if err != nil {
				return r.argFault(p, pc, argRecord)
			}
			// The record is gone: its region no longer gives access.
			r.regions[rc.region] = region{lo: 1}
			r.jit.first = 0 // jit_first.go
			r.records = append(r.records[:i], r.records[i+1:]...)
			return 0
		}
	}
	return r.argFault(p, pc, argRecord)
}

// dropRecords discards records a faulted or careless program left reserved
// (the kernel's verifier would not have loaded such a program).
func (r *Runner) dropRecords() {
	for i := range r.records {
		_ = r.records[i].rb.Discard(r.records[i].off, 0)
	}
	r.records = r.records[:0]
}

// ringbufMaxRecord is the longest record Reserve accepts (maps.RingBuf:
// the kernel's length field less its two flag bits).
const ringbufMaxRecord = 1<<32/4 - 1

// ringbufHdrSize is a record's header (BPF_RINGBUF_HDR_SZ): a record takes
// its payload plus the header, rounded up to 8 bytes (maps' recLen).
const ringbufHdrSize = 8
