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
