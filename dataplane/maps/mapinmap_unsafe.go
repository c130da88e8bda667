package maps

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// storeSlot writes the 4-byte id value into an ARRAY_OF_MAPS slot with one
// atomic 32-bit store, so that a program reading the slot while the
// control plane swaps inner maps sees the old id or the new one, never
// halves of both (copy may store a 4-byte value as two halves). A slot the
// Array does not have, or an unaligned one (never: slots are 8 bytes
// apart in a word-aligned allocation), takes Update's way and its errors.
func (m *MapOfMaps) storeSlot(key, value []byte, flags uint64) error {
	a, ok := m.slots.(*Array)
	if !ok || len(value) != 4 || flags != UpdateAny {
		return m.slots.Update(key, value, flags, 0)
	}
	v := a.Lookup(key, 0)
	if len(v) < 4 || uintptr(unsafe.Pointer(&v[0]))%4 != 0 {
		return m.slots.Update(key, value, flags, 0)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&v[0])), binary.LittleEndian.Uint32(value))
	return nil
}
