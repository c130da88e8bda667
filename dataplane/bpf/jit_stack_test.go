package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestStackProven: only accesses through r10 itself inside the frame
// below it go unchecked, the loader refuses the others through r10, and
// a copy of r10 moved past the frame faults in the JIT as in the
// interpreter.
func TestStackProven(t *testing.T) {
	for _, tc := range []struct {
		base    uint8
		off, n  int32
		want    bool
		loadErr bool
	}{
		{10, -512, 8, true, false}, {10, -8, 8, true, false}, {10, -1, 1, true, false},
		{10, -4, 8, false, true}, {10, 0, 1, false, true}, {10, -513, 1, false, true},
		{9, -8, 8, false, false}, {1, 0, 4, false, false},
	} {
		if got := stackProven(tc.base, tc.off, tc.n); got != tc.want {
			t.Errorf("stackProven(r%d%+d, %d) = %v, want %v", tc.base, tc.off, tc.n, got, tc.want)
		}
		if tc.base == 10 {
			err := checkStackOff(int16(tc.off), uint8(tc.n))
			if (err != nil) != tc.loadErr {
				t.Errorf("checkStackOff(%d, %d) = %v", tc.off, tc.n, err)
			}
			if err == nil && !stackProven(tc.base, tc.off, tc.n) {
				t.Errorf("r10%+d, %d bytes: the loader takes it, stackProven does not", tc.off, tc.n)
			}
		}
	}
	// Through a copy of r10 the check stays: 8 bytes at fp-4 run past the
	// top of the stack (depth 0) and fault.
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.DWord),
		asm.Return(),
	}
	pi := loadRange(t, insns, EngineInterp)
	if !jitArch {
		return
	}
	pj := loadRange(t, insns, EngineJIT)
	runBoth(t, pi, pj, make([]byte, 64))
	f := Frame{Buf: make([]byte, 512), DataMeta: 256, Data: 256, DataEnd: 320}
	r := NewRunner(0)
	if _, ok := r.RunFrame(pj, &f); ok || r.Fault() == nil {
		t.Fatal("a load past the stack's top did not fault")
	}
}

// stackEdgeOffsets are the offsets from r10 the stack edge tests access:
// at and across both ends of the frame (the loader's limit for a constant
// r10 offset) and of the whole stack (a subprogram's frame lies below the
// top one's), and far out.
var stackEdgeOffsets = []int16{-stackSize, -stackSize + 1, -stackSize - 1, -stackSize + 7, -frameSize - 1, -frameSize, -frameSize + 1,
	-frameSize - 8, -frameSize + 7, -8, -7, -4, -1, 0, 1, 8, -32768, 32767}

// stackEdgeProg stores r0 = 0x1122334455667788 with width op (ST through
// st, or STX) at base+off, where base is r10 itself (via false) or r2 =
// r10 + off (via true: the region is not known at compile time), loads it
// back with ld and returns it; at a call depth of deep it does so in a
// subprogram, whose frame pointer is a frame below.
func stackEdgeProg(st, ld byte, off int16, via, deep bool) []byte {
	body := [][]byte{ins(0x18, 0, 0, 0, 0x55667788), ins(0, 0, 0, 0, 0x11223344)}
	base, o := byte(10), off
	if via {
		body = append(body, ins(0xbf, 2, 10, 0, 0), ins(0x07, 2, 0, 0, int32(off)))
		base, o = 2, 0
	}
	if st&0x07 == 0x02 { // BPF_ST: the immediate
		body = append(body, ins(st, base, 0, o, 0x7a7b7c7d))
	} else {
		body = append(body, ins(st, base, 0, o, 0))
	}
	body = append(body, ins(ld, 0, base, o, 0), exitInsn)
	if !deep {
		return asmProg(body...)
	}
	// main: call f; exit. f: the body.
	return asmProg(append([][]byte{ins(0x85, 0, 1, 0, 1), exitInsn}, body...)...)
}

// TestJITStackEdges: loads and stores on the stack at and across its ends,
// through r10 (checked against the constant bounds without the region
// number) and through a copy (the region number checked first), in the top
// frame and in a subprogram's, give what the interpreter gives: the value
// or the same fault.
func TestJITStackEdges(t *testing.T) {
	needJIT(t)
	widths := []struct{ st, sti, ld byte }{
		{0x73, 0x72, 0x71}, {0x6b, 0x6a, 0x69}, {0x63, 0x62, 0x61}, {0x7b, 0x7a, 0x79},
	}
	n, faults, refused := 0, 0, 0
	for _, w := range widths {
		for _, st := range []byte{w.st, w.sti} {
			for _, off := range stackEdgeOffsets {
				for _, via := range []bool{false, true} {
					for _, deep := range []bool{false, true} {
						code := stackEdgeProg(st, w.ld, off, via, deep)
						pi, pj, err := loadPair(t, "stackedge", code, 0)
						if err != nil {
							// The loader refuses a constant r10 offset
							// outside the frame; through r2 it cannot tell.
							if via {
								t.Fatalf("st %#x off %d: %v", st, off, err)
							}
							refused++
							continue
						}
						gi, ei := NewRunner(0).RunRaw(pi, nil)
						gj, ej := NewRunner(0).RunRaw(pj, nil)
						if gi != gj || errString(ei) != errString(ej) {
							t.Errorf("st %#x off %d via %v deep %v: interpreter %#x (%v), JIT %#x (%v)",
								st, off, via, deep, gi, ei, gj, ej)
						}
						if ei != nil {
							faults++
						}
						n++
					}
				}
			}
		}
	}
	// Each offset list has in-bounds and out-of-bounds cases: both kinds ran.
	if faults == 0 || faults == n {
		t.Errorf("%d of %d programs faulted: the edges were not both exercised", faults, n)
	}
	t.Logf("%d programs agree, %d fault, %d refused at load", n, faults, refused)
}
