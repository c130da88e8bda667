package maps

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"syscall"
)

// LPMTrie is BPF_MAP_TYPE_LPM_TRIE (kernel/bpf/lpm_trie.c). A key is struct
// bpf_lpm_trie_key_u8: a host-endian (little-endian here) u32 prefix length
// followed by key_size-4 data bytes, compared most significant bit first.
// Lookup returns the value of the longest stored prefix that matches the
// key's first prefixlen bits; Update and Delete work on exact (prefixlen,
// data) pairs; NextKey walks the stored keys in post-order (more specific
// prefixes before the prefixes that contain them).
//
// The trie has the kernel's shape: a binary Patricia trie whose intermediate
// nodes (a branch point that is no key of its own) have exactly two children.
// Because the shape is the same, NextKey returns keys in the kernel's order,
// and the data bits past a key's prefix length are stored and returned as the
// caller gave them, as the kernel does.
//
// The map must be created with BPF_F_NO_PREALLOC, as the kernel requires; each
// insert allocates a node (and sometimes an intermediate node) from the Go
// heap. Native code, which cannot allocate, takes its nodes from a small
// pool of spares (spare) that Go's Update refills (see NativeLPM). Full is ENOSPC, as in the kernel. Update of an existing key installs a
// new node: a slice from an earlier Lookup keeps showing the old value (the
// garbage collector keeps it, as RCU does in the kernel).
//
// Lookup takes no lock, as the kernel's RCU walk: the root and child links are
// atomic pointers, a node is fully built before it is linked, and an unlinked
// node stays valid for a reader still on it (the garbage collector frees it).
// Update, Delete and NextKey hold mu, a spinLock (hash_lock.go) rather than
// a sync.Mutex so that native code (the JIT's bpf_map_update_elem and
// bpf_map_delete_elem) can take it with a compare-and-swap.
type LPMTrie struct {
	spec     Spec
	dataSize uint32
	maxLen   uint32

	mu   spinLock
	root atomic.Pointer[lpmNode] // stored under mu, loaded by lock-free readers
	n    uint32                  // stored keys (intermediate nodes excluded); guarded by mu

	// spare[:nspare] are unlinked nodes, each with its data and value
	// buffers allocated and zero, for native inserts to pop (from the top);
	// Update refills them. Guarded by mu.
	spare  [lpmSpares]*lpmNode
	nspare uint32
	spares uint32 // the pool's size (lpmPoolSize), 0 without one
}

// lpmSpares bounds the pool: a native insert needs at most two nodes (a key
// and an intermediate node), so a full pool of 32 lasts at least 16 inserts
// before one goes to Go, which refills it.
const lpmSpares = 32

// lpmPoolBytes bounds the pool's memory: large values get fewer spares,
// values too large for two (one insert's worth) no pool, and native code
// leaves their writes to Go.
const lpmPoolBytes = 64 << 10

// lpmNativeData is the most data bytes of a trie native code writes to
// (NativeLPM); only those tries keep a pool.
const lpmNativeData = 8

// lpmNode is one trie node. prefixlen, data and value are set before the node
// is linked and never change (value's bytes belong to programs); child and im
// are stored under LPMTrie.mu and loaded by lock-free readers.
type lpmNode struct {
	child     [2]atomic.Pointer[lpmNode]
	im        atomic.Bool // intermediate: a branch point, not a key
	prefixlen uint32
	data      []byte
	value     []byte
}

func newLPM(spec Spec) (*LPMTrie, error) {
	if spec.Flags&FlagNoPrealloc == 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "an lpm_trie must be created with BPF_F_NO_PREALLOC (the kernel requires it)")
	}
	if err := checkFlagMask(spec, lpmFlagMask); err != nil {
		return nil, err
	}
	if spec.KeySize < lpmKeySizeMin || spec.KeySize > lpmKeySizeMax {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d: lpm_trie keys are a 4-byte prefix length and 1 to %d data bytes", spec.KeySize, lpmDataSizeMax)
	}
	if spec.ValueSize < 1 || spec.ValueSize > lpmValSizeMax {
		return nil, mapErr(spec.Name, syscall.EINVAL, "value size %d", spec.ValueSize)
	}
	spec.NumCPU = 0
	ds := spec.KeySize - 4
	t := &LPMTrie{spec: spec, dataSize: ds, maxLen: ds * 8}
	if n := lpmPoolBytes / (64 + uint64(spec.ValueSize)); ds <= lpmNativeData && n >= 2 {
		t.spares = uint32(min(lpmSpares, n))
	}
	t.refillLocked() // no one else sees t yet
	return t, nil
}

// refillLocked fills the pool of spare nodes; the caller holds mu. Only
// tries native code writes to (NativeLPM) have one.
func (t *LPMTrie) refillLocked() {
	for ; t.nspare < t.spares; t.nspare++ {
		t.spare[t.nspare] = t.newNode(0, nil, make([]byte, t.spec.ValueSize))
	}
}

// Spec returns the map's spec.
func (t *LPMTrie) Spec() Spec { return t.spec }

func extractBit(data []byte, i uint32) int {
	return int(data[i/8]>>(7-i%8)) & 1
}

// match is the number of leading bits node and key share, capped at the
// shorter of the two prefix lengths (the kernel's longest_prefix_match).
func (t *LPMTrie) match(n *lpmNode, plen uint32, data []byte) uint32 {
	limit := min(n.prefixlen, plen)
	var m uint32
	nd := n.data
	i := 0
	for ; i+8 <= len(nd) && m < limit; i += 8 {
		d := binary.BigEndian.Uint64(nd[i:]) ^ binary.BigEndian.Uint64(data[i:])
		if d != 0 {
			return min(m+uint32(bits.LeadingZeros64(d)), limit)
		}
		m += 64
	}
	if i+4 <= len(nd) && m < limit {
		d := binary.BigEndian.Uint32(nd[i:]) ^ binary.BigEndian.Uint32(data[i:])
		if d != 0 {
			return min(m+uint32(bits.LeadingZeros32(d)), limit)
		}
		m += 32
		i += 4
	}
	for ; i < len(nd) && m < limit; i++ {
		d := nd[i] ^ data[i]
		if d != 0 {
			return min(m+uint32(bits.LeadingZeros8(d)), limit)
		}
		m += 8
	}
	return min(m, limit)
}

func (t *LPMTrie) splitKey(key []byte) (uint32, []byte, bool) {
	if len(key) != int(t.spec.KeySize) {
		return 0, nil, false
	}
	plen, _ := keyIndex(key[:4])
	return plen, key[4:], true
}

// Lookup returns the value of the longest prefix matching key, or nil. It
// does not allocate.
func (t *LPMTrie) Lookup(key []byte, cpu int) []byte {
	plen, data, ok := t.splitKey(key)
	if !ok || plen > t.maxLen {
		return nil
	}
	var found *lpmNode
	for n := t.root.Load(); n != nil; {
		m := t.match(n, plen, data)
		if m == t.maxLen {
			found = n
			break
		}
		if m < n.prefixlen {
			break
		}
		if !n.im.Load() {
			found = n
		}
		n = n.child[extractBit(data, n.prefixlen)].Load()
	}
	if found == nil {
		return nil
	}
	return found.value
}

func (t *LPMTrie) newNode(plen uint32, data, value []byte) *lpmNode {
	n := &lpmNode{prefixlen: plen}
	// One allocation: data, then the value at an 8-byte boundary so that a
	// program's atomic operations on it are aligned.
	voff := uint32(roundUp8(t.dataSize))
	buf := make([]byte, roundUp8(voff+t.spec.ValueSize)) // rounded: see Hash.popLocked
	n.data = buf[:t.dataSize:t.dataSize]
	copy(n.data, data)
	if value != nil {
		end := voff + t.spec.ValueSize
		n.value = buf[voff:end:end]
		copy(n.value, value)
	}
	return n
}

// addCheck is the kernel's trie_check_add_elem; the caller holds mu.
func (t *LPMTrie) addCheck(flags uint64) error {
	if flags == UpdateExist {
		return errNoEntry
	}
	if t.n == t.spec.MaxEntries {
		return syscall.ENOSPC
	}
	t.n++
	return nil
}

// Update stores value under the exact key: BPF_NOEXIST on a stored key is
// EEXIST, BPF_EXIST on a missing one ENOENT, a new key in a full trie ENOSPC,
// a prefix length over 8*(key_size-4) EINVAL.
func (t *LPMTrie) Update(key, value []byte, flags uint64, cpu int) error {
	if flags > UpdateExist {
		return errBadFlags
	}
	plen, data, ok := t.splitKey(key)
	if !ok || plen > t.maxLen {
		return errBadKeySize
	}
	if len(value) != int(t.spec.ValueSize) {
		return errBadValueSize
	}
	nn := t.newNode(plen, data, value)
	t.mu.Lock()
	defer func() {
		// Native inserts that found the pool short came here.
		t.refillLocked()
		t.mu.Unlock()
	}()
	slot := &t.root
	var n *lpmNode
	var m uint32
	for n = slot.Load(); n != nil; n = slot.Load() {
		m = t.match(n, plen, data)
		if n.prefixlen != m || n.prefixlen == plen {
			break
		}
		slot = &n.child[extractBit(data, n.prefixlen)]
	}
	if n == nil {
		if err := t.addCheck(flags); err != nil {
			return err
		}
		slot.Store(nn)
		return nil
	}
	if n.prefixlen == m {
		// Same prefix: replace the node (a key, or an intermediate node that
		// becomes a key).
		if !n.im.Load() {
			if flags == UpdateNoExist {
				return errExists
			}
		} else if err := t.addCheck(flags); err != nil {
			return err
		}
		nn.child[0].Store(n.child[0].Load())
		nn.child[1].Store(n.child[1].Load())
		slot.Store(nn)
		return nil
	}
	if err := t.addCheck(flags); err != nil {
		return err
	}
	if m == plen {
		// The new key is a prefix of n: it becomes n's parent.
		nn.child[extractBit(n.data, m)].Store(n)
		slot.Store(nn)
		return nil
	}
	im := t.newNode(m, n.data, nil)
	im.im.Store(true)
	b := extractBit(data, m)
	im.child[b].Store(nn)
	im.child[1-b].Store(n)
	slot.Store(im)
	return nil
}

// Delete removes the exact key, or returns ENOENT (EINVAL for a prefix length
// over the maximum).
func (t *LPMTrie) Delete(key []byte) error {
	plen, data, ok := t.splitKey(key)
	if !ok || plen > t.maxLen {
		return errBadKeySize
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	trim := &t.root
	trim2 := trim
	var parent, n *lpmNode
	var m uint32
	for n = trim.Load(); n != nil; n = trim.Load() {
		m = t.match(n, plen, data)
		if n.prefixlen != m || n.prefixlen == plen {
			break
		}
		parent = n
		trim2 = trim
		trim = &n.child[extractBit(data, n.prefixlen)]
	}
	if n == nil || n.prefixlen != plen || n.prefixlen != m || n.im.Load() {
		return errNoEntry
	}
	t.n--
	c0, c1 := n.child[0].Load(), n.child[1].Load()
	switch {
	case c0 != nil && c1 != nil:
		n.im.Store(true)
	case parent != nil && parent.im.Load() && c0 == nil && c1 == nil:
		// Drop the now useless intermediate parent too.
		if parent.child[0].Load() == n {
			trim2.Store(parent.child[1].Load())
		} else {
			trim2.Store(parent.child[0].Load())
		}
	case c0 != nil:
		trim.Store(c0)
	case c1 != nil:
		trim.Store(c1)
	default:
		trim.Store(nil)
	}
	return nil
}

// NextKey writes the key after key in post-order into next; a nil key, a key
// with a prefix length over the maximum or a key not stored gives the first
// (leftmost) key; ENOENT after the last or on an empty trie.
func (t *LPMTrie) NextKey(key, next []byte) error {
	if len(next) < int(t.spec.KeySize) {
		return errBadKeySize
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	root := t.root.Load()
	if root == nil {
		return errNoEntry
	}
	plen, data, ok := t.splitKey(key)
	if key == nil || !ok || plen > t.maxLen {
		t.copyKey(next, leftmost(root))
		return nil
	}
	var stack [lpmDataSizeMax*8 + 1]*lpmNode
	sp := -1
	var n *lpmNode
	var m uint32
	for n = root; n != nil; {
		sp++
		stack[sp] = n
		m = t.match(n, plen, data)
		if n.prefixlen != m || n.prefixlen == plen {
			break
		}
		n = n.child[extractBit(data, n.prefixlen)].Load()
	}
	if n == nil || n.prefixlen != m || n.im.Load() {
		t.copyKey(next, leftmost(root))
		return nil
	}
	n = stack[sp]
	for ; sp > 0; sp-- {
		p := stack[sp-1]
		if p.child[0].Load() == n && p.child[1].Load() != nil {
			t.copyKey(next, leftmost(p.child[1].Load()))
			return nil
		}
		if !p.im.Load() {
			t.copyKey(next, p)
			return nil
		}
		n = p
	}
	return errNoEntry
}

// leftmost is the first key in post-order under n: go left (right when there
// is no left child) to a leaf, remembering the last non-intermediate node.
func leftmost(n *lpmNode) *lpmNode {
	var last *lpmNode
	for n != nil {
		if n.im.Load() {
			n = n.child[0].Load()
			continue
		}
		last = n
		if c := n.child[0].Load(); c != nil {
			n = c
		} else {
			n = n.child[1].Load()
		}
	}
	return last
}

func (t *LPMTrie) copyKey(dst []byte, n *lpmNode) {
	putIndex(dst, n.prefixlen)
	copy(dst[4:t.spec.KeySize], n.data)
}

// Len returns the number of stored keys.
func (t *LPMTrie) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int(t.n)
}
