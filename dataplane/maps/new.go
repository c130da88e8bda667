package maps

import (
	"runtime"
	"syscall"

	"github.com/cilium/ebpf"
)

// Map creation flags (include/uapi/linux/bpf.h, enum "flags for BPF_MAP_CREATE").
const (
	FlagNoPrealloc    uint32 = 1 << 0  // BPF_F_NO_PREALLOC
	FlagNoCommonLRU   uint32 = 1 << 1  // BPF_F_NO_COMMON_LRU
	FlagNumaNode      uint32 = 1 << 2  // BPF_F_NUMA_NODE
	FlagRdonly        uint32 = 1 << 3  // BPF_F_RDONLY (syscall side read-only)
	FlagWronly        uint32 = 1 << 4  // BPF_F_WRONLY
	FlagZeroSeed      uint32 = 1 << 6  // BPF_F_ZERO_SEED
	FlagRdonlyProg    uint32 = 1 << 7  // BPF_F_RDONLY_PROG (program side read-only)
	FlagWronlyProg    uint32 = 1 << 8  // BPF_F_WRONLY_PROG
	FlagMmapable      uint32 = 1 << 10 // BPF_F_MMAPABLE
	FlagPreserveElems uint32 = 1 << 11 // BPF_F_PRESERVE_ELEMS
	FlagInnerMap      uint32 = 1 << 12 // BPF_F_INNER_MAP

	// flagAccessMask is BPF_F_ACCESS_MASK.
	flagAccessMask = FlagRdonly | FlagRdonlyProg | FlagWronly | FlagWronlyProg

	// Per-type masks of accepted creation flags, as the kernel's
	// ARRAY_CREATE_FLAG_MASK, HTAB_CREATE_FLAG_MASK, LPM_CREATE_FLAG_MASK,
	// DEV_CREATE_FLAG_MASK, RINGBUF_CREATE_FLAG_MASK.
	arrayFlagMask   = FlagNumaNode | FlagMmapable | flagAccessMask | FlagPreserveElems | FlagInnerMap
	hashFlagMask    = FlagNoPrealloc | FlagNoCommonLRU | FlagNumaNode | flagAccessMask | FlagZeroSeed
	lpmFlagMask     = FlagNoPrealloc | FlagNumaNode | flagAccessMask
	devFlagMask     = FlagNumaNode | FlagRdonly | FlagWronly
	cpumapFlagMask  = FlagNumaNode
	ringbufFlagMask = FlagNumaNode
	fdArrayFlagMask = arrayFlagMask
)

// Update flag bits beyond UpdateExist.
const (
	// UpdateLock is BPF_F_LOCK: xnic has no bpf_spin_lock in map values, so
	// the kernel's answer for a value without one applies: EINVAL.
	UpdateLock uint64 = 4
)

// Size limits from the kernel.
const (
	pcpuMinUnitSize  = 32 << 10             // PCPU_MIN_UNIT_SIZE: largest per-CPU value
	pageSize         = 4096                 // ringbuf size granule on x86-64 and arm64 (4K pages)
	ringbufMaxDataSz = (1 << 32) - 4096     // RINGBUF_MAX_DATA_SZ is UINT_MAX-PAGE_SIZE-sizeof(ringbuf) rounded; bigger is E2BIG
	maxMapBytes      = 1 << 30              // xnic's own cap on one map's preallocated memory: ENOMEM beyond
	nrCPUs           = 8192                 // CONFIG_NR_CPUS upper bound for cpumap max_entries
	lpmDataSizeMax   = 256                  // LPM_DATA_SIZE_MAX
	lpmKeySizeMin    = 4 + 1                // LPM_KEY_SIZE_MIN: prefixlen + one data byte
	lpmKeySizeMax    = 4 + lpmDataSizeMax   // LPM_KEY_SIZE_MAX
	lpmValSizeMax    = (4 << 20) - 256 - 64 // about KMALLOC_MAX_SIZE - LPM_DATA_SIZE_MAX - sizeof(node)
	hashValSizeMax   = (4 << 20) - 512 - 64 // about KMALLOC_MAX_SIZE - MAX_BPF_STACK - sizeof(htab_elem)
)

// New creates a map from spec, checking it as the kernel's map_create and the
// type's map_alloc_check do. Errors wrap syscall.EINVAL (bad sizes or flags),
// syscall.E2BIG (too large), syscall.ENOMEM (beyond xnic's memory cap),
// ENOTSUPP (a combination the kernel refuses that way) or
// syscall.EOPNOTSUPP (a map type xnic does not implement).
func New(spec Spec) (Map, error) {
	if spec.MaxEntries == 0 && spec.Type != ebpf.PerfEventArray { // perf: one slot per CPU
		return nil, mapErr(spec.Name, syscall.EINVAL, "max_entries is 0; every map type needs at least one entry")
	}
	if err := checkAccessFlags(spec); err != nil {
		return nil, err
	}
	if spec.NumCPU <= 0 {
		spec.NumCPU = runtime.NumCPU()
	}
	switch spec.Type {
	case ebpf.Array, ebpf.PerCPUArray:
		return ifOK(newArray(spec))
	case ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash:
		return ifOK(newHash(spec))
	case ebpf.LPMTrie:
		return ifOK(newLPM(spec))
	case ebpf.DevMap:
		return ifOK(newDevMap(spec))
	case ebpf.DevMapHash:
		return ifOK(newDevMapHash(spec))
	case ebpf.CPUMap:
		return ifOK(newCPUMap(spec))
	case ebpf.XSKMap:
		return ifOK(newXSKMap(spec))
	case ebpf.ProgramArray:
		return ifOK(newProgArray(spec))
	case ebpf.RingBuf:
		return ifOK(newRingBuf(spec))
	case ebpf.PerfEventArray:
		return ifOK(newPerfEventArray(spec))
	case ebpf.ArrayOfMaps, ebpf.HashOfMaps:
		return ifOK(newMapOfMaps(spec))
	case ebpf.Queue, ebpf.Stack:
		return ifOK(newQueue(spec))
	case ebpf.BloomFilter:
		return ifOK(newBloomFilter(spec))
	}
	return nil, mapErr(spec.Name, syscall.EOPNOTSUPP, "map type %v is not implemented by xnic (use array, hash, lru_hash, lpm_trie, devmap, cpumap, xskmap, prog_array or ringbuf and their per-CPU forms)", spec.Type)
}

// ifOK turns a typed constructor result into a Map, never a non-nil interface
// holding a nil pointer.
func ifOK[T Map](m T, err error) (Map, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

// checkAccessFlags refuses contradictory access flags, as bpf_get_file_flag
// and bpf_map_flags_access_ok do.
func checkAccessFlags(spec Spec) error {
	f := spec.Flags
	if f&FlagRdonly != 0 && f&FlagWronly != 0 {
		return mapErr(spec.Name, syscall.EINVAL, "flags 0x%x: BPF_F_RDONLY and BPF_F_WRONLY together", f)
	}
	if f&FlagRdonlyProg != 0 && f&FlagWronlyProg != 0 {
		return mapErr(spec.Name, syscall.EINVAL, "flags 0x%x: BPF_F_RDONLY_PROG and BPF_F_WRONLY_PROG together", f)
	}
	return nil
}

func checkFlagMask(spec Spec, mask uint32) error {
	if extra := spec.Flags &^ mask; extra != 0 {
		return mapErr(spec.Name, syscall.EINVAL, "flags 0x%x not accepted for %v (allowed 0x%x)", extra, spec.Type, mask)
	}
	return nil
}

func roundUp8(n uint32) uint64 { return (uint64(n) + 7) &^ 7 }

// keyIndex reads a 4-byte little-endian array index.
func keyIndex(key []byte) (uint32, bool) {
	if len(key) != 4 {
		return 0, false
	}
	return uint32(key[0]) | uint32(key[1])<<8 | uint32(key[2])<<16 | uint32(key[3])<<24, true
}

func putIndex(b []byte, v uint32) {
	b[0] = byte(v)
	b[1] = byte(v >> 8)
	b[2] = byte(v >> 16)
	b[3] = byte(v >> 24)
}
