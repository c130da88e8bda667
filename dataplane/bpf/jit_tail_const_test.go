package bpf

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Tail calls whose checks the JIT settles at load (tailSite): a constant
// index in and past the array, in both mov forms (a 64-bit mov
// sign-extends its immediate, and the kernel reads the low 32 bits), and
// the calls where the facts do not hold and the run-time check must
// stay: r1 not the context, and r2 loaded with one of two arrays on
// paths that join before the call.

// tailResult is what a run gives: its verdict, packet byte 3 after it,
// the program the last tail call went to, and whether it faulted.
type tailResult struct {
	v     Action
	mark  byte
	to    string
	fault bool
}

// tailConstCase is a program of TestJITTailConst and what its runs give
// on packets whose byte 0 is 0 and 1 (the branching cases take a path
// each).
type tailConstCase struct {
	name  string
	insns asm.Instructions // r1 the context on entry
	want  [2]tailResult
}

// tailConstCall tail-calls constant index k through jmp (mov64 when
// wide, else mov32), XDP_PASS when the call falls through.
func tailConstCall(k int32, wide bool) asm.Instructions {
	mov := asm.Mov.Imm32(asm.R3, k)
	if wide {
		mov = asm.Mov.Imm(asm.R3, k)
	}
	return append(tailCallOf(mov), asm.Mov.Imm(asm.R0, int32(ActionPass)), asm.Return())
}

// byte0Odd branches to "alt" when packet byte 0 is odd and to "out"
// without 4 bytes of packet (r2-r4 clobbered, r1 kept).
var byte0Odd = asm.Instructions{
	asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
	asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
	asm.Mov.Reg(asm.R4, asm.R2),
	asm.Add.Imm(asm.R4, 4),
	asm.JGT.Reg(asm.R4, asm.R3, "out"),
	asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte),
	asm.And.Imm(asm.R4, 1),
	asm.JNE.Imm(asm.R4, 0, "alt"),
}

func tailConstCases() []tailConstCase {
	var cs []tailConstCase
	last, pass := tailResult{v: ActionTX, mark: 0xab, to: "last"}, tailResult{v: ActionPass}
	for _, k := range []struct {
		k    int32
		want tailResult
	}{
		{0, last}, {1, tailResult{v: ActionTX, mark: 0xcd, to: "plain"}}, {2, pass},
		{tailEdgeSlots - 1, last}, {tailEdgeSlots, pass}, {-1, pass}, {-4, pass}, {0x7fffffff, pass},
	} {
		for _, wide := range []bool{false, true} {
			cs = append(cs, tailConstCase{name: fmt.Sprintf("k%d_wide%v", k.k, wide), insns: tailConstCall(k.k, wide),
				want: [2]tailResult{k.want, k.want}})
		}
	}
	fault := tailResult{fault: true}
	notCtx := append(asm.Instructions{asm.Mov.Reg(asm.R1, asm.R10)}, tailConstCall(0, false)...)
	cs = append(cs, tailConstCase{name: "r1 not the context", insns: notCtx, want: [2]tailResult{fault, fault}})
	// r1 the stack pointer on the odd path only.
	oneCtx := append(slices.Clone(byte0Odd), tailConstCall(0, false)...)
	oneCtx = append(oneCtx, asm.Mov.Reg(asm.R1, asm.R10).WithSymbol("alt"), asm.Ja.Label("call"),
		asm.Mov.Imm(asm.R0, int32(ActionDrop)).WithSymbol("out"), asm.Return())
	oneCtx[len(byte0Odd)] = oneCtx[len(byte0Odd)].WithSymbol("call")
	cs = append(cs, tailConstCase{name: "r1 the context on one path", insns: oneCtx, want: [2]tailResult{last, fault}})
	// r2 the array other, whose slots are empty, on the odd path.
	twoArrays := append(slices.Clone(byte0Odd),
		asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"),
		asm.Mov.Imm32(asm.R3, 0),
		asm.FnTailCall.Call().WithSymbol("call"),
		asm.Mov.Imm(asm.R0, int32(ActionPass)), asm.Return(),
		asm.LoadMapPtr(asm.R2, 0).WithReference("other").WithSymbol("alt"),
		asm.Mov.Imm32(asm.R3, 0),
		asm.Ja.Label("call"),
		asm.Mov.Imm(asm.R0, int32(ActionDrop)).WithSymbol("out"), asm.Return())
	cs = append(cs, tailConstCase{name: "two arrays", insns: twoArrays, want: [2]tailResult{last, pass}})
	return cs
}

// loadTailConst loads the cases' programs for e with jmp's slots 0 and
// the last holding last, slot 1 plain (without native code on the JIT),
// and an array other of the same size with nothing in it.
func loadTailConst(t *testing.T, e Engine, cs []tailConstCase) *Collection {
	t.Helper()
	mark := func(b int64) asm.Instructions {
		insns := pktBounds(4)
		return append(insns, asm.StoreImm(asm.R2, 3, b, asm.Byte), asm.Mov.Imm(asm.R0, int32(ActionTX)), asm.Return(),
			asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"), asm.Return())
	}
	progs := map[string]asm.Instructions{"last": mark(0xab), "plain": mark(0xcd)}
	for _, tc := range cs {
		progs[tc.name] = tc.insns
	}
	spec := tailSpec(tailEdgeSlots, progs)
	other := *spec.Maps["jmp"]
	other.Name = "other"
	spec.Maps["other"] = &other
	c := loadTailSpec(t, spec, e, map[uint32]string{0: "last", 1: "plain", tailEdgeSlots - 1: "last"})
	if e == EngineJIT {
		mustProg(t, c, "plain").releaseJIT()
	}
	return c
}

// TestJITTailConst: each case gives what it wants on both packets, the
// same on the interpreter and the JIT, through Run and RunBurst; where
// the call reaches a target with native code, the JIT leaves its id in
// jitState.tail (the call did not go to Go).
func TestJITTailConst(t *testing.T) {
	needJIT(t)
	cs := tailConstCases()
	ci, cj := loadTailConst(t, EngineInterp, cs), loadTailConst(t, EngineJIT, cs)
	ri, rj := NewRunner(0), NewRunner(0)
	for _, tc := range cs {
		pi, pj := mustProg(t, ci, tc.name), mustProg(t, cj, tc.name)
		if nativeTailArch && pj.jit.Load().native == 0 {
			t.Fatalf("%s: no native code", tc.name)
		}
		for b0, want := range tc.want {
			name := fmt.Sprintf("%s/byte0=%d", tc.name, b0)
			pkt := func() *Frame {
				f := newFrame(make([]byte, 60))
				f.Buf[f.Data] = byte(b0)
				return f
			}
			rj.Run(pj, pkt()) // binds the collection: the next run starts in native code
			fi, fj := pkt(), pkt()
			vi, vj := ri.Run(pi, fi), rj.Run(pj, fj)
			if vi != vj || errString(ri.Fault()) != errString(rj.Fault()) || ri.tails != rj.tails {
				t.Fatalf("%s: interpreter %v (%v, %d tail calls), JIT %v (%v, %d)", name, vi, ri.Fault(), ri.tails, vj, rj.Fault(), rj.tails)
			}
			tailConstCheck(t, name, want, fj, vj, rj, cj)
			if want.fault {
				continue
			}
			frames := []Frame{*pkt(), *pkt()}
			got := make([]Action, 2)
			if n, ff := rj.RunBurst(pj, frames, got, nil); n != 2 || ff >= 0 || got[0] != vi || got[1] != vi ||
				frames[1].Buf[frames[1].Data+3] != want.mark {
				t.Fatalf("%s: burst %d %v (first fault %d), Run %v", name, n, got, ff, vi)
			}
		}
	}
}

// tailConstCheck checks one JIT run against want.
func tailConstCheck(t *testing.T, name string, want tailResult, f *Frame, v Action, r *Runner, c *Collection) {
	t.Helper()
	if want.fault {
		if r.Fault() == nil {
			t.Fatalf("%s: %v without a fault", name, v)
		}
		return
	}
	if r.Fault() != nil || v != want.v || f.Buf[f.Data+3] != want.mark {
		t.Fatalf("%s: %v (%v), byte 3 %#x; want %v, %#x", name, v, r.Fault(), f.Buf[f.Data+3], want.v, want.mark)
	}
	var id uint64
	if want.to == "last" && nativeTailArch {
		id = uint64(mustProg(t, c, want.to).ID())
	}
	if r.jit.tail != id {
		t.Fatalf("%s: jitState.tail %d, want %d", name, r.jit.tail, id)
	}
}

// TestJITTailBare: a bare run (RunRaw: r1 the memory, not the context,
// and no frame) of a program without proven accesses whose r1 the
// analysis takes for the context at a constant-index tail call: the
// frame's check, kept because such a program may run without a frame,
// sends the call to Go, which faults as the interpreter does.
func TestJITTailBare(t *testing.T) {
	needJIT(t)
	cs := []tailConstCase{{name: "bare", insns: tailConstCall(0, false)}}
	ci, cj := loadTailConst(t, EngineInterp, cs), loadTailConst(t, EngineJIT, cs)
	pi, pj := mustProg(t, ci, "bare"), mustProg(t, cj, "bare")
	if j := pj.jit.Load(); nativeTailArch && (j.native == 0 || j.proven != 0) {
		t.Fatalf("bare: %d native, %d proven instructions", j.native, j.proven)
	}
	for _, n := range []int{0, 60} {
		vi, ei := NewRunner(0).RunRaw(pi, make([]byte, n))
		vj, ej := NewRunner(0).RunRaw(pj, make([]byte, n))
		if vi != vj || errString(ei) != errString(ej) || ej == nil {
			t.Fatalf("%d bytes: interpreter %d (%v), JIT %d (%v); want the same fault", n, vi, ei, vj, ej)
		}
	}
}
