package maps

import "unsafe"

// HashTable describes a preallocated Hash (hash.go) to code that looks keys
// up without calling Go (the JIT's bpf_map_lookup_elem): the same walk as
// Hash.get's lock-free pass, read through plain addresses and offsets.
//
// Why the walk may read the chain's pointers: every entry of a
// preallocated map lives in one slab made with the map, and every value in
// one value slab (or the per-CPU area), none ever freed or moved while the
// map is reachable (the collector does not move heap objects). An entry
// address read from a bucket or a next link therefore always points into
// the slab, even when the entry was unlinked and reused meanwhile, and the
// stripe's sequence (as in Hash.get) tells the reader whether the walk
// raced a writer: the reader loads the sequence (odd: a writer is in the
// stripe, give up), walks at most MaxWalk entries comparing the stored
// hash and key words, loads the sequence again and trusts the answer only
// if it did not move. A lookup only reads this memory, except the LRU
// reference word (RefOff, a 32-bit number, no pointer: no write barrier),
// which it sets to 1 as Lookup does.
//
// An update may take the stripe's lock (LockOff: a 32-bit word, 0 free, 1
// held; hash_lock.go), which excludes Go's writers exactly as their own
// Lock does: compare-and-swap it from 0 to 1, a bounded number of tries
// (a holder is never waited for: the call goes to Go instead), release
// it by storing 0 after the section's last write, and leave no path in
// between without that store. Holding it, the chain is stable (no seq
// check needed) and a per-CPU map's value slot of an entry found may be
// written in place, as Hash.Update does for a key present.
//
// Writing. Holding the stripe's lock, native code may also insert,
// replace and delete, with Update's and Delete's steps, only while the
// garbage collector's write barrier is off (it stores entry addresses in
// the buckets, the next links, the spare slots and the free list: Go
// pointers, which are written without the barrier only then): the same
// sequence made odd around every relink, the live flag cleared on the
// entry unlinked and set on the one linked, an insert's entry popped
// from the free list and the live count raised under FreeLock (taken
// after the stripe's lock, as Go takes it), a delete's entry pushed back
// and the count lowered under it, a replacement's entry swapped with the
// CPU's spare slot (compare-and-swap of the spare seen for the old entry,
// which a failure relinks). Maps made with BPF_F_NO_PREALLOC
// (entries on the Go heap, freed by the collector) have only the
// HashTable of a lookup that answers misses (NativeHeapHash); keys over
// NativeKeyMax bytes have none.
//
// Evicting. An insert into a full LRU map may take an entry as
// Hash.evict does, holding the stripe's lock of its own key (Go's
// Update releases it first; holding it is one of the orders concurrent
// writers may take, and alone the result is the same): EvictLock taken
// as a stripe's, then the CLOCK sweep with evict's steps and choice
// (the hand advanced for every entry looked at, reference bits cleared
// in the first two sweeps, the first live entry without one taken), the
// victim's stripe locked (unless it is the one held) and the victim
// unlinked as Delete unlinks, the live count unchanged. A lock still held
// after a bounded number of tries sends the call to Go, which goes on
// sweeping from the hand where the native sweep left it.
//
// Readers must load with acquire ordering: plain loads on amd64, where
// stores are seen in program order. Native writers must store in program
// order too (the sequence odd before the first relink, even after the
// last): plain stores on amd64, the only writer of a stripe's sequence
// being its lock's holder.
type HashTable struct {
	Buckets    uintptr // &buckets[0]: Mask+1 words, each 0 or an entry's address
	Mask       uint64  // buckets - 1
	Stripes    uintptr // &stripes[0]: stripe b&Mask&StripeMask guards bucket b
	StripeSize uintptr // stride between stripes
	StripeMask uint64
	SeqOff     uintptr // the stripe's sequence word (odd while a writer relinks)
	LockOff    uintptr // the stripe's lock word (uint32: 0 free, 1 held)
	S0, S1     uint64  // the hash's seeds (Hash.hashOf)
	KeySize    uint32  // 1..NativeKeyMax bytes: (KeySize+7)/8 key words
	MaxWalk    uint64  // a longer walk followed reused entries: ask Go
	// Offsets in an entry of the next link (address word), the stored
	// hash, the address of the key words (a slice's data word; the words
	// are little-endian, zero-padded), the address of the value (a
	// slice's data word; not for per-CPU maps), the slab index and the
	// LRU reference word (uint32).
	NextOff, HashOff, KeyOff, ValOff, IdxOff, RefOff uintptr
	LRU                                              bool
	// What an insert, a replacement and a delete write (see Writing,
	// above): the entry's live flag (a byte), the per-CPU spare slots
	// (Extra: NExtra words, each 0 or an entry's address), the free
	// list's lock word (FreeLock, as LockOff), the free list's slice
	// header (Free: data address, length, capacity; its data never
	// moves) and the live count (Count, uint32, against MaxEntries).
	LiveOff        uintptr
	Extra          uintptr
	NExtra         uint64
	FreeLock, Free uintptr
	Count          uintptr
	MaxEntries     uint32
	SpinLock       bool // values hold a bpf_spin_lock (Go writes around it)
	// An LRU map's eviction (see Evicting, above): the sweep's lock
	// (EvictLock, as LockOff), its hand (Hand: an int, the slab index the
	// sweep looks at next) and the slab (SlabLen entries of EntrySize
	// bytes from Slab).
	EvictLock, Hand, Slab uintptr
	SlabLen               uint64
	EntrySize             uintptr
	// Per-CPU maps: slot cpu of entry idx is at PCPU + (cpu*Entries +
	// idx)*ElemSize, for cpu below NCPU.
	PerCPU   bool
	PCPU     uintptr
	Entries  uint64
	ElemSize uint64
	NCPU     uint64
	// Heap: a map made with BPF_F_NO_PREALLOC (NativeHeapHash), whose
	// entries live on the Go heap. Only the walk's fields above Extra are
	// set (and NCPU for a per-CPU map); a key found goes to Go, which
	// makes the value's region, so native code only answers misses.
	Heap bool
}

// NativeKeyMax is the longest key a HashTable describes: eight key words,
// whose hash (Hash.hashOf) is one finaliser round per word.
const NativeKeyMax = 64

// NativeHash returns the HashTable of m, when m is a preallocated Hash
// (HASH, PERCPU_HASH, LRU_HASH, LRU_PERCPU_HASH) with keys of at most
// NativeKeyMax bytes; ok is false otherwise.
func NativeHash(m Map) (t HashTable, ok bool) {
	h, isHash := m.(*Hash)
	if !isHash || !h.prealloc || h.spec.KeySize == 0 || h.spec.KeySize > NativeKeyMax || len(h.buckets) == 0 || len(h.slab) == 0 {
		return t, false
	}
	var e entry
	t = h.walkTable()
	t.Extra = uintptr(unsafe.Pointer(unsafe.SliceData(h.extra)))
	t.NExtra = uint64(len(h.extra))
	t.FreeLock = uintptr(unsafe.Pointer(&h.freeMu.w))
	t.Free = uintptr(unsafe.Pointer(&h.free))
	t.Count = uintptr(unsafe.Pointer(&h.count))
	t.MaxEntries = h.spec.MaxEntries
	t.SpinLock = h.spec.SpinLock
	t.EvictLock = uintptr(unsafe.Pointer(&h.evictMu.w))
	t.Hand = uintptr(unsafe.Pointer(&h.hand))
	t.Slab = uintptr(unsafe.Pointer(unsafe.SliceData(h.slab)))
	t.SlabLen = uint64(len(h.slab))
	t.EntrySize = unsafe.Sizeof(e)
	if h.percpu {
		if len(h.pcpu) == 0 {
			return HashTable{}, false
		}
		t.PCPU = uintptr(unsafe.Pointer(unsafe.SliceData(h.pcpu)))
		t.Entries = uint64(len(h.slab))
		t.ElemSize = h.elemSize
		t.NCPU = uint64(h.ncpu)
	}
	return t, true
}

// walkTable is the part of h's HashTable a lookup's walk reads: the
// buckets, stripes, seeds, sizes and entry offsets.
func (h *Hash) walkTable() HashTable {
	var e entry
	return HashTable{
		Buckets:    uintptr(unsafe.Pointer(unsafe.SliceData(h.buckets))),
		Mask:       h.mask,
		Stripes:    uintptr(unsafe.Pointer(unsafe.SliceData(h.stripes))),
		StripeSize: unsafe.Sizeof(stripe{}),
		StripeMask: h.smask,
		SeqOff:     unsafe.Offsetof(stripe{}.seq),
		LockOff:    unsafe.Offsetof(stripe{}.mu) + unsafe.Offsetof(spinLock{}.w),
		S0:         h.s0,
		S1:         h.s1,
		KeySize:    h.spec.KeySize,
		MaxWalk:    uint64(h.maxWalk),
		NextOff:    unsafe.Offsetof(e.next),
		HashOff:    unsafe.Offsetof(e.hash),
		KeyOff:     unsafe.Offsetof(e.kw),
		ValOff:     unsafe.Offsetof(e.val),
		IdxOff:     unsafe.Offsetof(e.idx),
		RefOff:     unsafe.Offsetof(e.ref),
		LiveOff:    unsafe.Offsetof(e.live),
		LRU:        h.lru,
		PerCPU:     h.percpu,
	}
}

// NativeHeapHash returns the HashTable of m, when m is a Hash made with
// BPF_F_NO_PREALLOC (of any kind but LRU, which must preallocate) with
// keys of at most NativeKeyMax bytes, for a lookup that answers misses
// natively: Heap is set, and the walk's fields (the buckets, stripes,
// seeds, sizes and offsets a miss reads) are those NativeHash gives.
//
// Why the walk may read the chain's pointers although an entry deleted or
// replaced is left to the garbage collector: as for LPMTable's nodes, an
// entry stays allocated while a reader holds its address. A writer's
// unlink shades the entry in a running collection cycle (the write
// barrier), so it is freed only by a later cycle, whose stop-the-world
// start waits for every goroutine to reach a safe point, which a goroutine
// in native code (no Go function, so no safe point) reaches only when it
// returns. An entry's hash and key words are set before it is linked and
// never change while anyone can reach it (entries are not reused), and the
// stripe's sequence tells the reader whether the walk raced a relink, as
// for a preallocated map. A key found is not trusted to native code: its
// value would outlive the walk in the region table, so Go looks it up.
func NativeHeapHash(m Map) (t HashTable, ok bool) {
	h, isHash := m.(*Hash)
	if !isHash || h.prealloc || h.lru || h.spec.KeySize == 0 || h.spec.KeySize > NativeKeyMax || len(h.buckets) == 0 {
		return t, false
	}
	t = h.walkTable()
	t.Heap = true
	if h.percpu {
		t.NCPU = uint64(h.ncpu)
	}
	return t, true
}

// LPMTable describes an LPMTrie (lpm.go) with at most 8 data bytes per key
// to code that looks keys up without calling Go: the walk of
// LPMTrie.Lookup, read through plain addresses and offsets.
//
// Why the walk may read the trie's pointers: a node stays valid while a
// reader holds its address, as for a Go reader. Nodes are unlinked by
// writers (whose pointer stores shade the old node in a running garbage
// collection cycle) and freed only by a later cycle, whose stop-the-world
// phase waits for every goroutine to reach a safe point: a goroutine in
// native code (no Go function, so no safe point) holds that phase off
// until it returns. The walk reads only; a node's prefix length, data and
// value never change once it is linked.
type LPMTable struct {
	Root     uintptr // the address of the root link (0 or a node's address)
	DataSize uint32  // 1..8: the key's bytes after its 4-byte prefix length
	MaxLen   uint32  // DataSize*8
	// Offsets in a node of its two child links (child 1 one word after
	// child 0), the intermediate flag (uint32, non-zero: no key of its
	// own), the prefix length (uint32), the address of the data bytes and
	// of the value (slices' data words).
	ChildOff, ImOff, PrefixOff, DataOff, ValueOff uintptr
	// Writing (see above): the lock word's address, the key count's, the
	// pool's array (0: the trie keeps no pool, its values being too large)
	// and count.
	Lock, Count, Spare, NSpare uintptr
	MaxEntries                 uint32
}

// NativeLPM returns the LPMTable of m, when m is an LPMTrie with keys of at
// most 8 data bytes; ok is false otherwise.
func NativeLPM(m Map) (t LPMTable, ok bool) {
	l, isLPM := m.(*LPMTrie)
	if !isLPM || l.dataSize == 0 || l.dataSize > 8 || unsafe.Sizeof(l.root) != 8 {
		return t, false
	}
	var n lpmNode
	t = LPMTable{
		Root:       uintptr(unsafe.Pointer(&l.root)),
		DataSize:   l.dataSize,
		MaxLen:     l.maxLen,
		ChildOff:   unsafe.Offsetof(n.child),
		ImOff:      unsafe.Offsetof(n.im),
		PrefixOff:  unsafe.Offsetof(n.prefixlen),
		DataOff:    unsafe.Offsetof(n.data),
		ValueOff:   unsafe.Offsetof(n.value),
		Lock:       uintptr(unsafe.Pointer(&l.mu.w)),
		Count:      uintptr(unsafe.Pointer(&l.n)),
		Spare:      uintptr(unsafe.Pointer(&l.spare[0])),
		NSpare:     uintptr(unsafe.Pointer(&l.nspare)),
		MaxEntries: l.spec.MaxEntries,
	}
	if l.spares == 0 {
		t.Spare = 0
	}
	return t, true
}
