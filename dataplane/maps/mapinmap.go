package maps

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf"
)

// MapOfMaps is BPF_MAP_TYPE_ARRAY_OF_MAPS and BPF_MAP_TYPE_HASH_OF_MAPS
// (kernel/bpf/arraymap.c, hashtab.c, map_in_map.c): an array or hash whose
// values are other maps, all compatible with the inner map template
// (Spec.InnerMap): same type, key size, value size and flags, and the same
// max_entries unless the template has BPF_F_INNER_MAP. Programs look up the
// outer map and get the inner map to use as a map argument; they cannot
// update it (the kernel's verifier refuses it).
//
// The control plane names inner maps by id, as the kernel's syscall does:
// where the kernel takes an inner map's file descriptor and returns its id
// on lookup, xnic takes and returns the id maps.ID gives the map. SetInner
// and Inner work with the maps themselves.
type MapOfMaps struct {
	spec  Spec
	inner Spec
	slots Map // array or hash of u32 ids (0: an empty array slot)
}

// registry numbers maps like the kernel's map ids: unique in the process,
// never 0, never reused. ids is copy-on-write so that programs read it
// without a lock.
var registry struct {
	mu   sync.Mutex
	ids  atomic.Pointer[[]Map] // index id-1
	byID map[Map]uint32
}

// ID returns m's map id, assigning one on first use.
func ID(m Map) uint32 {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.byID == nil {
		registry.byID = map[Map]uint32{}
	}
	if id, ok := registry.byID[m]; ok {
		return id
	}
	var cur []Map
	if p := registry.ids.Load(); p != nil {
		cur = *p
	}
	next := append(cur[:len(cur):len(cur)], m)
	registry.ids.Store(&next)
	id := uint32(len(next))
	registry.byID[m] = id
	return id
}

// ByID returns the map with id, or nil. It does not allocate.
func ByID(id uint32) Map {
	p := registry.ids.Load()
	if p == nil || id == 0 || uint64(id) > uint64(len(*p)) {
		return nil
	}
	return (*p)[id-1]
}

func newMapOfMaps(spec Spec) (*MapOfMaps, error) {
	if spec.InnerMap == nil {
		return nil, mapErr(spec.Name, syscall.EBADF, "a map of maps needs an inner map template (BTF __array(values, ...) or Spec.InnerMap)")
	}
	in := *spec.InnerMap
	switch in.Type {
	case ebpf.ArrayOfMaps, ebpf.HashOfMaps, ebpf.ProgramArray, ebpf.PerfEventArray, ebpf.CPUMap, ebpf.XSKMap, ebpf.DevMap, ebpf.DevMapHash:
		return nil, mapErr(spec.Name, syscall.EINVAL, "inner map type %v is not allowed in a map of maps", in.Type)
	}
	if spec.ValueSize != 4 {
		return nil, mapErr(spec.Name, syscall.EINVAL, "value size %d: a map of maps holds u32 map fds (ids in xnic)", spec.ValueSize)
	}
	slots := spec
	slots.InnerMap = nil
	var err error
	var m Map
	if spec.Type == ebpf.ArrayOfMaps {
		slots.Type = ebpf.Array
		m, err = ifOK(newArray(slots))
	} else {
		slots.Type = ebpf.Hash
		m, err = ifOK(newHash(slots))
	}
	if err != nil {
		return nil, err
	}
	if in.NumCPU <= 0 {
		in.NumCPU = spec.NumCPU
	}
	spec.InnerMap = &in
	return &MapOfMaps{spec: spec, inner: in, slots: m}, nil
}

// Spec returns the map's spec.
func (m *MapOfMaps) Spec() Spec { return m.spec }

// InnerSpec is the inner map template.
func (m *MapOfMaps) InnerSpec() Spec { return m.inner }

// Lookup returns the 4-byte id of the inner map under key, or nil. (The
// kernel's syscall returns the id too.)
func (m *MapOfMaps) Lookup(key []byte, cpu int) []byte {
	v := m.slots.Lookup(key, 0)
	if v == nil || binary.LittleEndian.Uint32(v) == 0 {
		return nil
	}
	return v
}

// InnerID returns the id of the map under key, 0 for none. It does not
// allocate.
func (m *MapOfMaps) InnerID(key []byte) uint32 {
	v := m.slots.Lookup(key, 0)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(v)
}

// Inner returns the map under key, or nil. It does not allocate.
func (m *MapOfMaps) Inner(key []byte) Map {
	v := m.slots.Lookup(key, 0)
	if v == nil {
		return nil
	}
	return ByID(binary.LittleEndian.Uint32(v))
}

// Update puts the map whose id is value (4 bytes) under key. The map must
// match the template (EINVAL); an unknown id is EBADF, as a bad fd; arrays
// take only BPF_ANY (EINVAL), as the kernel's fd arrays.
func (m *MapOfMaps) Update(key, value []byte, flags uint64, cpu int) error {
	if len(value) != 4 {
		return errBadValueSize
	}
	in := ByID(binary.LittleEndian.Uint32(value))
	if in == nil {
		return mapErr(m.spec.Name, syscall.EBADF, "no map with id %d", binary.LittleEndian.Uint32(value))
	}
	if err := m.compatible(in.Spec()); err != nil {
		return err
	}
	if m.spec.Type == ebpf.ArrayOfMaps && flags != UpdateAny {
		return errBadFlags
	}
	return m.storeSlot(key, value, flags) // mapinmap_unsafe.go
}

// SetInner puts inner under key (Update with inner's id).
func (m *MapOfMaps) SetInner(key []byte, inner Map, flags uint64) error {
	var v [4]byte
	binary.LittleEndian.PutUint32(v[:], ID(inner))
	return m.Update(key, v[:], flags, 0)
}

// compatible is bpf_map_meta_equal.
func (m *MapOfMaps) compatible(s Spec) error {
	t := m.inner
	if s.Type != t.Type || s.KeySize != t.KeySize || s.ValueSize != t.ValueSize || s.Flags != t.Flags ||
		(t.Flags&FlagInnerMap == 0 && s.MaxEntries != t.MaxEntries) {
		return mapErr(m.spec.Name, syscall.EINVAL, "inner map %q (%v, key %d, value %d, max_entries %d, flags %#x) does not match the template (%v, key %d, value %d, max_entries %d, flags %#x)",
			s.Name, s.Type, s.KeySize, s.ValueSize, s.MaxEntries, s.Flags, t.Type, t.KeySize, t.ValueSize, t.MaxEntries, t.Flags)
	}
	return nil
}

// Delete removes the inner map under key (ENOENT when none).
func (m *MapOfMaps) Delete(key []byte) error {
	if m.spec.Type == ebpf.HashOfMaps {
		return m.slots.Delete(key)
	}
	v := m.slots.Lookup(key, 0)
	if v == nil {
		return errFull // index past max_entries: E2BIG, as fd arrays
	}
	if binary.LittleEndian.Uint32(v) == 0 {
		return errNoEntry
	}
	return m.storeSlot(key, make([]byte, 4), UpdateAny)
}

// NextKey walks the keys as the underlying array or hash does.
func (m *MapOfMaps) NextKey(key, next []byte) error { return m.slots.NextKey(key, next) }

// Slots is the array or hash of u32 ids the map keeps its slots in, for
// code that reads them without calling Go (xnic's JIT): an
// ARRAY_OF_MAPS's is an Array whose slots Update writes with one atomic
// 32-bit store (storeSlot), so a reader's 32-bit load sees one id whole.
func (m *MapOfMaps) Slots() Map { return m.slots }
