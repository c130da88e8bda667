package maps

import (
	"github.com/cilium/ebpf"
)

// Spec describes a map as the ELF object declares it.
type Spec struct {
	Name       string
	Type       ebpf.MapType
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	Flags      uint32
	// NumCPU is the number of per-CPU slots for per-CPU maps (one per poll
	// goroutine); ignored by other types.
	NumCPU int
	// MapExtra is map_extra (bloom filters: the number of hash functions).
	MapExtra uint64
	// InnerMap is the inner map template of a map of maps (array_of_maps,
	// hash_of_maps); nil for other types.
	InnerMap *Spec
	// SpinLock says the value holds a struct bpf_spin_lock (found in its
	// BTF by the loader) at byte SpinLockOff: updates leave those 4 bytes
	// as they are, as the kernel's copy_map_value skips them, and a new
	// hash entry starts with them 0 (check_and_init_map_value).
	SpinLock    bool
	SpinLockOff uint32
}

// copyValue copies src into the value dst, but the spin lock's word.
func (s *Spec) copyValue(dst, src []byte) {
	o := int(s.SpinLockOff)
	if !s.SpinLock || o+4 > len(dst) {
		copy(dst, src)
		return
	}
	copy(dst[:o], src)
	if len(src) > o+4 {
		copy(dst[o+4:], src[o+4:])
	}
}

// clearLock zeroes the spin lock's word of the fresh value v.
func (s *Spec) clearLock(v []byte) {
	if o := int(s.SpinLockOff); s.SpinLock && o+4 <= len(v) {
		clear(v[o : o+4])
	}
}

// Update flags, as BPF_ANY, BPF_NOEXIST and BPF_EXIST.
const (
	UpdateAny     uint64 = 0
	UpdateNoExist uint64 = 1
	UpdateExist   uint64 = 2
)

// Map is one BPF map. Every method is safe for concurrent use: programs run in
// several poll goroutines while the control plane reads and writes.
//
// Errors are syscall.Errno values (ENOENT, EEXIST, E2BIG, EINVAL, ...), possibly
// wrapped, so a helper can hand the program the same negative errno the kernel
// would.
type Map interface {
	Spec() Spec
	// Lookup returns the value stored under key, for CPU slot cpu on per-CPU maps,
	// or nil. The slice aliases the map's storage (programs write through it) and
	// stays valid (memory-safe) even after the entry is deleted. It must not
	// allocate.
	Lookup(key []byte, cpu int) []byte
	// Update stores value under key. On per-CPU maps it writes the slot of cpu when
	// cpu >= 0 and every slot when cpu < 0 (value then holds NumCPU values, each
	// rounded up to 8 bytes, as the kernel's syscall does).
	Update(key, value []byte, flags uint64, cpu int) error
	// Delete removes key (arrays: EINVAL, as the kernel).
	Delete(key []byte) error
	// NextKey writes the key after key into next (the first key when key is nil),
	// or returns ENOENT at the end.
	NextKey(key, next []byte) error
}
