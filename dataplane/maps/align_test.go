package maps

import (
	"reflect"
	"testing"

	"github.com/cilium/ebpf"
)

// TestValueAlignment: every value a program can reach through Lookup starts on
// an 8-byte boundary, so the interpreter's 64-bit atomics on it are aligned.
func TestValueAlignment(t *testing.T) {
	for _, s := range []Spec{
		{Type: ebpf.Array, KeySize: 4, ValueSize: 3, MaxEntries: 5},
		{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 3, MaxEntries: 5, NumCPU: 3},
		{Type: ebpf.Hash, KeySize: 3, ValueSize: 5, MaxEntries: 5},
		{Type: ebpf.Hash, KeySize: 3, ValueSize: 5, MaxEntries: 5, Flags: FlagNoPrealloc},
		{Type: ebpf.PerCPUHash, KeySize: 3, ValueSize: 5, MaxEntries: 5, NumCPU: 3},
		{Type: ebpf.LRUHash, KeySize: 3, ValueSize: 5, MaxEntries: 5},
		{Type: ebpf.LPMTrie, KeySize: 5, ValueSize: 8, MaxEntries: 5, Flags: FlagNoPrealloc},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 5},
		{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 2, NumCPU: 2},
	} {
		m := mustNew(t, s)
		nc := max(1, s.NumCPU)
		for i := range min(4, s.MaxEntries) {
			key := make([]byte, s.KeySize)
			key[0] = byte(i)
			if s.Type == ebpf.LPMTrie {
				key[0], key[4] = 8, byte(i)
			}
			val := make([]byte, s.ValueSize)
			val[0] = 1
			if IsPerCPU(s.Type) {
				val = replicatePerCPU(m.Spec(), val)
			}
			if err := m.Update(key, val, UpdateAny, -1); err != nil && s.Type != ebpf.Array && s.Type != ebpf.PerCPUArray {
				t.Fatalf("%v update: %v", s.Type, err)
			}
			for c := range nc {
				v := m.Lookup(key, c)
				if v == nil {
					t.Fatalf("%v key %x cpu %d: no value", s.Type, key, c)
				}
				if p := reflect.ValueOf(v).Pointer(); p%8 != 0 {
					t.Fatalf("%v key %x cpu %d: value at %#x, not 8-byte aligned", s.Type, key, c, p)
				}
			}
		}
	}
}

// TestPerCPUSlotsApart: the CPU slots of one entry sit on different cache
// lines (CPU-major layout), so counters bumped by different poll goroutines
// do not false-share.
func TestPerCPUSlotsApart(t *testing.T) {
	for _, s := range []Spec{
		{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 16, NumCPU: 4},
		{Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 16, NumCPU: 4},
		{Type: ebpf.LRUCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 16, NumCPU: 4},
	} {
		m := mustNew(t, s)
		if IsPerCPU(s.Type) && s.Type != ebpf.PerCPUArray {
			if err := m.Update(u32(3), u64(1), UpdateAny, 0); err != nil {
				t.Fatal(err)
			}
		}
		var addrs []uintptr
		for c := range 4 {
			addrs = append(addrs, reflect.ValueOf(m.Lookup(u32(3), c)).Pointer())
		}
		for c := 1; c < 4; c++ {
			if d := addrs[c] - addrs[c-1]; d < 64 {
				t.Errorf("%v: CPU %d and %d slots %d bytes apart, want a cache line at least", s.Type, c-1, c, d)
			}
		}
	}
}
