package bpf

import (
	"encoding/binary"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
)

// Smaller helpers, after kernel/bpf/helpers.c and the map implementations:
//
//   - bpf_get_numa_node_id (42): 0. xnic's runners are goroutines, not
//     CPUs with a NUMA node; one node is what a program sees on most
//     machines it would run on.
//   - bpf_strncmp (182): lib/string.c strncmp of s1 (s1_sz bytes at most)
//     and the NUL-terminated constant s2: -1, 0 or 1.
//   - bpf_map_lookup_percpu_elem (195): the value of key in CPU slot cpu of
//     a per-CPU array or hash, NULL for a CPU past the map's slots.
//   - bpf_ringbuf_query (134): maps.RingBuf.Query (BPF_RB_AVAIL_DATA,
//     RING_SIZE, CONS_POS, PROD_POS; 0 for other flags).
//   - bpf_for_each_map_elem (164): the callback (map, &key, &value, ctx)
//     for each element of an array, hash or LRU hash (their per-CPU forms:
//     this CPU's value), in the map's NextKey order, until it returns 1;
//     the number of elements visited; flags other than 0 are -EINVAL.
func (r *Runner) strncmp(p *Program, pc int, reg *[16]uint64) uint64 {
	n := reg[2] & 0xffffffff
	if n == 0 {
		return r.argFault(p, pc, argSize)
	}
	s1 := loadSlice(r.regions, reg[1], n)
	if s1 == nil {
		return r.argFault(p, pc, argMem)
	}
	s2 := r.cString(reg[3])
	for i := range s1 {
		c1, c2 := s1[i], byte(0)
		if i < len(s2) {
			c2 = s2[i]
		}
		if c1 != c2 {
			if c1 < c2 {
				return ^uint64(0) // -1
			}
			return 1
		}
		if c1 == 0 {
			break
		}
	}
	return 0
}

func (r *Runner) lookupPercpuElem(p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	switch m.spec.Type {
	case ebpf.PerCPUArray, ebpf.PerCPUHash, ebpf.LRUCPUHash:
	default:
		return r.argFault(p, pc, argMapType)
	}
	key := loadSlice(r.regions, reg[2], uint64(m.keySize))
	if key == nil {
		return r.argFault(p, pc, argKey)
	}
	cpu := uint32(reg[3])
	if uint64(cpu) >= uint64(max(m.spec.NumCPU, 1)) {
		return 0
	}
	var v []byte
	if m.arr != nil {
		v = m.arrayValue(binary.LittleEndian.Uint32(key), int(cpu))
	} else {
		v = m.m.Lookup(key, int(cpu))
	}
	if v == nil {
		return 0
	}
	ptr := r.addRegion(v, m.progWritable)
	if ptr == 0 {
		r.setFault(p, pc, faultRegions, 0, 0)
	}
	return ptr
}

type ringQuerier interface{ Query(flags uint64) uint64 }

func (r *Runner) ringbufQuery(p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	q, ok := m.m.(ringQuerier)
	if !ok || m.spec.Type != ebpf.RingBuf {
		return r.argFault(p, pc, argMapType)
	}
	return q.Query(reg[2])
}

// keyBufs are scratch keys for bpf_for_each_map_elem, pooled by pointer so
// that steady state does not allocate.
var keyBufs sync.Pool

func getKeyBuf(n int) *[]byte {
	if b, ok := keyBufs.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, max(n, 64))
	return &b
}

func (r *Runner) forEachMapElem(p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	switch m.spec.Type {
	case ebpf.Array, ebpf.PerCPUArray, ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash:
	default:
		return r.argFault(p, pc, argMapType)
	}
	fn, ctx, flags := reg[2], reg[3], reg[4]
	if fn>>32 != regionFunc || uint64(uint32(fn)) >= uint64(len(p.code)) || !p.funcs[uint32(fn)] {
		return r.argFault(p, pc, argFunc)
	}
	if flags != 0 {
		return errno(syscall.EINVAL)
	}
	mapv := reg[1]
	kb := getKeyBuf(int(m.keySize))
	defer keyBufs.Put(kb)
	key := *kb
	prev := getKeyBuf(int(m.keySize))
	defer keyBufs.Put(prev)
	var last []byte
	n := uint64(0)
	nreg := len(r.regions)
	for {
		if err := m.m.NextKey(last, key); err != nil {
			return n // end of the map (ENOENT) or a concurrent change
		}
		v := m.m.Lookup(key, r.cpu)
		copy(*prev, key)
		last = *prev
		if v == nil {
			continue // deleted since NextKey
		}
		kp := r.addRegion(key, false)
		vp := r.addRegion(v, m.progWritable)
		if kp == 0 || vp == 0 {
			r.setFault(p, pc, faultRegions, 0, 0)
			return 0
		}
		ret, ok := r.callback4(p, pc, uint32(fn), mapv, kp, vp, ctx, reg[10])
		r.regions = r.regions[:nreg] // the element's pointers die with the call
		n++
		if !ok {
			return 0
		}
		if ret == 1 {
			return n
		}
	}
}

// callback4 runs subprogram target with r1-r4 in a frame below the caller's,
// as bpf_loop does with two arguments.
func (r *Runner) callback4(p *Program, pc int, target uint32, r1, r2, r3, r4, fp uint64) (uint64, bool) {
	if r.depth+1 >= maxFrames {
		r.setFault(p, pc, faultCallDepth, 0, 0)
		return 0, false
	}
	r.budget -= int64(len(p.code)-int(target)) + 1
	if r.budget < 0 {
		r.setFault(p, pc, faultBudget, 0, 0)
		return 0, false
	}
	r.depth++
	base := r.depth
	reg := &r.regs[base]
	clear(reg[:16])
	reg[1], reg[2], reg[3], reg[4], reg[10] = r1, r2, r3, r4, fp-frameSize
	q, qp, done := r.step(p, int(target), base, reg)
	var ret uint64
	if done {
		ret = reg[0]
	} else {
		ret = r.slow(qp, q, base, reg)
	}
	r.depth--
	return ret, !r.faulted
}
