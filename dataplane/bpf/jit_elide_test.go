//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestJITValueElided runs lookups whose result is used only for its NULL
// check and in-bounds accesses (the region left out: one table
// entry fewer than the interpreter's) beside ones where the pointer escapes
// the analysis (spilled and reloaded, copied, compared, returned, used past
// an exit to Go or out of bounds): those must keep their region, and every
// run must give the interpreter's verdict, fault and maps. (A pointer
// made after an elided lookup gets a region number one lower than the
// interpreter's: see jit_elide.go; these programs do not leak numbers.)
func TestJITValueElided(t *testing.T) {
	needJIT(t)
	lk := func(m string, k int32) asm.Instructions {
		return append(movKey(k), lookupKey(m, asm.R6)...)
	}
	cnt := func(m string, off int16) asm.Instructions { // *(u64 *)(r0+off) += 1
		return asm.Instructions{asm.LoadMem(asm.R1, asm.R0, off, asm.DWord),
			asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R0, off, asm.R1, asm.DWord)}
	}
	nullTo := func(l string) asm.Instructions { return asm.Instructions{asm.JEq.Imm(asm.R0, 0, l)} }
	end := func(l string) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R0, 2).WithSymbol(l)} }
	cases := map[string]struct {
		insns  asm.Instructions
		elided int
	}{
		"counter": {insns: prog(lk("pcpu", 1), nullTo("e"), cnt("pcpu", 0), end("e")), elided: elideArch},
		"two counters": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0), asm.Instructions{asm.StoreImm(asm.R0, 8, 7, asm.Word)},
			end("e"), lk("arr", 2), nullTo("f"), cnt("arr", 4), end("f"), lk("arr", 3), asm.Instructions{asm.JEq.Imm(asm.R0, 0, "g"),
				asm.StoreMem(asm.RFP, -16, asm.R0, asm.DWord), asm.LoadMem(asm.R2, asm.RFP, -16, asm.DWord),
				asm.LoadMem(asm.R9, asm.R2, 4, asm.Word), asm.Mov.Imm(asm.R1, 0).WithSymbol("g")}), elided: 2 * elideArch},
		"spilled and reloaded": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.StoreMem(asm.RFP, -16, asm.R0, asm.DWord), asm.Mov.Imm(asm.R0, 0),
				asm.LoadMem(asm.R2, asm.RFP, -16, asm.DWord), asm.LoadMem(asm.R9, asm.R2, 4, asm.Word)}, end("e"))},
		"pointer stored in the value": {insns: prog(lk("arr", 1), nullTo("e"),
			asm.Instructions{asm.StoreMem(asm.R0, 0, asm.R0, asm.DWord), asm.Mov.Imm(asm.R0, 0), asm.LoadMem(asm.R9, asm.R0, 0, asm.DWord)}, end("e"))},
		"copied": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.Mov.Reg(asm.R3, asm.R0), asm.Mov.Imm(asm.R0, 0), asm.LoadMem(asm.R9, asm.R3, 4, asm.Word)}, end("e"))},
		"returned": {insns: cat(lk("arr", 1), nullTo("e"), cnt("arr", 0), asm.Instructions{asm.RSh.Imm(asm.R0, 32).WithSymbol("e"), asm.Return()})},
		"compared": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.Mov.Imm(asm.R7, 1), asm.LSh.Imm(asm.R7, 34), asm.JGT.Reg(asm.R0, asm.R7, "e"), asm.Mov.Imm(asm.R9, 5)}, end("e"))},
		"to a helper": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.Mov.Reg(asm.R2, asm.R0), asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
				asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Mov.Reg(asm.R9, asm.R0)}, end("e"))},
		"live at the NULL target": {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.RSh.Imm(asm.R0, 32).WithSymbol("e"), asm.Mov.Reg(asm.R9, asm.R0)})},
		"out of bounds":   {insns: prog(lk("arr", 1), nullTo("e"), cnt("arr", 8), end("e"))},
		"read-only store": {insns: prog(lk("ro", 1), nullTo("e"), cnt("ro", 0), end("e"))},
		"across a packet load": {insns: prog(asm.Instructions{asm.Mov.Reg(asm.R8, asm.R1)}, lk("arr", 1), nullTo("e"), cnt("arr", 0),
			asm.Instructions{asm.LoadMem(asm.R2, asm.R8, 0, asm.Word), asm.LoadMem(asm.R9, asm.R0, 4, asm.Word)}, end("e"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ci, pi := loadLookup(t, tc.insns, EngineInterp)
			cj, pj := loadLookup(t, tc.insns, EngineJIT)
			ri, rj := NewRunner(1), NewRunner(1)
			for run := range 3 {
				fi, fj := newFrame(udpFrame(9)), newFrame(udpFrame(9))
				vi, oki := ri.RunFrame(pi, fi)
				vj, okj := rj.RunFrame(pj, fj)
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("run %d: interpreter %#x %v (%v), JIT %#x %v (%v)", run, vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				if len(ri.regions) != len(rj.regions)+tc.elided {
					t.Fatalf("run %d: region tables of %d and %d entries, want %d elided", run, len(ri.regions), len(rj.regions), tc.elided)
				}
				if mi, mj := lookupBytes(t, ci), lookupBytes(t, cj); !bytes.Equal(mi, mj) {
					t.Fatalf("run %d: maps differ\ninterp %x\njit    %x", run, mi, mj)
				}
			}
		})
	}
}

// TestRegDead checks regDead on the paths valueElided relies on: a write
// kills, a read, exit (r0), a tail call, a backward jump or a read on
// either way of a branch keeps the register live.
func TestRegDead(t *testing.T) {
	cases := []struct {
		name  string
		insns asm.Instructions
		dead  bool
	}{
		{"mov", asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}, true},
		{"exit", asm.Instructions{asm.Return()}, false},
		{"add", asm.Instructions{asm.Add.Imm(asm.R0, 1), asm.Return()}, false},
		{"load into", asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 0, asm.Word), asm.Return()}, true},
		{"load through", asm.Instructions{asm.LoadMem(asm.R0, asm.R0, 0, asm.Word), asm.Return()}, false},
		{"spill", asm.Instructions{asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord), asm.Mov.Imm(asm.R0, 1), asm.Return()}, false},
		{"helper", asm.Instructions{asm.FnKtimeGetNs.Call(), asm.Return()}, true},
		{"tail call", asm.Instructions{asm.FnTailCall.Call(), asm.Mov.Imm(asm.R0, 1), asm.Return()}, false},
		{"both ways", asm.Instructions{asm.JEq.Imm(asm.R1, 0, "l"), asm.Mov.Imm(asm.R0, 1), asm.Return(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("l"), asm.Return()}, true},
		{"read on the jump", asm.Instructions{asm.JEq.Imm(asm.R1, 0, "l"), asm.Mov.Imm(asm.R0, 1), asm.Return(),
			asm.Mov.Reg(asm.R2, asm.R0).WithSymbol("l"), asm.Return()}, false},
		{"goto", asm.Instructions{asm.Ja.Label("l"), asm.Return(), asm.Mov.Imm(asm.R0, 2).WithSymbol("l"), asm.Return()}, true},
	}
	for _, tc := range cases {
		plain, _ := plainOf(t, tc.insns)
		steps := elideMaxSteps
		if got := regDead(plain, 0, 0, &steps); got != tc.dead {
			t.Errorf("%s: regDead = %v, want %v", tc.name, got, tc.dead)
		}
	}
}
