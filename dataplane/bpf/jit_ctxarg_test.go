//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestJITFrameArgChecks: the native frame helpers (adjust_head here) leave
// out the check that r1 is the context only where r1 holds it on every
// path (ctxArgs); where it may not, the check stays and the run faults at
// the call exactly as in the interpreter.
func TestJITFrameArgChecks(t *testing.T) {
	needJIT(t)
	// body runs with r6 = the context, r2 = data, r3 = data_end, 8 bytes
	// proven; then r2 = 4 and the call, whose result is returned.
	prog := func(body ...asm.Instruction) asm.Instructions {
		out := append(frameHead8(), body...)
		return append(out, asm.Mov.Imm(asm.R2, 4), asm.FnXdpAdjustHead.Call(), asm.Return(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), asm.Return())
	}
	cases := map[string]struct {
		insns asm.Instructions
		ctx   bool
	}{
		"a copy":  {prog(asm.Mov.Reg(asm.R1, asm.R6)), true},
		"kept":    {prog(), true},
		"written": {prog(asm.Add.Imm(asm.R1, 0)), false},
		// r1 the stack when the packet's first byte is 0.
		"one path": {prog(asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), asm.JNE.Imm(asm.R4, 0, "call"),
			asm.Mov.Reg(asm.R1, asm.R10), asm.Mov.Imm(asm.R0, 0).WithSymbol("call")), false},
		"after a helper": {prog(asm.FnGetPrandomU32.Call()), false},
		// Spilled and filled (decode_ctx.go), and a slot written since.
		"filled": {prog(asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.R10, -8, asm.DWord)), true},
		"filled after a write": {prog(asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMem(asm.R1, asm.R10, -8, asm.DWord)), false},
		// A subprogram is entered with nothing known of r1.
		"subprogram": {append(prog(asm.Mov.Reg(asm.R1, asm.R6), asm.Call.Label("sub")),
			asm.Mov.Imm(asm.R2, 4).WithSymbol("sub"), asm.FnXdpAdjustHead.Call(), asm.Return()), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, pi := helperProg(t, tc.insns, EngineInterp)
			_, pj := helperProg(t, tc.insns, EngineJIT)
			at := ctxArgs(pj.code, pj.funcs)
			for pc, in := range pj.code {
				if in.op == opCall && in.imm == int64(asm.FnXdpAdjustHead) {
					if ctxArgAt(at, pc) != tc.ctx {
						t.Errorf("call at %d: r1 the context %v, want %v", pc, ctxArgAt(at, pc), tc.ctx)
					}
				}
			}
			ri, rj := NewRunner(0), NewRunner(0)
			for _, pkt := range [][]byte{{0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, make([]byte, 64)} {
				fi, fj := newFrame(pkt), newFrame(pkt)
				vi, oki := ri.RunFrame(pi, fi)
				vj, okj := rj.RunFrame(pj, fj)
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("%d bytes: interpreter %#x %v (%v), JIT %#x %v (%v)", len(pkt), vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				if fi.Data != fj.Data || fi.DataMeta != fj.DataMeta || fi.DataEnd != fj.DataEnd {
					t.Fatalf("%d bytes: frames differ", len(pkt))
				}
			}
		})
	}
}

// TestJITFrameArgBare: a program with no proven access may run bare
// (RunRaw: r1 the context, no frame) in native code, so its frame helpers
// keep the check for a frame, and fault as the interpreter's do.
func TestJITFrameArgBare(t *testing.T) {
	needJIT(t)
	insns := asm.Instructions{asm.Mov.Imm(asm.R2, 4), asm.FnXdpAdjustHead.Call(), asm.Return()}
	_, pi := helperProg(t, insns, EngineInterp)
	_, pj := helperProg(t, insns, EngineJIT)
	if pj.jit.Load().proven != 0 {
		t.Fatal("a proven access: the bare run would interpret")
	}
	ri, rj := NewRunner(0), NewRunner(0)
	vi, erri := ri.RunRaw(pi, make([]byte, 64))
	vj, errj := rj.RunRaw(pj, make([]byte, 64))
	if vi != vj || errString(erri) != errString(errj) || erri == nil {
		t.Fatalf("interpreter %#x (%v), JIT %#x (%v); want the same fault", vi, erri, vj, errj)
	}
}

// TestJITAdjustHeadRegion: after a native bpf_xdp_adjust_head, with or
// without metadata, checked accesses around the new data and data_meta
// (the packet region's new lo) fault exactly where the interpreter's do,
// on random frames, headrooms, metadata and deltas.
func TestJITAdjustHeadRegion(t *testing.T) {
	needJIT(t)
	insns := append(frameHead8(),
		asm.LoadMem(asm.R7, asm.R2, 0, asm.Byte), asm.Sub.Imm(asm.R7, 128), // delta in [-128, 127]
		asm.LoadMem(asm.R8, asm.R2, 1, asm.Byte), asm.And.Imm(asm.R8, 63), // how far below data
		asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Reg(asm.R2, asm.R7), asm.FnXdpAdjustHead.Call(),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.Sub.Reg(asm.R2, asm.R8),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte), asm.StoreImm(asm.R2, 0, 9, asm.Byte),
		asm.And.Imm(asm.R0, 3), asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), asm.Return())
	_, pi := helperProg(t, insns, EngineInterp)
	_, pj := helperProg(t, insns, EngineJIT)
	rng := rand.New(rand.NewPCG(21, 44))
	ri, rj := NewRunner(0), NewRunner(0)
	faults := 0
	for i := range 3000 {
		hr := rng.IntN(300)
		ml := min(hr, rng.IntN(3)*4*rng.IntN(9))
		n := 8 + rng.IntN(100)
		buf := make([]byte, hr+n+rng.IntN(400))
		for k := range buf {
			buf[k] = byte(rng.Uint32())
		}
		f0 := Frame{Buf: buf, DataMeta: hr - ml, Data: hr, DataEnd: hr + n}
		fi, fj := cloneFrame(f0), cloneFrame(f0)
		vi, oki := ri.RunFrame(pi, &fi)
		vj, okj := rj.RunFrame(pj, &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("case %d (headroom %d, metadata %d, %d bytes): interpreter %#x %v (%v), JIT %#x %v (%v)",
				i, hr, ml, n, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if fi.DataMeta != fj.DataMeta || fi.Data != fj.Data || !bytes.Equal(fi.Buf, fj.Buf) {
			t.Fatalf("case %d: frames differ", i)
		}
		if !oki {
			faults++
		}
	}
	if faults < 300 || faults > 2700 {
		t.Errorf("%d of 3000 runs faulted: the cases miss the region's edge", faults)
	}
}
