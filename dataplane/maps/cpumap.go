package maps

import (
	"sync/atomic"
	"syscall"
)

// cpumapMaxQsize is the kernel's sanity limit on a cpumap queue size
// (cpu_map_update_elem): larger is EOVERFLOW.
const cpumapMaxQsize = 16384

// CPUTarget is one cpumap entry: the poll goroutine (xnic's "CPU") a frame
// redirected to key goes to, with its queue size and optional program.
type CPUTarget struct {
	val    [8]byte // the value programs see; first, so 8-byte aligned
	CPU    uint32
	Qsize  uint32
	Prog   any // program run on the target CPU (BPF_XDP_CPUMAP), or nil
	ProgID uint32
}

// CPUMap is BPF_MAP_TYPE_CPUMAP (kernel/bpf/cpumap.c): one optional entry per
// CPU index. A value is struct bpf_cpumap_val: u32 qsize, and when value_size
// is 8 a u32 program fd (update) or id (lookup). qsize 0 clears the entry; a
// qsize over 16384 is EOVERFLOW; a key that is no CPU slot of xnic (>= the
// spec's NumCPU, the number of poll goroutines) is ENODEV; max_entries over
// NR_CPUS (8192 here) is E2BIG at creation. As the kernel, New adds
// BPF_F_RDONLY_PROG.
//
// Slots are atomic pointers to immutable entries: Lookup and Target are
// lock-free.
type CPUMap struct {
	spec     Spec
	slots    []atomic.Pointer[CPUTarget] // immutable slice
	resolver atomic.Pointer[ProgResolver]
}

func newCPUMap(spec Spec) (*CPUMap, error) {
	if spec.KeySize != 4 || (spec.ValueSize != 4 && spec.ValueSize != 8) {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d, value size %d: cpumap keys are 4 bytes and values 4 (qsize) or 8 (qsize, program fd)", spec.KeySize, spec.ValueSize)
	}
	if err := checkFlagMask(spec, cpumapFlagMask); err != nil {
		return nil, err
	}
	if spec.MaxEntries > nrCPUs {
		return nil, mapErr(spec.Name, syscall.E2BIG, "max_entries %d is over NR_CPUS %d", spec.MaxEntries, nrCPUs)
	}
	spec.Flags |= FlagRdonlyProg
	return &CPUMap{spec: spec, slots: make([]atomic.Pointer[CPUTarget], spec.MaxEntries)}, nil
}

// Spec returns the map's spec; NumCPU is the number of CPU slots that exist.
func (c *CPUMap) Spec() Spec { return c.spec }

// SetProgResolver installs the resolver for program fds in 8-byte values.
func (c *CPUMap) SetProgResolver(r ProgResolver) { c.resolver.Store(&r) }

// Lookup returns the entry's value (qsize, program id), read-only, or nil.
func (c *CPUMap) Lookup(key []byte, cpu int) []byte {
	i, ok := keyIndex(key)
	if !ok || i >= c.spec.MaxEntries {
		return nil
	}
	e := c.slots[i].Load()
	if e == nil {
		return nil
	}
	return e.val[:c.spec.ValueSize:c.spec.ValueSize]
}

// Target returns the entry of key for bpf_redirect_map without allocating.
func (c *CPUMap) Target(key uint32) (CPUTarget, bool) {
	if key >= c.spec.MaxEntries {
		return CPUTarget{}, false
	}
	e := c.slots[key].Load()
	if e == nil {
		return CPUTarget{}, false
	}
	return *e, true
}

// Update follows cpu_map_update_elem (see the type's comment).
func (c *CPUMap) Update(key, value []byte, flags uint64, cpu int) error {
	if len(value) != int(c.spec.ValueSize) {
		return errBadValueSize
	}
	if flags > UpdateExist {
		return errBadFlags
	}
	i, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if i >= c.spec.MaxEntries {
		return errFull
	}
	if flags == UpdateNoExist {
		return errExists
	}
	qsize, _ := keyIndex(value[:4])
	if qsize > cpumapMaxQsize {
		return syscall.EOVERFLOW
	}
	if int(i) >= c.spec.NumCPU {
		return syscall.ENODEV
	}
	if qsize == 0 {
		c.slots[i].Store(nil)
		return nil
	}
	t := &CPUTarget{CPU: i, Qsize: qsize}
	if c.spec.ValueSize == 8 {
		fd, _ := keyIndex(value[4:8])
		if int32(fd) > 0 {
			r := c.resolver.Load()
			if r == nil {
				return syscall.EINVAL
			}
			p, id, err := (*r)(int32(fd))
			if err != nil {
				return syscall.EINVAL
			}
			t.Prog, t.ProgID = p, id
		}
	}
	putIndex(t.val[0:4], qsize)
	putIndex(t.val[4:8], t.ProgID)
	c.slots[i].Store(t)
	return nil
}

// Set is the control plane's typed update (qsize 0 clears the slot).
func (c *CPUMap) Set(key, qsize uint32, prog any, progID uint32) error {
	if key >= c.spec.MaxEntries || int64(key) >= int64(c.spec.NumCPU) {
		return mapErr(c.spec.Name, syscall.ENODEV, "CPU %d: the map has %d entries and xnic %d CPU slots", key, c.spec.MaxEntries, c.spec.NumCPU)
	}
	if qsize > cpumapMaxQsize {
		return mapErr(c.spec.Name, syscall.EOVERFLOW, "qsize %d is over %d", qsize, cpumapMaxQsize)
	}
	if qsize == 0 {
		c.slots[key].Store(nil)
		return nil
	}
	t := &CPUTarget{CPU: key, Qsize: qsize, Prog: prog, ProgID: progID}
	putIndex(t.val[0:4], qsize)
	putIndex(t.val[4:8], progID)
	c.slots[key].Store(t)
	return nil
}

// Delete clears key: EINVAL past max_entries, otherwise success.
func (c *CPUMap) Delete(key []byte) error {
	i, ok := keyIndex(key)
	if !ok || i >= c.spec.MaxEntries {
		return syscall.EINVAL
	}
	c.slots[i].Store(nil)
	return nil
}

// NextKey walks indexes as an array does.
func (c *CPUMap) NextKey(key, next []byte) error { return arrayNextKey(c.spec.MaxEntries, key, next) }
