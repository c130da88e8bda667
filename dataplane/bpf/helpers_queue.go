package bpf

import (
	"github.com/cilium/ebpf"
)

// bpf_map_push_elem (87), bpf_map_pop_elem (88) and bpf_map_peek_elem (89)
// on queues, stacks and bloom filters (maps.Queue, maps.BloomFilter): push
// reads the value; pop and peek write it for queues and stacks, while a
// bloom filter's peek reads the value to test (its pop is -EOPNOTSUPP).
type pushPopper interface {
	Push(value []byte, flags uint64) error
	Pop(out []byte) error
	Peek(out []byte) error
}

func (r *Runner) pushPop(p *Program, pc int, id int32, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	q, ok := m.m.(pushPopper)
	if !ok {
		return r.argFault(p, pc, argMapType)
	}
	n := uint64(m.valueSize)
	bloom := m.spec.Type == ebpf.BloomFilter
	var v []byte
	if id == helperMapPushElem || bloom && id == helperMapPeekElem {
		v = loadSlice(r.regions, reg[2], n)
	} else {
		v = storeSlice(r.regions, reg[2], n)
	}
	if v == nil {
		return r.argFault(p, pc, argValue)
	}
	switch id {
	case helperMapPushElem:
		return errnoOf(q.Push(v, reg[3]))
	case helperMapPopElem:
		return errnoOf(q.Pop(v))
	}
	return errnoOf(q.Peek(v))
}
