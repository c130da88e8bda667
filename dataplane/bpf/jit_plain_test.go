package bpf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// nativeCall is the last helper call of p's code, which must be p's one
// native helper call, and p's native code.
func nativeCall(t *testing.T, p *Program) (*jitProg, int) {
	t.Helper()
	j := p.jit.Load()
	call := -1
	for pc, in := range p.code {
		if in.op == opCall {
			call = pc
		}
	}
	if j == nil || call < 0 || j.native != 1 {
		t.Fatalf("call at %d, native code %v", call, j)
	}
	return j, call
}

// plainOf is the plain instruction stream the JIT compiles for insns, and
// its subprogram entries.
func plainOf(t *testing.T, insns asm.Instructions) ([]insn, []bool) {
	t.Helper()
	var raw bytes.Buffer
	if err := insns.Marshal(&raw, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	plain, funcs, _, err := decodeSample(raw.Bytes(), EngineJIT)
	if err != nil {
		t.Fatal(err)
	}
	return plain, funcs
}

// directEntry readies r for a test's entry into p's native code in the
// middle of a run on f, as Go leaves it before re-entering: the frame and
// packet region set, the budget full, the registers cleared (returned).
func directEntry(r *Runner, p *Program, f *Frame) *[256]uint64 {
	r.frame = f
	r.setPacket(f)
	r.budget = p.budget
	reg := &r.regs[0]
	clear(reg[:])
	return reg
}
