//go:build linux && (amd64 || arm64)

package bpf

import (
	"fmt"
	"math"
	"testing"
)

// TestJITImmediates compares the K forms of add, sub, and, or and xor and
// of every conditional jump, of both widths, in both engines, with
// constants at the edges of the backends' immediate forms (arm64: 12-bit
// ADD/SUB/CMP and their negations, bitmask immediates and values that are
// none; amd64: 8- and 32-bit immediates) against destination values
// around them, so that a wrong encoding, sign or width of the one-
// instruction forms gives another result.
func TestJITImmediates(t *testing.T) {
	needJIT(t)
	imms := []int32{0, 1, 2, 127, 128, 4095, 4096, 4097, 0x1000000, -1, -2, -128, -129, -4095, -4096, -4097,
		0xff, 0xffff, 0xff00, 0x0f0f0f0f, 0x55555555, 0x3ffff000, 0x7ffff, 0x7fffffff, math.MinInt32,
		-0x7fffffff, -0x10000, 0x00fff000, 0x60000000, 0x12345}
	dsts := []int64{0, 1, 4095, 4096, -1, -4096, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000fff,
		math.MinInt64, math.MaxInt64, 0x123456789abcdef, -0x0f0f0f0f0f0f0f10}
	lddw := func(r byte, v int64) []byte {
		return asmProg(ins(0x18, r, 0, 0, int32(uint32(v))), ins(0, 0, 0, 0, int32(uint32(uint64(v)>>32))))
	}
	run := func(what string, code []byte) {
		t.Helper()
		pi, pj, err := loadPair(t, "imm", code, 0)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if pj.jit.Load() == nil {
			t.Fatalf("%s: no native code", what)
		}
		gi, ei := NewRunner(0).RunRaw(pi, nil)
		gj, ej := NewRunner(0).RunRaw(pj, nil)
		if gi != gj || errString(ei) != errString(ej) {
			t.Fatalf("%s: interpreter %#x (%v), JIT %#x (%v)", what, gi, ei, gj, ej)
		}
	}
	n := 0
	for _, imm := range imms {
		vals := append(dsts, int64(imm), int64(imm)+1, int64(imm)-1, int64(uint32(imm)), int64(uint32(imm))|1<<32)
		for _, cls := range []byte{0x07, 0x04} { // ALU64, ALU
			for _, op := range []byte{0x00, 0x10, 0x50, 0x40, 0xa0} { // add sub and or xor
				// r0 = sum over the values of (v op imm) * 31^i: every result counts.
				code := ins(0xb7, 0, 0, 0, 0)
				for _, v := range vals {
					code = asmProg(code, lddw(3, v), ins(cls|op, 3, 0, 0, imm),
						ins(0x27, 0, 0, 0, 31), ins(0x0f, 0, 3, 0, 0))
				}
				run(fmt.Sprintf("op %#02x imm %d", cls|op, imm), asmProg(code, exitInsn))
				n++
			}
		}
		for _, cls := range []byte{0x05, 0x06} { // JMP, JMP32
			for _, op := range []byte{0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0} {
				// r0 = one bit per value: whether the jump is taken.
				code := ins(0xb7, 0, 0, 0, 0)
				for _, v := range vals {
					code = asmProg(code, lddw(3, v), ins(0x67, 0, 0, 0, 1),
						ins(cls|op, 3, 0, 1, imm), ins(0x05, 0, 0, 1, 0), ins(0x47, 0, 0, 0, 1))
				}
				run(fmt.Sprintf("op %#02x imm %d", cls|op, imm), asmProg(code, exitInsn))
				n++
			}
		}
	}
	t.Logf("%d programs agree", n)
}
