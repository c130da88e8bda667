package maps

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// ProgResolver turns a program file descriptor written into a map value
// (prog_array values, the bpf_prog.fd of struct bpf_devmap_val and struct
// bpf_cpumap_val) into the interpreter's program handle and the program id
// the kernel would report back in its place. The loader installs one; without
// it such values are EINVAL and programs are set with the typed Go methods.
type ProgResolver func(fd int32) (prog any, id uint32, err error)

// DevTarget is one devmap entry: where bpf_redirect_map sends the frame.
type DevTarget struct {
	val     [8]byte // the value programs see; first, so 8-byte aligned
	Key     uint32
	Ifindex uint32
	Prog    any    // program to run on the frame before transmit (BPF_XDP_DEVMAP), or nil
	ProgID  uint32 // id reported in the value's second word
	// next is the next entry of a DevMapHash bucket's chain, fixed before
	// the entry is published like every other field.
	next *DevTarget
}

// DevTargets is what the interpreter's bpf_redirect_map needs from a devmap or
// devmap_hash: the entry of a key without allocating, and every entry (for
// BPF_F_BROADCAST).
type DevTargets interface {
	Map
	Target(key uint32) (DevTarget, bool)
	Each(fn func(DevTarget) bool)
}

// DevMap is BPF_MAP_TYPE_DEVMAP (kernel/bpf/devmap.c): an array of optional
// egress devices. A value is struct bpf_devmap_val: u32 ifindex, and when
// value_size is 8 a u32 program fd (on update) or program id (on lookup).
// Update with ifindex 0 clears the slot; Delete clears it too and never
// reports ENOENT, as in the kernel. As the kernel, New adds BPF_F_RDONLY_PROG
// to the spec: programs may look entries up but not write through them.
//
// Each slot is an atomic pointer to an immutable entry: Lookup and Target
// are lock-free and race-free; a replaced entry stays valid for whoever still
// holds it (the garbage collector plays RCU).
type DevMap struct {
	spec     Spec
	slots    []atomic.Pointer[DevTarget] // immutable slice
	resolver atomic.Pointer[ProgResolver]
	ifOK     atomic.Pointer[func(uint32) bool]
}

func checkDevSpec(spec Spec) error {
	if spec.KeySize != 4 || (spec.ValueSize != 4 && spec.ValueSize != 8) {
		return mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: devmap keys are 4 bytes and values 4 (ifindex) or 8 (ifindex, program fd)", spec.KeySize, spec.ValueSize)
	}
	return checkFlagMask(spec, devFlagMask)
}

func newDevMap(spec Spec) (*DevMap, error) {
	if err := checkDevSpec(spec); err != nil {
		return nil, err
	}
	if uint64(spec.MaxEntries)*8 > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d entries is over xnic's cap", spec.MaxEntries)
	}
	spec.Flags |= FlagRdonlyProg
	spec.NumCPU = 0
	return &DevMap{spec: spec, slots: make([]atomic.Pointer[DevTarget], spec.MaxEntries)}, nil
}

// Spec returns the map's spec (with BPF_F_RDONLY_PROG added).
func (d *DevMap) Spec() Spec { return d.spec }

// SetProgResolver installs the resolver for program fds in 8-byte values.
func (d *DevMap) SetProgResolver(r ProgResolver) { d.resolver.Store(&r) }

// SetIfindexCheck installs a check that an ifindex names a port xnic can send
// on; Update with an ifindex it refuses is EINVAL (the kernel's answer for an
// unknown device). Without a check every non-zero ifindex is accepted.
func (d *DevMap) SetIfindexCheck(ok func(ifindex uint32) bool) { d.ifOK.Store(&ok) }

// Lookup returns the entry's value (ifindex, and program id for 8-byte
// values), read-only for programs, or nil for an empty slot.
func (d *DevMap) Lookup(key []byte, cpu int) []byte {
	i, ok := keyIndex(key)
	if !ok || i >= d.spec.MaxEntries {
		return nil
	}
	e := d.slots[i].Load()
	if e == nil {
		return nil
	}
	return e.val[:d.spec.ValueSize:d.spec.ValueSize]
}

// Target returns the entry of key for bpf_redirect_map. It does not allocate.
func (d *DevMap) Target(key uint32) (DevTarget, bool) {
	if key >= d.spec.MaxEntries {
		return DevTarget{}, false
	}
	e := d.slots[key].Load()
	if e == nil {
		return DevTarget{}, false
	}
	return *e, true
}

// Each calls fn for every set slot in index order until fn returns false.
func (d *DevMap) Each(fn func(DevTarget) bool) {
	for i := range d.slots {
		if e := d.slots[i].Load(); e != nil && !fn(*e) {
			return
		}
	}
}

// makeDevTarget decodes a bpf_devmap_val, resolving a program fd.
func makeDevTarget(key uint32, value []byte, valueSize uint32, resolver *ProgResolver, ifOK *func(uint32) bool) (*DevTarget, error) {
	if len(value) != int(valueSize) {
		return nil, errBadValueSize
	}
	t := &DevTarget{Key: key}
	t.Ifindex, _ = keyIndex(value[:4])
	var fd int32
	if valueSize == 8 {
		v, _ := keyIndex(value[4:8])
		fd = int32(v)
	}
	if ifOK != nil && !(*ifOK)(t.Ifindex) {
		return nil, syscall.EINVAL
	}
	if fd > 0 {
		if resolver == nil {
			return nil, syscall.EINVAL
		}
		p, id, err := (*resolver)(fd)
		if err != nil {
			return nil, syscall.EINVAL
		}
		t.Prog, t.ProgID = p, id
	}
	putIndex(t.val[0:4], t.Ifindex)
	putIndex(t.val[4:8], t.ProgID)
	return t, nil
}

// Update sets slot key from a bpf_devmap_val: ifindex 0 clears it (with a
// program fd too it is EINVAL). BPF_NOEXIST is EEXIST, an index out of range
// E2BIG, unknown flags EINVAL, as dev_map_update_elem.
func (d *DevMap) Update(key, value []byte, flags uint64, cpu int) error {
	if flags > UpdateExist {
		return errBadFlags
	}
	i, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if i >= d.spec.MaxEntries {
		return errFull
	}
	if flags == UpdateNoExist {
		return errExists
	}
	if len(value) != int(d.spec.ValueSize) {
		return errBadValueSize
	}
	if ifindex, _ := keyIndex(value[:4]); ifindex == 0 {
		if d.spec.ValueSize == 8 {
			if fd, _ := keyIndex(value[4:8]); int32(fd) > 0 {
				return syscall.EINVAL
			}
		}
		d.slots[i].Store(nil)
		return nil
	}
	t, err := makeDevTarget(i, value, d.spec.ValueSize, d.resolver.Load(), d.ifOK.Load())
	if err != nil {
		return err
	}
	d.slots[i].Store(t)
	return nil
}

// Set is the control plane's typed update: slot key sends to ifindex, running
// prog (may be nil) first. ifindex 0 clears the slot.
func (d *DevMap) Set(key, ifindex uint32, prog any, progID uint32) error {
	if key >= d.spec.MaxEntries {
		return mapErr(d.spec.Name, syscall.E2BIG, "key %d is past max_entries %d", key, d.spec.MaxEntries)
	}
	if ifindex == 0 {
		d.slots[key].Store(nil)
		return nil
	}
	t := &DevTarget{Key: key, Ifindex: ifindex, Prog: prog, ProgID: progID}
	putIndex(t.val[0:4], ifindex)
	putIndex(t.val[4:8], progID)
	d.slots[key].Store(t)
	return nil
}

// Delete clears slot key: EINVAL past max_entries, otherwise success whether
// or not the slot was set (dev_map_delete_elem).
func (d *DevMap) Delete(key []byte) error {
	i, ok := keyIndex(key)
	if !ok || i >= d.spec.MaxEntries {
		return syscall.EINVAL
	}
	d.slots[i].Store(nil)
	return nil
}

// NextKey walks indexes as an array does, set or not.
func (d *DevMap) NextKey(key, next []byte) error { return arrayNextKey(d.spec.MaxEntries, key, next) }

// arrayNextKey is the array-style get_next_key shared by array, devmap,
// cpumap, xskmap and prog_array.
func arrayNextKey(max uint32, key, next []byte) error {
	if len(next) < 4 {
		return errBadKeySize
	}
	i, ok := keyIndex(key)
	if key == nil || !ok || i >= max {
		putIndex(next, 0)
		return nil
	}
	if i == max-1 {
		return errNoEntry
	}
	putIndex(next, i+1)
	return nil
}

// DevMapHash is BPF_MAP_TYPE_DEVMAP_HASH: devmap entries keyed by any u32
// (usually the ifindex), in 2^n buckets (n the smallest with 2^n >=
// max_entries) indexed by key & (2^n-1), newest first, as the kernel: NextKey
// gives the kernel's order. A new key in a full map is E2BIG; ifindex 0 is
// EINVAL; BPF_EXIST on a missing key inserts it (the kernel checks only
// BPF_NOEXIST); Delete of a missing key is ENOENT.
//
// Each bucket is an atomic pointer to a chain of immutable entries linked
// by DevTarget.next: writers (under mu) publish a new chain with one
// atomic store, copying the entries before the one they replace or remove,
// so Lookup, Target and Each walk a chain lock-free and race-free, as
// native code can (NativeSlots).
type DevMapHash struct {
	spec     Spec
	mu       sync.RWMutex                // writers; NextKey reads under it
	heads    []atomic.Pointer[DevTarget] // immutable slice: a chain per bucket
	items    uint32                      // guarded by mu
	resolver atomic.Pointer[ProgResolver]
	ifOK     atomic.Pointer[func(uint32) bool]
}

func newDevMapHash(spec Spec) (*DevMapHash, error) {
	if err := checkDevSpec(spec); err != nil {
		return nil, err
	}
	nb := uint64(1)
	for nb < uint64(spec.MaxEntries) {
		nb <<= 1
	}
	if nb*24 > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d entries is over xnic's cap", spec.MaxEntries)
	}
	spec.Flags |= FlagRdonlyProg
	spec.NumCPU = 0
	return &DevMapHash{spec: spec, heads: make([]atomic.Pointer[DevTarget], nb)}, nil
}

// Spec returns the map's spec (with BPF_F_RDONLY_PROG added).
func (d *DevMapHash) Spec() Spec { return d.spec }

// SetProgResolver installs the resolver for program fds in 8-byte values.
func (d *DevMapHash) SetProgResolver(r ProgResolver) { d.resolver.Store(&r) }

// SetIfindexCheck: see DevMap.SetIfindexCheck.
func (d *DevMapHash) SetIfindexCheck(ok func(ifindex uint32) bool) { d.ifOK.Store(&ok) }

func (d *DevMapHash) bucket(k uint32) int { return int(k & uint32(len(d.heads)-1)) }

// find returns the entry of key k, nil for none.
func (d *DevMapHash) find(k uint32) *DevTarget {
	for e := d.heads[d.bucket(k)].Load(); e != nil; e = e.next {
		if e.Key == k {
			return e
		}
	}
	return nil
}

// Lookup returns the entry's value, read-only for programs, or nil.
func (d *DevMapHash) Lookup(key []byte, cpu int) []byte {
	k, ok := keyIndex(key)
	if !ok {
		return nil
	}
	e := d.find(k)
	if e == nil {
		return nil
	}
	return e.val[:d.spec.ValueSize:d.spec.ValueSize]
}

// Target returns the entry of key for bpf_redirect_map. It does not allocate.
func (d *DevMapHash) Target(key uint32) (DevTarget, bool) {
	e := d.find(key)
	if e == nil {
		return DevTarget{}, false
	}
	return *e, true
}

// Each calls fn for every entry in NextKey order until fn returns false,
// without allocating or locking: each bucket's chain is walked as it was
// when Each reached it.
func (d *DevMapHash) Each(fn func(DevTarget) bool) {
	for bi := range d.heads {
		for e := d.heads[bi].Load(); e != nil; e = e.next {
			if !fn(*e) {
				return
			}
		}
	}
}

// Update inserts or replaces key (see the type's comment for the flags).
func (d *DevMapHash) Update(key, value []byte, flags uint64, cpu int) error {
	k, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if len(value) != int(d.spec.ValueSize) {
		return errBadValueSize
	}
	ifindex, _ := keyIndex(value[:4])
	if flags > UpdateExist || ifindex == 0 {
		return errBadFlags
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.find(k)
	if old != nil && flags&UpdateNoExist != 0 {
		return errExists
	}
	t, err := makeDevTarget(k, value, d.spec.ValueSize, d.resolver.Load(), d.ifOK.Load())
	if err != nil {
		return err
	}
	return d.insertLocked(old, t)
}

func (d *DevMapHash) insertLocked(old, t *DevTarget) error {
	bi := d.bucket(t.Key)
	head := d.heads[bi].Load()
	if old != nil {
		head = d.unlinkLocked(bi, old)
	} else {
		if d.items >= d.spec.MaxEntries {
			return errFull
		}
		d.items++
	}
	t.next = head
	d.heads[bi].Store(t)
	return nil
}

// unlinkLocked returns bucket bi's chain without old (in it): copies of
// the entries before old, then those after it. Readers walking the chain
// published before see it unchanged.
func (d *DevMapHash) unlinkLocked(bi int, old *DevTarget) *DevTarget {
	var before []*DevTarget
	for e := d.heads[bi].Load(); e != old; e = e.next {
		before = append(before, e)
	}
	head := old.next
	for i := len(before) - 1; i >= 0; i-- {
		c := *before[i]
		c.next = head
		head = &c
	}
	return head
}

// Set is the control plane's typed update of key (ifindex must be non-zero).
func (d *DevMapHash) Set(key, ifindex uint32, prog any, progID uint32) error {
	if ifindex == 0 {
		return mapErr(d.spec.Name, syscall.EINVAL, "ifindex 0 for key %d", key)
	}
	t := &DevTarget{Key: key, Ifindex: ifindex, Prog: prog, ProgID: progID}
	putIndex(t.val[0:4], ifindex)
	putIndex(t.val[4:8], progID)
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.find(key)
	if err := d.insertLocked(old, t); err != nil {
		return mapErr(d.spec.Name, syscall.E2BIG, "map full (%d entries)", d.spec.MaxEntries)
	}
	return nil
}

// Delete removes key, or returns ENOENT.
func (d *DevMapHash) Delete(key []byte) error {
	k, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.find(k)
	if old == nil {
		return errNoEntry
	}
	bi := d.bucket(k)
	d.heads[bi].Store(d.unlinkLocked(bi, old))
	d.items--
	return nil
}

// NextKey follows dev_map_hash_get_next_key: the next entry in key's bucket,
// else the first of the following buckets; an absent key starts over.
func (d *DevMapHash) NextKey(key, next []byte) error {
	if len(next) < 4 {
		return errBadKeySize
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	start := 0
	if k, ok := keyIndex(key); ok && key != nil {
		if e := d.find(k); e != nil {
			if e.next != nil {
				putIndex(next, e.next.Key)
				return nil
			}
			start = d.bucket(k) + 1
		}
	}
	for bi := start; bi < len(d.heads); bi++ {
		if e := d.heads[bi].Load(); e != nil {
			putIndex(next, e.Key)
			return nil
		}
	}
	return errNoEntry
}

var (
	_ DevTargets = (*DevMap)(nil)
	_ DevTargets = (*DevMapHash)(nil)
)
