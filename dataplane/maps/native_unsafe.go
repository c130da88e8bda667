package maps

import (
	"sync/atomic"
	"unsafe"
)

// SlotTable describes the slots of a DevMap, DevMapHash, CPUMap or XSKMap
// to code that reads them without calling Go (the JIT's bpf_redirect_map):
// Base is the address of the first of N slots, each one aligned
// pointer-sized word holding nil (an empty slot) or the address of an
// immutable entry, read with one aligned load (what atomic.Pointer's Load
// is on amd64; on arm64 the loads through it depend on its address, which
// orders them after it); ValueOff is the offset in an entry of the value
// programs see (the first 4 bytes are the ifindex of a devmap entry). The
// slot array is made once with the map and never moves (the collector does
// not move heap objects): Base is valid as long as the map is reachable.
//
// When Chained is set (a DevMapHash) N is a power of two and slot
// key&(N-1) heads a chain of entries, newest first: an entry's uint32 key
// is at KeyOff and the address of the next one (0 after the last) at
// NextOff, fixed before the entry is published; the entry of a key is the
// first of its chain with that key.
type SlotTable struct {
	Base     uintptr
	N        uint32
	ValueOff uintptr
	Chained  bool
	KeyOff   uintptr
	NextOff  uintptr
}

// NativeSlots returns the slot table of m, when m is a DevMap, DevMapHash,
// CPUMap or XSKMap; ok is false for other maps.
func NativeSlots(m Map) (t SlotTable, ok bool) {
	switch mm := m.(type) {
	case *DevMap:
		return slotTable(mm.slots, unsafe.Offsetof(DevTarget{}.val))
	case *DevMapHash:
		t, ok = slotTable(mm.heads, unsafe.Offsetof(DevTarget{}.val))
		t.Chained = true
		t.KeyOff, t.NextOff = unsafe.Offsetof(DevTarget{}.Key), unsafe.Offsetof(DevTarget{}.next)
		return t, ok && t.N&(t.N-1) == 0
	case *CPUMap:
		return slotTable(mm.slots, unsafe.Offsetof(CPUTarget{}.val))
	case *XSKMap:
		return slotTable(mm.slots, unsafe.Offsetof(XSKSocket{}.val))
	}
	return t, false
}

func slotTable[T any](slots []atomic.Pointer[T], valueOff uintptr) (SlotTable, bool) {
	if unsafe.Sizeof(slots[0]) != unsafe.Sizeof(uintptr(0)) || len(slots) == 0 || uint64(len(slots)) > 1<<31 {
		return SlotTable{}, false
	}
	return SlotTable{Base: uintptr(unsafe.Pointer(unsafe.SliceData(slots))), N: uint32(len(slots)), ValueOff: valueOff}, true
}

// NativeProgSlots is NativeSlots for a program array: an entry holds the
// program in an interface (type word, then data word) at ValueOff.
func NativeProgSlots(p *ProgArray) (SlotTable, bool) {
	return slotTable(p.slots, unsafe.Offsetof(progSlot{}.prog))
}
