package maps

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
)

var errNotSupp error = syscall.EOPNOTSUPP

// Queue is BPF_MAP_TYPE_QUEUE and BPF_MAP_TYPE_STACK
// (kernel/bpf/queue_stack_maps.c): max_entries values of value_size bytes,
// no keys. Push adds one (a full map is E2BIG, or with BPF_EXIST the oldest
// value is dropped to make room); Pop and Peek take the oldest (queue) or
// the newest (stack) value, ENOENT when empty (the output zeroed). Through the Map interface,
// as the kernel's syscall: Update pushes, Lookup peeks, Delete and NextKey
// are EINVAL; Pop is BPF_MAP_LOOKUP_AND_DELETE_ELEM.
type Queue struct {
	spec       Spec
	stack      bool
	mu         sync.Mutex
	data       []byte // (max_entries+1) slots
	head, tail uint32 // slot indexes; empty when equal
	size       uint32 // max_entries + 1
	peek       []byte // Lookup's copy, valid until the next Lookup
}

func newQueue(spec Spec) (*Queue, error) {
	if err := checkFlagMask(spec, FlagNumaNode|flagAccessMask); err != nil {
		return nil, err
	}
	if spec.KeySize != 0 || spec.ValueSize == 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: a %v has no keys and a value size", spec.KeySize, spec.ValueSize, spec.Type)
	}
	if uint64(spec.MaxEntries+1)*uint64(spec.ValueSize) > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d values of %d bytes is over xnic's cap", spec.MaxEntries, spec.ValueSize)
	}
	spec.NumCPU = 0
	n := spec.MaxEntries + 1
	return &Queue{spec: spec, stack: spec.Type == ebpf.Stack, data: make([]byte, uint64(n)*uint64(spec.ValueSize)),
		size: n, peek: make([]byte, spec.ValueSize)}, nil
}

// Spec returns the map's spec.
func (q *Queue) Spec() Spec { return q.spec }

func (q *Queue) slot(i uint32) []byte {
	off := uint64(i) * uint64(q.spec.ValueSize)
	return q.data[off : off+uint64(q.spec.ValueSize)]
}

// Push adds value (flags: 0 or BPF_EXIST, which overwrites the oldest
// value of a full map).
func (q *Queue) Push(value []byte, flags uint64) error {
	if flags&^UpdateExist != 0 {
		return errBadFlags
	}
	if len(value) != int(q.spec.ValueSize) {
		return errBadValueSize
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	next := q.head + 1
	if next >= q.size {
		next = 0
	}
	if next == q.tail { // full
		if flags&UpdateExist == 0 {
			return errFull
		}
		if q.tail++; q.tail >= q.size {
			q.tail = 0
		}
	}
	copy(q.slot(q.head), value)
	q.head = next
	return nil
}

// Pop copies the next value into out and removes it.
func (q *Queue) Pop(out []byte) error { return q.take(out, true) }

// Peek copies the next value into out.
func (q *Queue) Peek(out []byte) error { return q.take(out, false) }

func (q *Queue) take(out []byte, remove bool) error {
	if len(out) < int(q.spec.ValueSize) {
		return errBadValueSize
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == q.tail {
		clear(out[:q.spec.ValueSize]) // as queue_stack_map_pop/peek
		return errNoEntry
	}
	i := q.tail
	if q.stack {
		if i = q.head; i == 0 {
			i = q.size
		}
		i--
	}
	copy(out, q.slot(i))
	if remove {
		if q.stack {
			q.head = i
		} else if q.tail++; q.tail >= q.size {
			q.tail = 0
		}
	}
	return nil
}

// Lookup peeks (key must be empty); the slice is the map's copy, valid
// until the next Lookup.
func (q *Queue) Lookup(key []byte, cpu int) []byte {
	if len(key) != 0 || q.Peek(q.peek) != nil {
		return nil
	}
	return q.peek
}

// Update pushes value (key must be empty).
func (q *Queue) Update(key, value []byte, flags uint64, cpu int) error {
	if len(key) != 0 {
		return errBadKeySize
	}
	return q.Push(value, flags)
}

// Delete is EINVAL, as the kernel's.
func (q *Queue) Delete(key []byte) error { return errBadFlags }

// NextKey is EINVAL: no keys.
func (q *Queue) NextKey(key, next []byte) error { return errBadFlags }

// BloomFilter is BPF_MAP_TYPE_BLOOM_FILTER (kernel/bpf/bloom_filter.c):
// Push adds a value (flags must be 0), Peek says whether a value may be in
// the set (nil) or surely is not (ENOENT); Pop is EOPNOTSUPP. The bit array
// and hashes are the kernel's: nr_hash_funcs from map_extra (1-15, 0 means
// 5), max_entries*nr_hash_funcs/5*7 bits rounded up to a power of two (at
// least 64), jhash2 (or jhash for sizes not a multiple of 4) seeded with a
// random number, or 0 with BPF_F_ZERO_SEED: with that flag the same values
// set the same bits as in the kernel, false positives included.
type BloomFilter struct {
	spec  Spec
	bits  []uint64 // written with atomic-free ORs under mu
	mask  uint32
	funcs uint32
	seed  uint32
	mu    sync.RWMutex
}

func newBloomFilter(spec Spec) (*BloomFilter, error) {
	if err := checkFlagMask(spec, FlagNumaNode|FlagZeroSeed|flagAccessMask); err != nil {
		return nil, err
	}
	if spec.KeySize != 0 || spec.ValueSize == 0 || spec.MapExtra > 15 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d, map_extra %d: a bloom filter has no keys, a value size and at most 15 hash functions", spec.KeySize, spec.ValueSize, spec.MapExtra)
	}
	funcs := uint32(spec.MapExtra & 0xf)
	if funcs == 0 {
		funcs = 5
	}
	over, nbits := bits.Mul32(spec.MaxEntries, funcs)
	var mask uint32
	n64 := uint64(nbits/5) * 7
	if over != 0 || n64 > 1<<31 {
		mask = 1<<32 - 1
	} else {
		n := uint32(n64)
		if n <= 64 {
			n = 64
		} else {
			n = 1 << bits.Len32(n-1)
		}
		mask = n - 1
	}
	if (uint64(mask)+1)/8 > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d bits is over xnic's cap", uint64(mask)+1)
	}
	var seed uint32
	if spec.Flags&FlagZeroSeed == 0 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint32(b[:])
	}
	spec.NumCPU = 0
	return &BloomFilter{spec: spec, bits: make([]uint64, (uint64(mask)+64)/64), mask: mask, funcs: funcs, seed: seed}, nil
}

// Spec returns the map's spec.
func (f *BloomFilter) Spec() Spec { return f.spec }

func (f *BloomFilter) hash(v []byte, i uint32) uint32 {
	if len(v)%4 == 0 {
		return jhash2(v, f.seed+i) & f.mask
	}
	return jhash(v, f.seed+i) & f.mask
}

// Push adds value.
func (f *BloomFilter) Push(value []byte, flags uint64) error {
	if flags != UpdateAny {
		return errBadFlags
	}
	if len(value) != int(f.spec.ValueSize) {
		return errBadValueSize
	}
	f.mu.Lock()
	for i := range f.funcs {
		h := f.hash(value, i)
		f.bits[h/64] |= 1 << (h % 64)
	}
	f.mu.Unlock()
	return nil
}

// Peek returns nil when value may have been pushed, ENOENT when it was not.
func (f *BloomFilter) Peek(value []byte) error {
	if len(value) != int(f.spec.ValueSize) {
		return errBadValueSize
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i := range f.funcs {
		h := f.hash(value, i)
		if f.bits[h/64]&(1<<(h%64)) == 0 {
			return errNoEntry
		}
	}
	return nil
}

// Pop is EOPNOTSUPP, as the kernel's.
func (f *BloomFilter) Pop(out []byte) error { return errNotSupp }

// Lookup returns nil: test membership with Peek (the syscall's lookup of a
// bloom filter is a peek with the value as input).
func (f *BloomFilter) Lookup(key []byte, cpu int) []byte { return nil }

// Update pushes value (key must be empty).
func (f *BloomFilter) Update(key, value []byte, flags uint64, cpu int) error {
	if len(key) != 0 {
		return errBadKeySize
	}
	return f.Push(value, flags)
}

// Delete is EOPNOTSUPP.
func (f *BloomFilter) Delete(key []byte) error { return errNotSupp }

// NextKey is EOPNOTSUPP.
func (f *BloomFilter) NextKey(key, next []byte) error { return errNotSupp }
