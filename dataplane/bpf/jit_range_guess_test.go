package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Tests of the hints of the range analysis (jit_range_guess.go): the
// region an access is guessed in, and global data pointers known exactly.

// TestRangeHints: rangeIn tells an exact global data pointer, a global
// data pointer with a variable offset, and stack pointers through r10 and
// through a copy of it.
func TestRangeHints(t *testing.T) {
	c, _ := loadLinkColl(t, linkProg(), EngineInterp, 0)
	data := int64(regionStatic + c.staticIndex[".data"])
	plain := []insn{
		{op: opStB, dst: 10, off: -8},
		{op: opLdxB, dst: 1, src: 10, off: -8},        // r1 in [0, 255]
		{op: opLdMapValue, dst: 6, imm: data<<32 | 8}, // r6 = .data+8
		{op: opLdxB, dst: 0, src: 6, off: 1},          // proven, exact
		{op: opAdd64X, dst: 6, src: 1},                // .data+8+[0, 255]
		{op: opLdxB, dst: 0, src: 6},                  // not proven: guessed in .data
		{op: opMov64X, dst: 7, src: 10},               // a copy of r10
		{op: opAdd64X, dst: 7, src: 1},                // plus a scalar
		{op: opLdxB, dst: 0, src: 7, off: -300},       // guessed on the stack
		{op: opMov64K, dst: 8, imm: 1 << 20},          // not a range the analysis keeps
		{op: opAdd64X, dst: 6, src: 8},                // so r6 is unknown
		{op: opLdxB, dst: 0, src: 6},                  // no guess
		{op: opExit},
	}
	proven, hints := rangeIn(plain, jitEnv{coll: c})
	want := map[int]accessHint{
		1:  {region: regionStack},
		3:  {region: int32(data), exact: true, off: 8},
		5:  {region: int32(data)},
		8:  {region: regionStack},
		11: {},
	}
	for pc, h := range want {
		if hints[pc] != h {
			t.Errorf("pc %d: hint %+v, want %+v", pc, hints[pc], h)
		}
	}
	if proven[3] != int32(data) || proven[5] != 0 || proven[11] != 0 {
		t.Errorf("proven %v", proven)
	}
}

// guessCases are programs whose accesses are not proven but guessed in a
// region (linkProg's prologue: r5 is the packet's byte 8), each run on
// every value of that byte: in bounds, at the edges and past them.
var guessCases = map[string][]asm.Instruction{
	// .data plus a variable offset of up to 63 (the table is 40 bytes):
	// loads and stores of 1 and 8 bytes, atomic adds (aligned or not).
	"global data": {
		asm.And.Imm(asm.R5, 63), asm.LoadMapValue(asm.R6, 0, 0).WithReference(".data"), asm.Add.Reg(asm.R6, asm.R5),
		asm.LoadMem(asm.R0, asm.R6, 0, asm.Byte), asm.StoreMem(asm.R6, -1, asm.R0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.DWord), asm.Add.Reg(asm.R0, asm.R7),
		asm.StoreMem(asm.R6, 0, asm.R5, asm.DWord),
		asm.StoreXAdd(asm.R6, asm.R5, asm.Word), asm.StoreXAdd(asm.R6, asm.R5, asm.DWord),
	},
	// .rodata plus an offset of up to 15 (8 bytes): loads in bounds, and a
	// store, which faults always.
	"read-only data": {
		asm.And.Imm(asm.R5, 15), asm.LoadMapValue(asm.R6, 0, 0).WithReference(".rodata"), asm.Add.Reg(asm.R6, asm.R5),
		asm.LoadMem(asm.R0, asm.R6, 0, asm.Byte), asm.JEq.Imm(asm.R0, 7, "out"),
		asm.StoreMem(asm.R6, 0, asm.R0, asm.Byte),
	},
	// A copy of r10 minus 16 plus up to 31: 8-byte loads and stores that
	// leave the stack past offset 8.
	"stack": {
		asm.Mov.Imm(asm.R6, 0x1234), asm.StoreMem(asm.RFP, -8, asm.R6, asm.DWord), asm.StoreMem(asm.RFP, -16, asm.R4, asm.DWord),
		asm.And.Imm(asm.R5, 31), asm.Mov.Reg(asm.R7, asm.RFP), asm.Add.Imm(asm.R7, -16), asm.Add.Reg(asm.R7, asm.R5),
		asm.LoadMem(asm.R0, asm.R7, 0, asm.DWord), asm.StoreMem(asm.R7, 0, asm.R5, asm.DWord),
		asm.LoadMem(asm.R6, asm.RFP, -8, asm.DWord), asm.Add.Reg(asm.R0, asm.R6),
	},
	// A lookup's value (.data's, key 0; key 1 is past the array: NULL)
	// plus a variable offset of up to 63: guessed in a map value.
	"map value": {
		asm.Mov.Reg(asm.R6, asm.R5), asm.And.Imm(asm.R6, 63), asm.And.Imm(asm.R5, 64), asm.RSh.Imm(asm.R5, 6),
		asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word), asm.LoadMapPtr(asm.R1, 0).WithReference(".data"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4), asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"), asm.Add.Reg(asm.R0, asm.R6), asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R0, asm.R7, 0, asm.Byte), asm.StoreMem(asm.R7, 1, asm.R0, asm.Byte),
		asm.LoadMem(asm.R8, asm.R7, 0, asm.DWord), asm.Add.Reg(asm.R0, asm.R8),
	},
	// Exact pointers into .data and .rodata, read and written at
	// constant offsets (some negative), interleaved, with a jump target
	// between two of them.
	"exact": {
		asm.LoadMapValue(asm.R1, 0, 8).WithReference(".data"), asm.LoadMem(asm.R0, asm.R1, -8, asm.DWord),
		asm.LoadMapValue(asm.R2, 0, 0).WithReference(".rodata"), asm.LoadMem(asm.R3, asm.R2, 7, asm.Byte),
		asm.Add.Reg(asm.R0, asm.R3), asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord),
		asm.JEq.Imm(asm.R5, 0, "t"), asm.Add.Imm(asm.R0, 1),
		asm.LoadMapValue(asm.R4, 0, 32).WithReference(".data").WithSymbol("t"), asm.StoreMem(asm.R4, 4, asm.R0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 31, asm.Byte), asm.Add.Reg(asm.R0, asm.R3),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.Half), asm.Add.Reg(asm.R0, asm.R3),
	},
}

// TestJITGuessedRegions: the guessed accesses give the interpreter's
// verdicts, faults and data on every value of the offset byte.
func TestJITGuessedRegions(t *testing.T) {
	needJIT(t)
	for name, body := range guessCases {
		t.Run(name, func(t *testing.T) {
			insns := linkProg(body...)
			ci, pi := loadLinkColl(t, insns, EngineInterp, 0)
			cj, pj := loadLinkColl(t, insns, EngineJIT, 0)
			var frames [][]byte
			for b := 0; b < 128; b++ {
				pkt := make([]byte, 16)
				pkt[8] = byte(b)
				frames = append(frames, pkt)
			}
			faults := linkRuns(t, ci, cj, pi, pj, frames)
			if name == "exact" {
				if n := pj.jit.Load().proven; n != 2+6 || faults != 0 {
					t.Errorf("%d accesses proven, %d faults, want 8 and none\n%s", n, faults, pj.Disasm())
				}
			} else if faults == 0 || faults == len(frames) && name != "read-only data" {
				t.Errorf("%d of %d frames fault: the edges are not exercised", faults, len(frames))
			}
		})
	}
}
