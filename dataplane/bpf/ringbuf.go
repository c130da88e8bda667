package bpf

import (
	"math"
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// RingBuffer is what a BPF_MAP_TYPE_RINGBUF map offers the ringbuf helpers.
// Reserve returns a record of size bytes the program fills in place, or nil
// when the ring is full; Commit publishes it to the consumer (or drops it when
// discard is set); Output copies data in as one record.
type RingBuffer interface {
	Reserve(size uint32) []byte
	Commit(rec []byte, discard bool)
	Output(data []byte) error
}

// ringRecord is a record reserved by the running program.
type ringRecord struct {
	region uint64
	rec    []byte
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
			if reg[4]&^(ringbufNoWakeup|ringbufForceWake) != 0 {
				return errno(syscall.EINVAL)
			}
			return errnoOf(m.ring.Output(data))
		}
		size, flags := reg[2], reg[3]
		if flags != 0 || size > math.MaxUint32 || size == 0 {
			return 0
		}
		rec := m.ring.Reserve(uint32(size))
		if rec == nil {
			return 0
		}
		ptr := r.addRegion(rec, true)
		if ptr == 0 {
			m.ring.Commit(rec, true)
			r.setFault(p, pc, faultRegions, 0, 0)
			return 0
		}
		r.records = append(r.records, ringRecord{region: ptr >> 32, rec: rec, rb: m.ring})
		return ptr
	}
	// submit / discard: the pointer must be a record reserved in this run.
	ptr := reg[1]
	for i := range r.records {
		rc := &r.records[i]
		if rc.region == ptr>>32 && ptr&math.MaxUint32 == 0 {
			rc.rb.Commit(rc.rec, id == helperRingbufDiscard)
			// The record is gone: its region no longer gives access.
			r.regions[rc.region] = region{lo: 1}
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
		r.records[i].rb.Commit(r.records[i].rec, true)
	}
	r.records = r.records[:0]
}
