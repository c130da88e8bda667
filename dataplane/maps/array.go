package maps

import (
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf"
)

// Array is BPF_MAP_TYPE_ARRAY and BPF_MAP_TYPE_PERCPU_ARRAY: max_entries
// preallocated, zeroed slots indexed by a 4-byte key, each slot value_size
// rounded up to 8 bytes (kernel/bpf/arraymap.c). Slots are never removed:
// Delete is EINVAL and an Update with BPF_NOEXIST is EEXIST.
//
// Storage is one slice allocated at creation and owned by the map for its
// whole life. A per-CPU array keeps each CPU's slots together (slot c of
// entry i at (c*max_entries+i)*elemSize), so poll goroutines bumping their own
// counters of the same entry do not share cache lines, as the kernel's
// per-CPU areas.
// Update copies into the slot in place without a lock (as the kernel's
// copy_map_value); readers that race with it may see a mix of old and new
// bytes, as in the kernel.
type Array struct {
	spec     Spec
	elemSize uint64 // value_size rounded up to 8
	ncpu     int    // 1 for a plain array
	data     []byte // immutable slice header; contents written as above
	frozen   atomic.Bool
}

// Freeze makes the map read-only for the control plane (BPF_MAP_FREEZE): the
// typed helpers then refuse writes with EPERM. Programs keep their access
// (a loader freezing .rodata also sets BPF_F_RDONLY_PROG, as libbpf does).
func (a *Array) Freeze() { a.frozen.Store(true) }

// Frozen reports whether Freeze was called.
func (a *Array) Frozen() bool { return a.frozen.Load() }

func newArray(spec Spec) (*Array, error) {
	percpu := spec.Type == ebpf.PerCPUArray
	if spec.KeySize != 4 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "key size %d: array keys are 4-byte indexes", spec.KeySize)
	}
	if spec.ValueSize == 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "value size is 0")
	}
	if err := checkFlagMask(spec, arrayFlagMask); err != nil {
		return nil, err
	}
	if percpu && spec.Flags&FlagNumaNode != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "BPF_F_NUMA_NODE is not accepted for a per-CPU array")
	}
	if spec.Type != ebpf.Array && spec.Flags&(FlagMmapable|FlagInnerMap) != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "BPF_F_MMAPABLE and BPF_F_INNER_MAP are only for plain arrays")
	}
	if spec.Flags&FlagPreserveElems != 0 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "BPF_F_PRESERVE_ELEMS is only for perf event arrays")
	}
	if spec.ValueSize > 1<<31-1 {
		return nil, mapErr(spec.Name, syscall.E2BIG, "value size %d", spec.ValueSize)
	}
	elem := roundUp8(spec.ValueSize)
	if percpu && elem > pcpuMinUnitSize {
		return nil, mapErr(spec.Name, syscall.E2BIG, "per-CPU value size %d is over %d", spec.ValueSize, pcpuMinUnitSize)
	}
	ncpu := 1
	if percpu {
		ncpu = spec.NumCPU
	} else {
		spec.NumCPU = 0
	}
	total := elem * uint64(spec.MaxEntries) * uint64(ncpu)
	if total > maxMapBytes {
		return nil, mapErr(spec.Name, syscall.ENOMEM, "%d bytes of values is over xnic's %d-byte cap per map; lower max_entries", total, maxMapBytes)
	}
	return &Array{spec: spec, elemSize: elem, ncpu: ncpu, data: make([]byte, total)}, nil
}

// Spec returns the map's spec (NumCPU filled in for per-CPU maps).
func (a *Array) Spec() Spec { return a.spec }

func (a *Array) slot(i uint32, cpu int) []byte {
	off := (uint64(cpu)*uint64(a.spec.MaxEntries) + uint64(i)) * a.elemSize
	end := off + uint64(a.spec.ValueSize)
	return a.data[off:end:end]
}

// Lookup returns the slot of index key (of CPU cpu for a per-CPU array), or
// nil when the index is out of range, the key is not 4 bytes or cpu is not a
// valid slot. It does not allocate.
func (a *Array) Lookup(key []byte, cpu int) []byte {
	i, ok := keyIndex(key)
	if !ok || i >= a.spec.MaxEntries {
		return nil
	}
	if a.ncpu == 1 {
		cpu = 0
	} else if cpu < 0 || cpu >= a.ncpu {
		return nil
	}
	return a.slot(i, cpu)
}

// Update copies value into the slot of key. Flags: BPF_ANY and BPF_EXIST
// write; BPF_NOEXIST is EEXIST (every slot exists); an index out of range is
// E2BIG; anything else EINVAL. On a per-CPU array, cpu < 0 writes every slot
// from NumCPU values each rounded up to 8 bytes.
func (a *Array) Update(key, value []byte, flags uint64, cpu int) error {
	if flags&^UpdateLock > UpdateExist || flags&UpdateLock != 0 {
		return errBadFlags // BPF_F_LOCK: no bpf_spin_lock in xnic's values
	}
	i, ok := keyIndex(key)
	if !ok {
		return errBadKeySize
	}
	if i >= a.spec.MaxEntries {
		return errFull
	}
	if flags&UpdateNoExist != 0 {
		return errExists
	}
	if a.ncpu == 1 {
		if len(value) != int(a.spec.ValueSize) {
			return errBadValueSize
		}
		a.spec.copyValue(a.slot(i, 0), value)
		return nil
	}
	if cpu >= 0 {
		if cpu >= a.ncpu || len(value) != int(a.spec.ValueSize) {
			return syscall.EINVAL
		}
		copy(a.slot(i, cpu), value)
		return nil
	}
	if uint64(len(value)) != a.elemSize*uint64(a.ncpu) {
		return errBadValueSize
	}
	for c := 0; c < a.ncpu; c++ {
		copy(a.slot(i, c), value[uint64(c)*a.elemSize:])
	}
	return nil
}

// Delete is EINVAL: array slots cannot be removed.
func (a *Array) Delete(key []byte) error { return syscall.EINVAL }

// NextKey follows array_map_get_next_key: no key or an index out of range
// gives 0, the last index gives ENOENT, otherwise index+1.
func (a *Array) NextKey(key, next []byte) error {
	if len(next) < 4 {
		return errBadKeySize
	}
	i, ok := keyIndex(key)
	if key == nil || !ok || i >= a.spec.MaxEntries {
		putIndex(next, 0)
		return nil
	}
	if i == a.spec.MaxEntries-1 {
		return errNoEntry
	}
	putIndex(next, i+1)
	return nil
}

// Bytes returns the whole value storage (entry i at i*ElemSize() for a plain
// array, CPU-major for a per-CPU one): the region global data sections (.data, .rodata, .bss) expose for
// direct value access. It aliases the map.
func (a *Array) Bytes() []byte { return a.data }

// ElemSize is value_size rounded up to 8, the stride between slots.
func (a *Array) ElemSize() int { return int(a.elemSize) }
