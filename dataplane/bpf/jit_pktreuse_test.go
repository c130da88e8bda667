package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// pktReuse (the buffer and offset of one proven packet access kept for the
// next one through the same register) on straight lines that keep the
// scratch registers and on ones that must not reuse them: the base
// written, a shift by a register (amd64's goes through a scratch), a jump
// target, another base, a division, a load into the base; each decision
// is checked, and each program (returning the sum of the bytes it loaded)
// is run against the interpreter on frames around its bound.
func TestJITPacketReuse(t *testing.T) {
	ldb := func(dst, base asm.Register, off int16) asm.Instruction {
		return asm.LoadMem(dst, base, off, asm.Byte)
	}
	sum := asm.Instructions{asm.Mov.Reg(asm.R5, asm.R6), asm.Add.Reg(asm.R5, asm.R7), asm.Add.Reg(asm.R5, asm.R8)}
	cases := []struct {
		name  string
		body  asm.Instructions
		reuse int // accesses that reuse
	}{
		{"straight", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.Mov.Imm(asm.R9, 3), asm.Add.Imm(asm.R9, 1),
			ldb(asm.R7, asm.R2, 2), asm.StoreMem(asm.R2, 5, asm.R7, asm.Byte), ldb(asm.R8, asm.R2, 5)}, 3},
		{"base written", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.Add.Imm(asm.R2, 4), ldb(asm.R7, asm.R2, 1),
			ldb(asm.R8, asm.R2, 2)}, 1},
		{"shift by register", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.Mov.Imm(asm.R9, 3), asm.Mov.Imm(asm.R8, 1),
			asm.LSh.Reg(asm.R8, asm.R9), ldb(asm.R7, asm.R2, 2)}, 0},
		{"jump target", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.JEq.Imm(asm.R6, 0, "t"), asm.Mov.Imm(asm.R8, 1),
			ldb(asm.R7, asm.R2, 2).WithSymbol("t")}, 0},
		{"forward jump", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.JEq.Imm(asm.R6, 0, "out"), ldb(asm.R7, asm.R2, 2)}, 1},
		{"other base", asm.Instructions{asm.Mov.Reg(asm.R9, asm.R2), asm.Add.Imm(asm.R9, 8), ldb(asm.R6, asm.R2, 1),
			ldb(asm.R7, asm.R9, 0), ldb(asm.R8, asm.R2, 3)}, 0},
		{"division", asm.Instructions{ldb(asm.R6, asm.R2, 1), asm.Mov.Imm(asm.R8, 7), asm.Div.Imm(asm.R8, 2),
			ldb(asm.R7, asm.R2, 2)}, 0},
		{"loaded into the base", asm.Instructions{asm.Mov.Reg(asm.R9, asm.R2), ldb(asm.R6, asm.R9, 1), ldb(asm.R9, asm.R9, 2),
			ldb(asm.R7, asm.R2, 3), asm.Add.Reg(asm.R7, asm.R9)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := append(asm.Instructions{asm.Mov.Imm(asm.R6, 0), asm.Mov.Imm(asm.R7, 0), asm.Mov.Imm(asm.R8, 0)}, bound(16)...)
			body = append(body, tc.body...)
			insns := append(asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Mov.Imm(asm.R5, 0)}, ctxPtrs...)
			insns = append(append(append(insns, body...), sum...), asm.Mov.Reg(asm.R0, asm.R5), asm.Return(),
				asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
			pi := loadRange(t, insns, EngineInterp)
			plain, funcs := plainOf(t, insns) // jit_plain_test.go
			got := 0
			proven := provenIn(plain, jitEnv{funcs: funcs})
			targets := jumpTargets(plain, funcs)
			for pc, in := range plain {
				if (isLoad(in.op) || isStore(in.op)) && proven[pc] == regionPacket {
					base := in.src
					if isStore(in.op) {
						base = in.dst
					}
					if pktReuse(plain, targets, proven, pc, base) {
						got++
					}
				}
			}
			if got != tc.reuse {
				t.Fatalf("%d accesses reuse the scratch registers, want %d\n%s", got, tc.reuse, pi.Disasm())
			}
			if !jitArch {
				return
			}
			pj := loadRange(t, insns, EngineJIT)
			for n := 14; n <= 20; n++ {
				pkt := make([]byte, n)
				for i := range pkt {
					pkt[i] = byte(i*7 + 1)
				}
				runBoth(t, pi, pj, pkt)
			}
		})
	}
}
