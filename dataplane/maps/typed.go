package maps

import (
	"encoding/binary"
	"fmt"
	"iter"
	"syscall"

	"github.com/cilium/ebpf"
)

// The control plane's typed API. Keys and values are fixed-size Go values
// (integers, arrays, structs of those) encoded little-endian with
// encoding/binary, which packs struct fields without Go or C padding: declare
// C padding explicitly (e.g. `_ [2]byte`). Everything here copies; nothing
// returned aliases the map.

// IsPerCPU says whether maps of type t keep one value per CPU slot.
func IsPerCPU(t ebpf.MapType) bool {
	return t == ebpf.PerCPUArray || t == ebpf.PerCPUHash || t == ebpf.LRUCPUHash
}

// LookupBytes returns a copy of key's value (CPU slot 0 of a per-CPU map), or
// an error wrapping ENOENT.
func LookupBytes(m Map, key []byte) ([]byte, error) {
	if err := checkKeySize(m, key); err != nil {
		return nil, err
	}
	if err := checkSysRead(m); err != nil {
		return nil, err
	}
	v := peek(m, key, 0)
	if v == nil {
		return nil, mapErr(m.Spec().Name, syscall.ENOENT, "no value under key %x", key)
	}
	return append([]byte(nil), v...), nil
}

// peeker is implemented by maps whose Lookup has a side effect for programs
// (LRU maps mark the entry used) that the control plane should not cause.
type peeker interface {
	Peek(key []byte, cpu int) []byte
}

func peek(m Map, key []byte, cpu int) []byte {
	if p, ok := m.(peeker); ok {
		return p.Peek(key, cpu)
	}
	return m.Lookup(key, cpu)
}

// LookupPerCPU returns a copy of every CPU slot of key on a per-CPU map (one
// slice per slot, value_size bytes each); a plain map gives one slot.
func LookupPerCPU(m Map, key []byte) ([][]byte, error) {
	s := m.Spec()
	if !IsPerCPU(s.Type) {
		v, err := LookupBytes(m, key)
		if err != nil {
			return nil, err
		}
		return [][]byte{v}, nil
	}
	if err := checkKeySize(m, key); err != nil {
		return nil, err
	}
	if err := checkSysRead(m); err != nil {
		return nil, err
	}
	out := make([][]byte, s.NumCPU)
	for c := range out {
		v := peek(m, key, c)
		if v == nil {
			return nil, mapErr(s.Name, syscall.ENOENT, "no value under key %x", key)
		}
		out[c] = append([]byte(nil), v...)
	}
	return out, nil
}

// lookupSyscall returns key's value as BPF_MAP_LOOKUP_ELEM gives it to user
// space: value_size bytes, or for per-CPU maps NumCPU values each rounded up
// to 8 bytes.
func lookupSyscall(m Map, key []byte) ([]byte, error) {
	s := m.Spec()
	if !IsPerCPU(s.Type) {
		return LookupBytes(m, key)
	}
	slots, err := LookupPerCPU(m, key)
	if err != nil {
		return nil, err
	}
	stride := int(roundUp8(s.ValueSize))
	out := make([]byte, stride*len(slots))
	for c, v := range slots {
		copy(out[c*stride:], v)
	}
	return out, nil
}

// checkSysRead and checkSysWrite apply the syscall-side access flags, as the
// kernel's map_get_sys_perms: BPF_F_WRONLY maps cannot be read from the
// control plane, BPF_F_RDONLY and frozen maps cannot be written (EPERM).
// Programs are not affected (their access is BPF_F_RDONLY_PROG /
// BPF_F_WRONLY_PROG, for the interpreter to enforce).
func checkSysRead(m Map) error {
	if s := m.Spec(); s.Flags&FlagWronly != 0 {
		return mapErr(s.Name, syscall.EPERM, "created BPF_F_WRONLY: the control plane cannot read it")
	}
	return nil
}

func checkSysWrite(m Map) error {
	s := m.Spec()
	if s.Flags&FlagRdonly != 0 {
		return mapErr(s.Name, syscall.EPERM, "created BPF_F_RDONLY: the control plane cannot write it")
	}
	if f, ok := m.(interface{ Frozen() bool }); ok && f.Frozen() {
		return mapErr(s.Name, syscall.EPERM, "frozen: the control plane cannot write it")
	}
	return nil
}

func checkKeySize(m Map, key []byte) error {
	s := m.Spec()
	if len(key) != int(s.KeySize) {
		return mapErr(s.Name, syscall.EINVAL, "key is %d bytes, the map's keys are %d", len(key), s.KeySize)
	}
	return nil
}

// encodeFixed encodes v little-endian and checks it is exactly size bytes.
func encodeFixed(name, what string, v any, size uint32) ([]byte, error) {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		return nil, fmt.Errorf("map %q: encoding %s %T: %w (use fixed-size integers, arrays and structs): %w", name, what, v, err, syscall.EINVAL)
	}
	if len(b) != int(size) {
		return nil, mapErr(name, syscall.EINVAL, "%s %T encodes to %d bytes, the map wants %d", what, v, len(b), size)
	}
	return b, nil
}

// LookupValue reads key's value into a V (CPU slot 0 of a per-CPU map).
func LookupValue[K, V any](m Map, key K) (V, error) {
	var v V
	s := m.Spec()
	kb, err := encodeFixed(s.Name, "key", key, s.KeySize)
	if err != nil {
		return v, err
	}
	b, err := LookupBytes(m, kb)
	if err != nil {
		return v, err
	}
	if _, err := binary.Decode(b, binary.LittleEndian, &v); err != nil {
		return v, fmt.Errorf("map %q: decoding %d-byte value into %T: %w: %w", s.Name, len(b), v, err, syscall.EINVAL)
	}
	return v, nil
}

// LookupValuePerCPU reads every CPU slot of key into a []V.
func LookupValuePerCPU[K, V any](m Map, key K) ([]V, error) {
	s := m.Spec()
	kb, err := encodeFixed(s.Name, "key", key, s.KeySize)
	if err != nil {
		return nil, err
	}
	slots, err := LookupPerCPU(m, kb)
	if err != nil {
		return nil, err
	}
	out := make([]V, len(slots))
	for c, b := range slots {
		if _, err := binary.Decode(b, binary.LittleEndian, &out[c]); err != nil {
			return nil, fmt.Errorf("map %q: decoding %d-byte value into %T: %w: %w", s.Name, len(b), out[c], err, syscall.EINVAL)
		}
	}
	return out, nil
}

// UpdateValue stores val under key with flags (UpdateAny, UpdateNoExist,
// UpdateExist). On a per-CPU map every CPU slot gets val.
func UpdateValue[K, V any](m Map, key K, val V, flags uint64) error {
	s := m.Spec()
	kb, err := encodeFixed(s.Name, "key", key, s.KeySize)
	if err != nil {
		return err
	}
	vb, err := encodeFixed(s.Name, "value", val, s.ValueSize)
	if err != nil {
		return err
	}
	return updateWrapped(m, kb, replicatePerCPU(s, vb), flags)
}

// UpdateBytes stores value under key from the control plane, honouring
// BPF_F_RDONLY and Freeze (EPERM); value is value_size bytes, or on per-CPU
// maps the syscall layout (NumCPU values each rounded up to 8 bytes), as
// ParseKV returns it.
func UpdateBytes(m Map, key, value []byte, flags uint64) error {
	return updateWrapped(m, key, value, flags)
}

// DeleteKey removes key.
func DeleteKey[K any](m Map, key K) error {
	s := m.Spec()
	kb, err := encodeFixed(s.Name, "key", key, s.KeySize)
	if err != nil {
		return err
	}
	if err := checkSysWrite(m); err != nil {
		return err
	}
	if err := m.Delete(kb); err != nil {
		return fmt.Errorf("map %q: delete %x: %w", s.Name, kb, err)
	}
	return nil
}

// replicatePerCPU turns one value into the all-CPU layout of a per-CPU map
// (NumCPU copies, each rounded up to 8 bytes); other maps get v unchanged.
func replicatePerCPU(s Spec, v []byte) []byte {
	if !IsPerCPU(s.Type) {
		return v
	}
	stride := int(roundUp8(s.ValueSize))
	out := make([]byte, stride*s.NumCPU)
	for c := range s.NumCPU {
		copy(out[c*stride:], v)
	}
	return out
}

func updateWrapped(m Map, key, val []byte, flags uint64) error {
	if err := checkSysWrite(m); err != nil {
		return err
	}
	if err := m.Update(key, val, flags, -1); err != nil {
		return fmt.Errorf("map %q: update %x: %w", m.Spec().Name, key, err)
	}
	return nil
}

// All iterates the map in NextKey order, yielding a copy of each key and its
// value as the syscall would return it (per-CPU maps: NumCPU values, each
// rounded up to 8 bytes). Keys without a value (an empty devmap slot, any
// prog_array or xskmap slot) are skipped. Entries inserted or deleted during
// the walk may be missed or, on hash maps, seen twice (a deleted current key
// restarts the walk, as in the kernel); the walk stops after 2*max_entries+1
// keys in any case.
func All(m Map) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		s := m.Spec()
		if s.KeySize == 0 {
			return
		}
		var key []byte
		next := make([]byte, s.KeySize)
		for range 2*uint64(s.MaxEntries) + 1 {
			if err := m.NextKey(key, next); err != nil {
				return
			}
			key = append(key[:0], next...)
			v, err := lookupSyscall(m, key)
			if err != nil {
				continue
			}
			if !yield(append([]byte(nil), key...), v) {
				return
			}
		}
	}
}
