package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestJITRangeRandom compares the JIT with the interpreter on random
// programs made for the range analysis: scalars loaded from the packet,
// copied by 64-bit, 32-bit and sign-extending moves, changed by ALU
// operations, spilled and filled, compared with constants and with each
// other (forward and, now and then, backward jumps, 32-bit and signed
// forms), across helper calls, then used as offsets into global data, the
// packet and the stack. Every run must give the interpreter's verdict,
// fault, frame and global data; and the analysis must prove some of the
// variable accesses, or the test would not exercise it.
func TestJITRangeRandom(t *testing.T) {
	needJIT(t)
	n := 600
	if testing.Short() {
		n = 150
	}
	rng := rand.New(rand.NewPCG(21, 7))
	frames := rangeRandFrames(rng)
	provedVar := 0
	for i := 0; i < n; i++ {
		insns, fixed := rangeRandProg(rng)
		ci, pi := loadLinkColl(t, insns, EngineInterp, 3000)
		cj, pj := loadLinkColl(t, insns, EngineJIT, 3000)
		if pj.jit.Load().proven > fixed {
			provedVar++
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			linkRuns(t, ci, cj, pi, pj, frames) // jit_range_link_test.go
		})
		if t.Failed() {
			t.Fatalf("program %d:\n%s", i, pj.Disasm())
		}
	}
	t.Logf("%d of %d programs have a variable access proven", provedVar, n)
	if provedVar < n/20 {
		t.Errorf("%d of %d programs have a variable access proven: the generator misses the analysis", provedVar, n)
	}
}

// rangeRandFrames are 32-byte frames of small values (offsets at the
// edges of the tables), random bytes, and each cut short.
func rangeRandFrames(rng *rand.Rand) [][]byte {
	var out [][]byte
	for k := 0; k < 6; k++ {
		pkt := make([]byte, 32)
		for i := range pkt {
			switch {
			case k < 3:
				pkt[i] = byte(rng.IntN(9))
			default:
				pkt[i] = byte(rng.Uint32())
			}
		}
		out = append(out, pkt)
	}
	return append(out, out[0][:20], out[4][:12])
}

// rangeRegs are the registers random programs compute with (r6 holds
// data, r7 data_end).
var rangeRegs = []asm.Register{asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R8, asm.R9}

// rangeRandProg is a random program and how many of its accesses are at
// constant offsets that the analysis always proves (packet loads below the
// first compare's 24 bytes).
func rangeRandProg(rng *rand.Rand) (asm.Instructions, int) {
	reg := func() asm.Register { return rangeRegs[rng.IntN(len(rangeRegs))] }
	sizes := []asm.Size{asm.Byte, asm.Half, asm.Word, asm.DWord}
	out := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.Word), asm.LoadMem(asm.R7, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6), asm.Add.Imm(asm.R1, 24), asm.JGT.Reg(asm.R1, asm.R7, "out"),
	}
	fixed := 0
	out = append(out, asm.StoreMem(asm.RFP, -24, asm.R7, asm.DWord)) // data_end, for rangeRandLinked
	for _, r := range rangeRegs {
		sz := sizes[rng.IntN(4)]
		out = append(out, asm.LoadMem(r, asm.R6, int16(rng.IntN(24-int(sz.Sizeof())+1)), sz))
		fixed++
	}
	body := 6 + rng.IntN(24)
	label := func(i int) string { return fmt.Sprintf("L%d", i) }
	target := func(i int) string {
		if j := i + 1 + rng.IntN(body-i); j < body {
			return label(j)
		}
		return "out"
	}
	for i := 0; i < body; i++ {
		insns, f := rangeRandOp(rng, reg, i, target)
		fixed += f
		if i > 1 && rng.IntN(25) == 0 { // now and then a loop
			insns = append(insns, asm.JGT.Imm(reg(), int32(rng.IntN(4)), label(rng.IntN(i))))
		}
		insns[0] = insns[0].WithSymbol(label(i))
		out = append(out, insns...)
	}
	return append(out, asm.And.Imm(asm.R0, 3), asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("out"), asm.Return()), fixed
}

// rangeRandOp is one random step of rangeRandProg (instruction i; target
// picks a forward label) and how many constant packet loads it has.
func rangeRandOp(rng *rand.Rand, reg func() asm.Register, i int, target func(int) string) (asm.Instructions, int) {
	x, y, z := reg(), reg(), reg()
	small := func() int32 { return int32(rng.IntN(12)) - 2 }
	jumps := []asm.JumpOp{asm.JEq, asm.JNE, asm.JGT, asm.JGE, asm.JLT, asm.JLE, asm.JSGT, asm.JSGE, asm.JSLT, asm.JSLE}
	j := jumps[rng.IntN(len(jumps))]
	sizes := []asm.Size{asm.Byte, asm.Half, asm.Word, asm.DWord}
	sz := sizes[rng.IntN(4)]
	switch rng.IntN(18) {
	case 17: // two global pointers that meet (meetStatic), then an access
		return rangeRandMerged(rng, x, y, z, i, sz), 0
	case 14, 15, 16: // a copy compared, the other copy (or one written since) indexing
		return rangeRandLinked(rng, reg, i, target), 0
	case 0:
		return asm.Instructions{asm.LoadMem(x, asm.R6, int16(rng.IntN(24-int(sz.Sizeof())+1)), sz)}, 1
	case 1, 2:
		return asm.Instructions{asm.Mov.Reg(x, y)}, 0
	case 3:
		return asm.Instructions{asm.Mov.Reg32(x, y)}, 0
	case 4:
		ops := []asm.ALUOp{asm.MovSX8, asm.MovSX16, asm.MovSX32}
		return asm.Instructions{ops[rng.IntN(3)].Reg(x, y)}, 0
	case 5:
		ops := []asm.ALUOp{asm.And, asm.Add, asm.LSh, asm.RSh, asm.Or, asm.Sub, asm.Mov}
		k := []int32{7, 15, 63, 1, 3, 4, 5}[rng.IntN(7)]
		return asm.Instructions{ops[rng.IntN(len(ops))].Imm(x, k)}, 0
	case 6, 7:
		if rng.IntN(3) == 0 {
			return asm.Instructions{j.Imm32(x, small(), target(i))}, 0
		}
		return asm.Instructions{j.Imm(x, small(), target(i))}, 0
	case 8:
		if rng.IntN(3) == 0 {
			return asm.Instructions{j.Reg32(x, y, target(i))}, 0
		}
		return asm.Instructions{j.Reg(x, y, target(i))}, 0
	case 9:
		return asm.Instructions{asm.FnGetSmpProcessorId.Call()}, 0
	case 10:
		return asm.Instructions{asm.StoreMem(asm.RFP, -8, x, asm.DWord), asm.LoadMem(y, asm.RFP, -8, asm.DWord)}, 0
	case 11: // global data at a variable offset
		ref := ".data"
		if rng.IntN(4) == 0 {
			ref = ".rodata"
		}
		acc := asm.LoadMem(y, z, int16(rng.IntN(12)-4), sz)
		if rng.IntN(2) == 0 {
			acc = asm.StoreMem(z, int16(rng.IntN(12)-4), y, sz)
		}
		return asm.Instructions{asm.LoadMapValue(z, 0, uint32(rng.IntN(8))).WithReference(ref), asm.Add.Reg(z, x), acc}, 0
	case 12: // the packet at a variable offset, compared with data_end first
		return asm.Instructions{
			asm.Mov.Reg(z, asm.R6), asm.Add.Reg(z, x), asm.Mov.Reg(y, z), asm.Add.Imm(y, int32(rng.IntN(6))),
			asm.JGT.Reg(y, asm.R7, target(i)), asm.LoadMem(y, z, int16(rng.IntN(4)), asm.Byte),
		}, 0
	default: // the stack at a variable offset through a copy of r10
		return asm.Instructions{
			asm.Mov.Reg(z, asm.RFP), asm.Add.Imm(z, -32), asm.Add.Reg(z, x), asm.LoadMem(y, z, 0, sz),
		}, 0
	}
}

// rangeRandMerged is clang's merged tail of two counters: z set to a
// global pointer on each of two paths (the same region or not, offsets
// apart by up to the region's size), then a load or store through z at an
// offset that may reach past the region's end on one path only.
func rangeRandMerged(rng *rand.Rand, x, y, z asm.Register, i int, sz asm.Size) asm.Instructions {
	ptr := func() asm.Instruction {
		if rng.IntN(4) == 0 {
			return asm.LoadMapValue(z, 0, uint32(rng.IntN(8))).WithReference(".rodata")
		}
		return asm.LoadMapValue(z, 0, uint32(rng.IntN(linkTable))).WithReference(".data")
	}
	join := fmt.Sprintf("M%d", i)
	acc := asm.LoadMem(y, z, int16(rng.IntN(10)-2), sz).WithSymbol(join)
	if rng.IntN(2) == 0 {
		acc = asm.StoreMem(z, int16(rng.IntN(10)-2), y, sz).WithSymbol(join)
	}
	return asm.Instructions{ptr(), asm.JGT.Imm(x, int32(rng.IntN(4)), join), ptr(), acc}
}

// rangeRandLinked is clang's pattern of linked scalars, now and then
// broken: y copied into x (a 64-bit, 32-bit or sign-extending move),
// maybe a write of one of them or a helper call, a compare of one with a
// constant, and an access to .data at the other as offset.
func rangeRandLinked(rng *rand.Rand, reg func() asm.Register, i int, target func(int) string) asm.Instructions {
	x, y := reg(), reg()
	movs := []asm.Instruction{asm.Mov.Reg(x, y), asm.Mov.Reg(x, y), asm.Mov.Reg32(x, y), asm.MovSX8.Reg(x, y), asm.MovSX32.Reg(x, y)}
	out := asm.Instructions{movs[rng.IntN(len(movs))]}
	switch rng.IntN(6) {
	case 0:
		out = append(out, asm.Add.Imm([]asm.Register{x, y}[rng.IntN(2)], 1))
	case 1:
		out = append(out, asm.LoadMem([]asm.Register{x, y}[rng.IntN(2)], asm.R6, 8, asm.Half))
	case 2:
		out = append(out, asm.FnGetSmpProcessorId.Call())
	case 3:
		out = append(out, asm.StoreMem(asm.RFP, -16, y, asm.DWord), asm.LoadMem(y, asm.RFP, -16, asm.DWord))
	}
	cmp, idx := x, y
	if rng.IntN(2) == 0 {
		cmp, idx = y, x
	}
	jumps := []asm.JumpOp{asm.JGT, asm.JGE, asm.JSGT, asm.JSGE}
	k := int32(rng.IntN(8))
	if rng.IntN(4) == 0 {
		out = append(out, jumps[rng.IntN(len(jumps))].Imm32(cmp, k, target(i)))
	} else {
		out = append(out, jumps[rng.IntN(len(jumps))].Imm(cmp, k, target(i)))
	}
	z := asm.R7 // data_end, free after the first compare: restored below
	sizes := []asm.Size{asm.Byte, asm.Half, asm.Word, asm.DWord}
	sz := sizes[rng.IntN(4)]
	return append(out, asm.LSh.Imm(idx, int32(rng.IntN(4))),
		asm.LoadMapValue(z, 0, uint32(rng.IntN(8))).WithReference(".data"), asm.Add.Reg(z, idx),
		asm.LoadMem(idx, z, 0, sz), asm.StoreMem(z, 0, idx, sz), asm.LoadMem(z, asm.R10, -24, asm.DWord))
}
