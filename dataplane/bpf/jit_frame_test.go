//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// ctxScalarFrame is a frame whose scalar context fields differ from every
// byte the tests store on the stack.
func ctxScalarFrame(pkt []byte) *Frame {
	f := newFrame(pkt)
	f.IngressIfindex, f.RxQueueIndex = 0x01020304, 0x0a0b0c0d
	return f
}

// ctxScalarDiff runs insns in both engines with a frame (Run and
// RunFrame) and bare (RunRaw), and fails unless the results, faults and
// the raw memory agree; it returns the JIT's RunFrame value.
func ctxScalarDiff(t *testing.T, insns asm.Instructions) uint32 {
	t.Helper()
	pi := loadRange(t, insns, EngineInterp)
	pj := loadRange(t, insns, EngineJIT)
	pkt := udpFrame(9)
	ri, rj := NewRunner(0), NewRunner(0)
	ai, aj := ri.Run(pi, ctxScalarFrame(pkt)), rj.Run(pj, ctxScalarFrame(pkt))
	if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("Run: interpreter %v (%v), JIT %v (%v)\n%s", ai, ri.Fault(), aj, rj.Fault(), pj.Disasm())
	}
	vi, oki := ri.RunFrame(pi, ctxScalarFrame(pkt))
	vj, okj := rj.RunFrame(pj, ctxScalarFrame(pkt))
	if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("RunFrame: interpreter %#x %v (%v), JIT %#x %v (%v)\n%s", vi, oki, ri.Fault(), vj, okj, rj.Fault(), pj.Disasm())
	}
	mi, mj := bytes.Repeat([]byte{0x5a}, 64), bytes.Repeat([]byte{0x5a}, 64)
	gi, ei := ri.RunRaw(pi, mi)
	gj, ej := rj.RunRaw(pj, mj)
	if gi != gj || errString(ei) != errString(ej) || !bytes.Equal(mi, mj) {
		t.Fatalf("RunRaw: interpreter %#x (%v), JIT %#x (%v)\n%s", gi, ei, gj, ej, pj.Disasm())
	}
	return vj
}

// TestJITCtxScalar: loads of ingress_ifindex and rx_queue_index through a
// register that holds the context on every path read the frame's fields
// natively (ctxScalarLoads), right after another context load too (the
// frame it left), with and without proofs elsewhere (frameSure); a
// register that holds the context on one path only, or a context plus an
// offset, is loaded as the interpreter loads it.
func TestJITCtxScalar(t *testing.T) {
	needJIT(t)
	// proof: r2 = data, r3 = data_end, a proven packet load into r4.
	proof := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R4, asm.R2, 12, asm.Half),
	}
	out := asm.Instructions{asm.Return().WithSymbol("out")}
	cat := func(parts ...asm.Instructions) asm.Instructions {
		var all asm.Instructions
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []struct {
		name  string
		insns asm.Instructions
		want  uint32
	}{
		{"ingress", cat(asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 12, asm.Word)}, out), 0x01020304},
		{"rxqueue via copy", cat(asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMem(asm.R0, asm.R6, 16, asm.Word),
		}, out), 0x0a0b0c0d},
		{"after ctx load", cat(asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.LoadMem(asm.R0, asm.R1, 16, asm.Word),
		}, out), 0x0a0b0c0d},
		{"proven, after ctx load", cat(proof, asm.Instructions{
			asm.LoadMem(asm.R0, asm.R1, 12, asm.Word),
			asm.Add.Reg(asm.R0, asm.R4),
		}, out), 0x01020304 + 0x0008},
		{"proven, rxqueue", cat(proof, asm.Instructions{
			asm.Mov.Reg(asm.R7, asm.R1),
			asm.LoadMem(asm.R0, asm.R7, 16, asm.Word),
		}, out), 0x0a0b0c0d},
		// r1 is the context on one path, the stack on the other: the
		// load reads what the stack holds there.
		{"context on one path", cat(proof, asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0x77665544, asm.Word),
			asm.JNE.Imm(asm.R4, 8, "ctx"), // r4 is 8 (IPv4): the stack
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, -16),
			asm.LoadMem(asm.R0, asm.R1, 12, asm.Word).WithSymbol("ctx"),
		}, out), 0x77665544},
		// The context plus 4: the interpreter's load at offset 16 reads
		// rx_queue_index; the JIT leaves it to the slow path.
		{"context plus an offset", cat(asm.Instructions{
			asm.Add.Imm(asm.R1, 4),
			asm.LoadMem(asm.R0, asm.R1, 12, asm.Word),
		}, out), 0x0a0b0c0d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ctxScalarDiff(t, tc.insns); got != tc.want {
				t.Errorf("RunFrame returned %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestCtxScalarLoads: the analysis marks the loads of the two scalar
// fields through a register holding the context on every path, and no
// other load.
func TestCtxScalarLoads(t *testing.T) {
	code := []insn{
		{op: opMov64X, dst: 6, src: 1},
		{op: opLdxW, dst: 0, src: 6, off: xdpMdIngressIfindex},
		{op: opLdxW, dst: 0, src: 1, off: xdpMdRxQueueIndex},
		{op: opLdxW, dst: 0, src: 1, off: xdpMdEgressIfindex},
		{op: opLdxH, dst: 0, src: 1, off: xdpMdIngressIfindex},
		{op: opAdd64K, dst: 6, imm: 4},
		{op: opLdxW, dst: 0, src: 6, off: xdpMdIngressIfindex},
		{op: opExit},
	}
	got := ctxScalarLoads(code, make([]bool, len(code)))
	want := []int32{0, xdpMdIngressIfindex, xdpMdRxQueueIndex, 0, 0, 0, 0, 0}
	for pc := range want {
		if ctxScalarAt(got, pc) != want[pc] {
			t.Errorf("pc %d: %d, want %d", pc, ctxScalarAt(got, pc), want[pc])
		}
	}
	if ctxScalarLoads(code[:1], []bool{false}) != nil {
		t.Error("a program without such loads got a table")
	}
}

// TestJITStackReuse: a stack access through r10 reuses the stack's
// address the one before it left in S2 only in a straight line over
// instructions that keep it (proven packet loads included); a checked
// access in between, which overwrites S2, or a jump target makes it load
// the address again. Each variant must agree with the interpreter.
func TestJITStackReuse(t *testing.T) {
	needJIT(t)
	head := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.Mov.Imm(asm.R6, 0x11),
		asm.StoreMem(asm.RFP, -8, asm.R6, asm.DWord),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half), // proven: keeps S2
		asm.StoreMem(asm.RFP, -16, asm.R5, asm.Word),
	}
	for _, tc := range []struct {
		name string
		mid  asm.Instructions
	}{
		{"straight", nil},
		// Not proven (14 bytes are): the packet's check overwrites S2.
		{"checked access between", asm.Instructions{asm.LoadMem(asm.R7, asm.R2, 40, asm.Byte)}},
		{"jump target between", asm.Instructions{
			asm.LoadMem(asm.R7, asm.R2, 40, asm.Byte),
			asm.JEq.Imm(asm.R5, 8, "join"),
			asm.StoreMem(asm.RFP, -24, asm.R7, asm.DWord),
			asm.Mov.Imm(asm.R7, 3).WithSymbol("join"),
		}},
		{"copy of r10 between", asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.RFP),
			asm.Add.Imm(asm.R6, -32),
			asm.StoreMem(asm.R6, 0, asm.R5, asm.DWord),
			asm.LoadMem(asm.R7, asm.R2, 40, asm.Byte),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns := append(append(asm.Instructions{}, head...), tc.mid...)
			insns = append(insns,
				asm.LoadMem(asm.R0, asm.RFP, -16, asm.Word),
				asm.LoadMem(asm.R6, asm.RFP, -8, asm.DWord),
				asm.Add.Reg(asm.R0, asm.R6),
				asm.Return().WithSymbol("out"),
			)
			pi := loadRange(t, insns, EngineInterp)
			pj := loadRange(t, insns, EngineJIT)
			for _, n := range []int{64, 20} { // 20: the load at 40 faults
				pkt := udpFrame(9)[:n]
				runBoth(t, pi, pj, pkt)
				f := newFrame(pkt)
				if v, ok := NewRunner(0).RunFrame(pj, f); n == 64 && (!ok || v != 0x11+8) {
					t.Fatalf("RunFrame: %#x %v, want %#x", v, ok, 0x11+8)
				}
			}
		})
	}
}
