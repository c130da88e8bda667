package maps

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf"
)

// Hash is BPF_MAP_TYPE_HASH, PERCPU_HASH, LRU_HASH and LRU_PERCPU_HASH
// (kernel/bpf/hashtab.c): a table of 2^n chained buckets (n the smallest with
// 2^n >= max_entries), new entries at the head of their chain as the kernel's
// hlist_nulls_add_head_rcu, so NextKey walks the same way the kernel's
// htab_map_get_next_key does (bucket by bucket, chain order within one; a key
// that is not in the map restarts from the first). The bucket a key lands in
// depends on a per-map random seed, as in the kernel, so the order itself
// differs from the kernel's.
//
// # Memory
//
// Unless BPF_F_NO_PREALLOC is set, max_entries (plus a few spares, and one
// per CPU slot for replacements, like the kernel's extra_elems) entries are
// allocated at creation and recycled through a free list: Update and Delete
// never allocate. Replacing a key swaps entries with the caller's per-CPU
// spare without touching the free list's lock. With BPF_F_NO_PREALLOC each insert allocates a fresh entry
// from the Go heap and a deleted one is left to the garbage collector (what a
// stale Lookup slice shows then never changes).
//
// # Locking
//
// Buckets are guarded by striped locks (stripe = bucket index modulo the
// stripe count; spin locks, hash_lock.go, which native code can take as
// well), each with a sequence counter that writers make odd while they
// relink a chain. Lookup takes no lock and writes no shared memory: it reads
// the sequence, walks the chain through atomic links comparing keys held as
// atomic 64-bit words, and retries (after a few tries, under the stripe lock)
// if the sequence moved, as a reader may have followed an entry that was
// unlinked and reused meanwhile; the kernel's hlist_nulls walk solves the same
// problem. Update, Delete and NextKey hold the key's stripe lock. The free list
// and the live count have their own lock, always taken after a stripe lock,
// never before. LRU eviction (evictMu, a spin lock as the stripes', so that
// native code can sweep too) takes one stripe lock at a time, never
// while the evicting updater holds one.
//
// # LRU
//
// The kernel's LRU (kernel/bpf/bpf_lru_list.c) keeps active/inactive lists per
// CPU or shared. xnic approximates it with a CLOCK (second chance) sweep over
// the preallocated entries: a program's Lookup sets the entry's reference bit,
// the sweep clears set bits and evicts the first entry whose bit is clear.
// Entries recently looked up therefore survive one sweep more than others; it
// is not an exact LRU order, and which key is evicted differs from the
// kernel's. As in the kernel, an LRU map never reports E2BIG when full: an
// insert evicts. Replacing an existing key does not evict (the kernel may).
type Hash struct {
	spec     Spec
	percpu   bool
	lru      bool
	prealloc bool
	elemSize uint64 // value_size rounded up to 8 (per-CPU stride)
	ncpu     int    // 1 unless per-CPU
	valLen   uint64 // bytes of value storage per entry: elemSize*ncpu, or value_size
	pcpu     []byte // preallocated per-CPU values, CPU-major: slot c of entry idx at (c*len(slab)+idx)*elemSize
	s0, s1   uint64 // hashOf's seeds

	mask    uint64                  // len(buckets)-1; immutable
	buckets []atomic.Pointer[entry] // chain heads; stored under stripes[b&smask].mu
	stripes []stripe                // immutable slice
	smask   uint64                  // len(stripes)-1
	nwords  int                     // 64-bit words per key
	maxWalk int                     // longest chain walk before a reader gives up and locks

	freeMu spinLock
	free   []*entry // guarded by freeMu; capacity fixed at creation
	count  uint32   // live entries; guarded by freeMu

	extra []atomic.Pointer[entry] // per-CPU spare entries for replacements (prealloc only); immutable slice

	evictMu spinLock // native code takes it too (HashTable.EvictLock)
	slab    []entry  // preallocated entries; immutable slice
	hand    int      // CLOCK hand into slab; guarded by evictMu
}

type stripe struct {
	mu  spinLock      // hash_lock.go: native code takes it too (HashTable.LockOff)
	seq atomic.Uint64 // odd while a writer (holding mu) relinks one of the stripe's chains
	_   [64 - 16]byte // keep stripes on separate cache lines
}

// write runs fn, which relinks chains of the stripe, with the sequence odd;
// the caller holds s.mu.
func (s *stripe) write(fn func()) {
	s.seq.Add(1)
	fn()
	s.seq.Add(1)
}

// entry is one key/value pair. kw (the key as little-endian 64-bit words,
// zero-padded), val's slice header and hash are set before the entry is
// linked (kw and hash with atomic stores: a lock-free reader may still be
// looking at a reused entry) and not changed while it is linked. next is
// stored under the stripe lock and loaded by lock-free readers.
type entry struct {
	idx  int // index in the slab (-1: allocated alone, BPF_F_NO_PREALLOC); immutable
	next atomic.Pointer[entry]
	kw   []uint64 // accessed only atomically
	val  []byte
	hash atomic.Uint64 // also read by the LRU sweep without the stripe lock
	live atomic.Bool   // linked in a chain; written under the stripe lock
	ref  atomic.Uint32 // LRU reference bit, set by Lookup
}

// keyWord returns word i of key as stored in entry.kw.
func keyWord(key []byte, i int) uint64 {
	off := i * 8
	switch len(key) - off {
	case 8, 9, 10, 11, 12, 13, 14, 15, 16:
		return binary.LittleEndian.Uint64(key[off:])
	case 4:
		return uint64(binary.LittleEndian.Uint32(key[off:]))
	}
	if off+8 <= len(key) {
		return binary.LittleEndian.Uint64(key[off:])
	}
	var w uint64
	for j := len(key) - 1; j >= i*8; j-- {
		w = w<<8 | uint64(key[j])
	}
	return w
}

func (e *entry) keyIs(key []byte) bool {
	for i := range e.kw {
		if atomic.LoadUint64(&e.kw[i]) != keyWord(key, i) {
			return false
		}
	}
	return true
}

func (e *entry) setKey(key []byte) {
	for i := range e.kw {
		atomic.StoreUint64(&e.kw[i], keyWord(key, i))
	}
}

// copyKey writes the entry's key (size bytes) into dst.
func (e *entry) copyKey(dst []byte, size int) {
	var w [8]byte
	for i := range e.kw {
		binary.LittleEndian.PutUint64(w[:], atomic.LoadUint64(&e.kw[i]))
		copy(dst[i*8:size], w[:])
	}
}

const (
	maxStripes   = 256
	spareEntries = 16 // preallocated beyond max_entries for replace-in-flight
)

func newHash(spec Spec) (*Hash, error) {
	percpu := spec.Type == ebpf.PerCPUHash || spec.Type == ebpf.LRUCPUHash
	lru := spec.Type == ebpf.LRUHash || spec.Type == ebpf.LRUCPUHash
	if err := checkFlagMask(spec, hashFlagMask); err != nil {
		return nil, err
	}
	prealloc := spec.Flags&FlagNoPrealloc == 0
	if !lru && spec.Flags&FlagNoCommonLRU != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "BPF_F_NO_COMMON_LRU is only for LRU maps")
	}
	if lru && !prealloc {
		return nil, mapErr(spec.Name, ENOTSUPP, "an LRU map cannot be BPF_F_NO_PREALLOC")
	}
	if spec.KeySize == 0 || spec.ValueSize == 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: both must be non-zero", spec.KeySize, spec.ValueSize)
	}
	// No MAX_BPF_STACK limit on keys: kernel 6.18 accepts a 513-byte hash key
	// (TestKernelCreateDifferential); programs cannot build such keys anyway.
	if spec.ValueSize >= hashValSizeMax {
		return nil, mapErr(spec.Name, syscall.E2BIG, "value size %d", spec.ValueSize)
	}
	elem := roundUp8(spec.ValueSize)
	if percpu && elem > pcpuMinUnitSize {
		return nil, mapErr(spec.Name, syscall.E2BIG, "per-CPU value size %d is over %d", spec.ValueSize, pcpuMinUnitSize)
	}
	h := &Hash{spec: spec, percpu: percpu, lru: lru, prealloc: prealloc, elemSize: elem, ncpu: 1, s0: rand.Uint64(), s1: rand.Uint64()}
	if percpu {
		h.ncpu = spec.NumCPU
		h.valLen = elem * uint64(h.ncpu)
	} else {
		h.spec.NumCPU = 0
		h.valLen = uint64(spec.ValueSize)
	}
	nb := uint64(1)
	for nb < uint64(spec.MaxEntries) {
		nb <<= 1
	}
	nextra := max(spec.NumCPU, 1) // New filled NumCPU in for every type
	n := uint64(spec.MaxEntries) + spareEntries + uint64(nextra)
	total := nb*8 + n*(uint64(spec.KeySize)+roundUp8(uint32(h.valLen))+64)
	if !prealloc {
		total = nb * 8
	}
	if total > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d bytes is over xnic's %d-byte cap per map; lower max_entries", total, maxMapBytes)
	}
	h.mask = nb - 1
	h.buckets = make([]atomic.Pointer[entry], nb)
	ns := min(nb, maxStripes)
	h.stripes = make([]stripe, ns)
	h.smask = ns - 1
	h.nwords = int(spec.KeySize+7) / 8
	h.maxWalk = int(n) + 1
	if prealloc {
		vstride := roundUp8(uint32(h.valLen))
		nw := uint64(h.nwords)
		keys := make([]uint64, n*nw)
		var vals []byte
		if percpu {
			// CPU-major, so that CPUs updating the same entry do not share
			// cache lines (the kernel's per-CPU areas).
			h.pcpu = make([]byte, n*h.valLen)
		} else {
			vals = make([]byte, n*vstride)
		}
		h.slab = make([]entry, n)
		h.free = make([]*entry, 0, n)
		for i := range h.slab {
			e := &h.slab[i]
			e.idx = i
			k := uint64(i) * nw
			e.kw = keys[k : k+nw : k+nw]
			if !percpu {
				v := uint64(i) * vstride
				e.val = vals[v : v+h.valLen : v+h.valLen]
			}
		}
		for i := len(h.slab) - 1; i >= 0; i-- {
			h.free = append(h.free, &h.slab[i])
		}
		// One spare entry per CPU slot for replacing a key, as the kernel's
		// per-CPU extra_elems: the replaced entry becomes the slot's next
		// spare, and neither step touches the free list's lock.
		h.extra = make([]atomic.Pointer[entry], nextra)
		for i := range h.extra {
			h.extra[i].Store(h.popLocked())
		}
	}
	return h, nil
}

// extraSlot picks the per-CPU spare slot for cpu (any value is safe: slots are
// swapped atomically).
func (h *Hash) extraSlot(cpu int) *atomic.Pointer[entry] {
	if cpu < 0 {
		cpu = 0
	}
	return &h.extra[cpu%len(h.extra)]
}

// Spec returns the map's spec (NumCPU filled in for per-CPU maps).
func (h *Hash) Spec() Spec { return h.spec }

// hashOf hashes a key: the murmur3 finaliser over the first seeded key
// word, then one more round per further word, each xored in with the second
// seed (two rounds for the keys of up to 16 bytes of nearly every XDP map).
// The per-map random seeds decide the buckets, as jhash's random seed does
// in the kernel. Native lookups compute the same (maps.HashTable).
func (h *Hash) hashOf(key []byte) uint64 {
	x := fmix64(keyWord(key, 0) ^ h.s0)
	for i := 1; i*8 < len(key); i++ {
		x = fmix64(x ^ keyWord(key, i) ^ h.s1)
	}
	return x
}

// fmix64 is murmur3's 64-bit finaliser: a bijection that spreads every input
// bit over the whole word.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (h *Hash) stripeOf(hv uint64) *stripe { return &h.stripes[hv&h.mask&h.smask] }

// find walks the chain of hv for key; the caller holds the stripe lock.
func (h *Hash) find(hv uint64, key []byte) (e, prev *entry) {
	for e = h.buckets[hv&h.mask].Load(); e != nil; prev, e = e, e.next.Load() {
		if e.hash.Load() == hv && e.keyIs(key) {
			return e, prev
		}
	}
	return nil, nil
}

// findLockFree is find for a reader without the lock: the answer counts only
// if the stripe's sequence did not move meanwhile (checked by the caller);
// ok is false when the walk grew longer than any real chain (it followed
// reused entries round a loop).
func (h *Hash) findLockFree(hv uint64, key []byte) (e *entry, ok bool) {
	steps := 0
	for e = h.buckets[hv&h.mask].Load(); e != nil; e = e.next.Load() {
		if e.hash.Load() == hv && e.keyIs(key) {
			return e, true
		}
		if steps++; steps > h.maxWalk {
			return nil, false
		}
	}
	return nil, true
}

// get finds key without taking the lock when it can (see Locking).
func (h *Hash) get(hv uint64, key []byte) *entry {
	s := h.stripeOf(hv)
	for range 4 {
		q := s.seq.Load()
		if q&1 != 0 {
			continue
		}
		e, ok := h.findLockFree(hv, key)
		if ok && s.seq.Load() == q {
			return e
		}
	}
	s.mu.Lock()
	e, _ := h.find(hv, key)
	s.mu.Unlock()
	return e
}

// Lookup returns the value of key (CPU slot cpu on per-CPU maps) aliasing the
// entry, or nil. On LRU maps it marks the entry recently used. It does not
// allocate.
func (h *Hash) Lookup(key []byte, cpu int) []byte { return h.lookup(key, cpu, true) }

// Peek is Lookup without marking an LRU entry used: the control plane's read,
// as the kernel's syscall lookup of an LRU map.
func (h *Hash) Peek(key []byte, cpu int) []byte { return h.lookup(key, cpu, false) }

func (h *Hash) lookup(key []byte, cpu int, mark bool) []byte {
	if len(key) != int(h.spec.KeySize) {
		return nil
	}
	if h.percpu {
		if cpu < 0 || cpu >= h.ncpu {
			return nil
		}
	} else {
		cpu = 0
	}
	e := h.get(h.hashOf(key), key)
	if e == nil {
		return nil
	}
	if mark && h.lru && e.ref.Load() == 0 {
		e.ref.Store(1)
	}
	return h.slot(e, cpu)
}

// slot is CPU slot cpu of e's value (the value itself on other maps).
func (h *Hash) slot(e *entry, cpu int) []byte {
	var off uint64
	buf := e.val
	if h.percpu {
		if e.idx >= 0 {
			buf = h.pcpu
			off = (uint64(cpu)*uint64(len(h.slab)) + uint64(e.idx)) * h.elemSize
		} else {
			off = uint64(cpu) * h.elemSize
		}
	}
	end := off + uint64(h.spec.ValueSize)
	return buf[off:end:end]
}

// allocNew takes an entry for a new key: ENOMEM-free E2BIG when max_entries
// are live (the caller of an LRU map evicts instead).
func (h *Hash) allocNew() *entry {
	h.freeMu.Lock()
	defer h.freeMu.Unlock()
	if h.count >= h.spec.MaxEntries {
		return nil
	}
	e := h.popLocked()
	if e != nil {
		h.count++
	}
	return e
}

// allocSpare takes an entry to replace an existing one (the live count does
// not change); nil when every spare is in flight.
func (h *Hash) allocSpare() *entry {
	h.freeMu.Lock()
	defer h.freeMu.Unlock()
	return h.popLocked()
}

func (h *Hash) popLocked() *entry {
	if !h.prealloc {
		// Round the value allocation up to 8 bytes: Go packs smaller
		// pointer-free objects with less alignment.
		val := make([]byte, roundUp8(uint32(h.valLen)))
		return &entry{idx: -1, kw: make([]uint64, h.nwords), val: val[:h.valLen:h.valLen]}
	}
	n := len(h.free)
	if n == 0 {
		return nil
	}
	e := h.free[n-1]
	h.free = h.free[:n-1]
	return e
}

// release returns an unlinked entry; dec says whether it was counted live.
func (h *Hash) release(e *entry, dec bool) {
	h.freeMu.Lock()
	if dec {
		h.count--
	}
	if h.prealloc {
		h.free = append(h.free, e)
	}
	h.freeMu.Unlock()
}

// Update stores value under key with the kernel's flag rules: unknown flags
// EINVAL, BPF_NOEXIST on an existing key EEXIST, BPF_EXIST on a missing key
// ENOENT, a new key in a full map E2BIG (LRU maps evict instead). cpu selects
// the slot of a per-CPU map (cpu < 0: all slots from NumCPU 8-byte-rounded
// values). A new per-CPU entry written for one CPU has the other slots zeroed.
// It does not allocate on preallocated maps.
func (h *Hash) Update(key, value []byte, flags uint64, cpu int) error {
	if flags&^UpdateLock > UpdateExist || (h.lru && flags > UpdateExist) {
		return errBadFlags
	}
	if flags&UpdateLock != 0 {
		return errBadFlags // no bpf_spin_lock in xnic's values
	}
	if len(key) != int(h.spec.KeySize) {
		return errBadKeySize
	}
	if h.percpu && cpu >= h.ncpu {
		return errBadFlags
	}
	if h.percpu && cpu < 0 {
		if uint64(len(value)) != h.valLen {
			return errBadValueSize
		}
	} else if len(value) != int(h.spec.ValueSize) {
		return errBadValueSize
	}
	hv := h.hashOf(key)
	s := h.stripeOf(hv)
	var evicted *entry
	tries := 0
	for {
		s.mu.Lock()
		old, prev := h.find(hv, key)
		if old != nil && flags == UpdateNoExist {
			s.mu.Unlock()
			h.dropEvicted(evicted)
			return errExists
		}
		if old == nil && flags == UpdateExist {
			s.mu.Unlock()
			h.dropEvicted(evicted)
			return errNoEntry
		}
		if old != nil && h.percpu {
			// Per-CPU maps update in place (pcpu_copy_value).
			h.writeValue(old, value, cpu, false)
			s.mu.Unlock()
			h.dropEvicted(evicted)
			return nil
		}
		var e *entry
		if old != nil {
			if h.prealloc {
				e = h.extraSlot(cpu).Swap(nil)
			}
			if e == nil {
				e = h.allocSpare()
			}
			if e == nil {
				// Every spare is in flight: write in place rather than fail.
				h.writeValue(old, value, cpu, false)
				s.mu.Unlock()
				h.dropEvicted(evicted)
				return nil
			}
		} else if evicted != nil {
			e, evicted = evicted, nil
		} else {
			e = h.allocNew()
			if e == nil {
				if !h.lru {
					s.mu.Unlock()
					return errFull
				}
				// Evict outside the stripe lock, then look again: another
				// updater may have inserted key meanwhile.
				s.mu.Unlock()
				evicted = h.evict()
				if evicted == nil {
					// Entries were deleted meanwhile (nothing live to
					// evict): try the free list again, a bounded number
					// of times.
					if tries++; tries > 8 {
						return syscall.ENOMEM
					}
				}
				continue
			}
		}
		e.setKey(key)
		e.hash.Store(hv)
		e.ref.Store(0)
		h.writeValue(e, value, cpu, true)
		b := &h.buckets[hv&h.mask]
		s.write(func() {
			if old != nil {
				// Unlink old, then add the new entry at the head, as the
				// kernel. old.next stays: a reader on old walks on.
				if prev == nil {
					b.Store(old.next.Load())
				} else {
					prev.next.Store(old.next.Load())
				}
				old.live.Store(false)
			}
			e.next.Store(b.Load())
			b.Store(e)
			e.live.Store(true)
		})
		s.mu.Unlock()
		if old != nil {
			if !h.prealloc || !h.extraSlot(cpu).CompareAndSwap(nil, old) {
				h.release(old, false)
			}
		}
		h.dropEvicted(evicted)
		return nil
	}
}

// dropEvicted gives back an entry evicted for an insert that did not happen.
func (h *Hash) dropEvicted(e *entry) {
	if e != nil {
		h.release(e, true)
	}
}

// writeValue copies value into e; fresh says the entry is new (per-CPU: zero
// the other slots).
func (h *Hash) writeValue(e *entry, value []byte, cpu int, fresh bool) {
	if !h.percpu {
		h.spec.copyValue(e.val, value)
		if fresh {
			h.spec.clearLock(e.val)
		}
		return
	}
	for c := range h.ncpu {
		switch {
		case cpu < 0:
			copy(h.slot(e, c), value[uint64(c)*h.elemSize:])
		case c == cpu:
			copy(h.slot(e, c), value)
		case fresh:
			clear(h.slot(e, c))
		}
	}
}

// evict runs the CLOCK sweep and unlinks one entry, which the caller reuses
// for its new key (the live count is unchanged). nil if no entry could be
// taken in three sweeps (every entry being replaced concurrently).
func (h *Hash) evict() *entry {
	h.evictMu.Lock()
	defer h.evictMu.Unlock()
	// Two sweeps honour reference bits; a third takes the first live entry
	// whatever its bit (programs may re-reference everything between sweeps;
	// the kernel's LRU never fails an insert for that reason either).
	for step := range 3 * len(h.slab) {
		e := &h.slab[h.hand]
		h.hand++
		if h.hand == len(h.slab) {
			h.hand = 0
		}
		if !e.live.Load() {
			continue
		}
		if e.ref.Load() != 0 && step < 2*len(h.slab) {
			e.ref.Store(0)
			continue
		}
		hv := e.hash.Load()
		s := h.stripeOf(hv)
		s.mu.Lock()
		if !e.live.Load() || e.hash.Load() != hv {
			s.mu.Unlock()
			continue
		}
		var prev *entry
		b := &h.buckets[hv&h.mask]
		cur := b.Load()
		for cur != nil && cur != e {
			prev, cur = cur, cur.next.Load()
		}
		if cur == nil {
			s.mu.Unlock()
			continue
		}
		s.write(func() {
			if prev == nil {
				b.Store(e.next.Load())
			} else {
				prev.next.Store(e.next.Load())
			}
			e.live.Store(false)
		})
		s.mu.Unlock()
		return e
	}
	return nil
}

// Delete removes key, or returns ENOENT.
func (h *Hash) Delete(key []byte) error {
	if len(key) != int(h.spec.KeySize) {
		return errBadKeySize
	}
	hv := h.hashOf(key)
	s := h.stripeOf(hv)
	s.mu.Lock()
	e, prev := h.find(hv, key)
	if e == nil {
		s.mu.Unlock()
		return errNoEntry
	}
	s.write(func() {
		if prev == nil {
			h.buckets[hv&h.mask].Store(e.next.Load())
		} else {
			prev.next.Store(e.next.Load())
		}
		e.live.Store(false)
	})
	s.mu.Unlock()
	h.release(e, true)
	return nil
}

// NextKey writes the key following key into next: the next one in key's chain,
// else the first of the following non-empty buckets; a nil or absent key
// starts from the first. ENOENT after the last.
func (h *Hash) NextKey(key, next []byte) error {
	if len(next) < int(h.spec.KeySize) {
		return errBadKeySize
	}
	start := uint64(0)
	if key != nil && len(key) == int(h.spec.KeySize) {
		hv := h.hashOf(key)
		s := h.stripeOf(hv)
		s.mu.Lock()
		e, _ := h.find(hv, key)
		if e != nil {
			if n := e.next.Load(); n != nil {
				n.copyKey(next, int(h.spec.KeySize))
				s.mu.Unlock()
				return nil
			}
			start = (hv & h.mask) + 1
		}
		s.mu.Unlock()
	}
	for b := start; b <= h.mask; b++ {
		s := &h.stripes[b&h.smask]
		s.mu.Lock()
		if e := h.buckets[b].Load(); e != nil {
			e.copyKey(next, int(h.spec.KeySize))
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
	}
	return errNoEntry
}

// Len returns the number of live entries.
func (h *Hash) Len() int {
	h.freeMu.Lock()
	defer h.freeMu.Unlock()
	return int(h.count)
}
