//go:build linux && arm64

package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestJITHashHeapLDAR: the arm64 walk of a BPF_F_NO_PREALLOC map loads
// with LDAR what Go's findLockFree loads atomically (the bucket, the hash,
// every key word, the next link), which a preallocated map's walk loads
// plainly: a lookup in np4 (one key word) has 4 LDARs more than one in h3,
// one in np24 (three) 6 more than one in h17. The differential and
// concurrent tests cannot tell a plain load from an acquire under qemu.
func TestJITHashHeapLDAR(t *testing.T) {
	needJIT(t)
	ldars := func(name string) int {
		insns := append(setHashKey(1, uint32(len(hashKeyOf(t, name, 0)))), asm.LoadMapPtr(asm.R1, 0).WithReference(name),
			asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Return())
		_, p := loadHashProg(t, insns, EngineJIT)
		j := p.jit.Load()
		if j == nil || j.native != 1 {
			t.Fatalf("%s: not native", name)
		}
		n := 0
		for i := 0; i+4 <= len(j.mem); i += 4 {
			if binary.LittleEndian.Uint32(j.mem[i:])&^0x3ff == a64Ldar {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		heap, prealloc string
		more           int
	}{{"np4", "h3", 4}, {"np24", "h17", 6}} {
		if d := ldars(tc.heap) - ldars(tc.prealloc); d != tc.more {
			t.Errorf("%s: %d LDARs more than %s, want %d", tc.heap, d, tc.prealloc, tc.more)
		}
	}
}
