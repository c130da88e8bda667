package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// progArrayMap stands in for a BPF_MAP_TYPE_PROG_ARRAY when the maps package
// cannot create one. The slots themselves live in the collection (set with
// Collection.SetTailCall), since a program is not bytes; through the Map
// interface the array looks empty, and updates explain what to do.
type progArrayMap struct {
	spec maps.Spec
	ref  *mapRef
}

func (m *progArrayMap) Spec() maps.Spec { return m.spec }

// Lookup returns nil: the kernel does not let programs look into a program
// array either.
func (m *progArrayMap) Lookup(key []byte, cpu int) []byte { return nil }

func (m *progArrayMap) Update(key, value []byte, flags uint64, cpu int) error {
	return syscall.EINVAL
}

func (m *progArrayMap) Delete(key []byte) error {
	if len(key) != 4 || m.ref == nil {
		return syscall.EINVAL
	}
	i := uint32(key[0]) | uint32(key[1])<<8 | uint32(key[2])<<16 | uint32(key[3])<<24
	if int(i) >= len(m.ref.progs) {
		return syscall.E2BIG
	}
	if m.ref.progs[i].Swap(nil) == nil {
		return syscall.ENOENT
	}
	return nil
}

func (m *progArrayMap) NextKey(key, next []byte) error {
	if len(next) != 4 || m.ref == nil {
		return syscall.EINVAL
	}
	start := 0
	if key != nil {
		if len(key) != 4 {
			return syscall.EINVAL
		}
		start = int(uint32(key[0])|uint32(key[1])<<8|uint32(key[2])<<16|uint32(key[3])<<24) + 1
	}
	for i := start; i < len(m.ref.progs); i++ {
		if m.ref.progs[i].Load() != nil {
			next[0], next[1], next[2], next[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			return nil
		}
	}
	return syscall.ENOENT
}
