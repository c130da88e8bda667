package bpf

import (
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// burstRedirectInsns dispatches on the frame's first byte a, with k the
// second byte's low two bits: 0 redirects through the devmap to key k
// (flags 0: an empty key aborts), 1 through the cpumap (flags XDP_PASS:
// an empty key passes), 2 through the xskmap (flags XDP_DROP), 3 to
// ifindex k+10 with bpf_redirect, 4 redirects through the devmap and then
// returns XDP_PASS (a recorded redirect with another verdict), 5 spins a
// loop of k+1 rounds (the budget changes) and returns XDP_TX, 6 calls a
// helper that runs in Go (bpf_get_numa_node_id) and returns XDP_DROP, 7
// loads past the frame's end without a check (a fault), 8 returns
// XDP_REDIRECT without a helper (no target: not the last frame's);
// anything else returns a's low two bits. A frame shorter than 2 bytes passes.
func burstRedirectInsns() asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R6, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.And.Imm(asm.R7, 3),
		asm.Mov.Reg(asm.R2, asm.R7),
	}
	redirect := func(a int32, m string, flags int32, then asm.Instructions) {
		label := "not" + m + string(rune('0'+a))
		insns = append(insns,
			asm.JNE.Imm(asm.R6, a, label),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Imm(asm.R3, flags),
			asm.FnRedirectMap.Call())
		insns = append(insns, then...)
		insns = append(insns, asm.Return(), asm.Mov.Reg(asm.R2, asm.R7).WithSymbol(label))
	}
	redirect(0, "dev", 0, nil)
	redirect(1, "cpu", int32(ActionPass), nil)
	redirect(2, "xsk", int32(ActionDrop), nil)
	redirect(4, "dev", 0, asm.Instructions{asm.Mov.Imm(asm.R0, int32(ActionPass))})
	insns = append(insns,
		asm.JNE.Imm(asm.R6, 3, "not3"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 10),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 5, "not5").WithSymbol("not3"),
		asm.Add.Imm(asm.R7, 1).WithSymbol("loop"),
		asm.Add.Imm(asm.R7, -1),
		asm.Add.Imm(asm.R7, -1),
		asm.JNE.Imm(asm.R7, 0, "loop"),
		asm.Mov.Imm(asm.R0, int32(ActionTX)),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 6, "not6").WithSymbol("not5"),
		asm.FnGetNumaNodeId.Call(),
		asm.Mov.Imm(asm.R0, int32(ActionDrop)),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 7, "not7").WithSymbol("not6"),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R0, asm.R2, 4000, asm.Byte),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 8, "not8").WithSymbol("not7"),
		asm.Mov.Imm(asm.R0, int32(ActionRedirect)),
		asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R6).WithSymbol("not8"),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"),
		asm.Return(),
	)
	return insns
}

// TestJITBurstRedirects: bursts mixing redirects through every map kind
// the JIT redirects natively (devmap, cpumap, xskmap), bpf_redirect, a
// redirect recorded and then overridden by the verdict, loops that move
// the budget, frames that need Go (a helper, a fault) and frames that do
// not: every frame's verdict and redirect are the interpreter's, whatever
// the frames before it in the burst did, and as many runs are counted.
func TestJITBurstRedirects(t *testing.T) {
	needJIT(t)
	insns := burstRedirectInsns()
	ci, pi := helperProg(t, insns, EngineInterp)
	cj, pj := helperProg(t, insns, EngineJIT)
	// The two collections' maps differ: a redirect names its map by name.
	named := func(c *Collection, rd Redirect) Redirect {
		for _, name := range []string{"dev", "cpu", "xsk"} {
			if m, err := c.Map(name); err == nil && rd.Map == m {
				rd.Map, rd.Key = nil, rd.Key+uint32(name[0])<<24
			}
		}
		if rd.Map != nil {
			rd.Key = 1 << 31 // a map of neither collection
		}
		return rd
	}
	rng := rand.New(rand.NewPCG(21, 5))
	kinds := map[RedirectKind]int{}
	for round := range 40 {
		n := 1 + rng.IntN(3*jitBurstMax)
		frames := make([]Frame, n)
		for i := range frames {
			a := byte(rng.IntN(10))
			if round%2 == 0 {
				a = byte(rng.IntN(5)) // mostly redirects
			}
			frames[i] = *newFrame([]byte{a, byte(rng.IntN(256)), 3, 4, 5, 6})
		}
		ri, rj := NewRunner(0), NewRunner(0)
		wantV := make([]Action, n)
		wantR := make([]Redirect, n)
		for i := range frames {
			f := frames[i]
			wantV[i] = ri.Run(pi, &f)
			if wantV[i] == ActionRedirect {
				wantR[i] = ri.Redirect()
				kinds[wantR[i].Kind]++
			}
		}
		gotV := make([]Action, n)
		gotR := make([]Redirect, n)
		for i := range gotR {
			gotR[i] = Redirect{Kind: RedirectDevMap, Key: 99} // stale: must be overwritten
		}
		if k, _ := rj.RunBurst(pj, frames, gotV, gotR); k != n {
			t.Fatalf("round %d: ran %d of %d", round, k, n)
		}
		for i := range frames {
			if gotV[i] != wantV[i] {
				t.Errorf("round %d frame %d (%d): verdict %v, interpreter %v", round, i, frames[i].Buf[frames[i].Data], gotV[i], wantV[i])
			}
			if g, w := named(cj, gotR[i]), named(ci, wantR[i]); wantV[i] == ActionRedirect && g != w {
				t.Errorf("round %d frame %d: redirect %+v, interpreter %+v", round, i, gotR[i], wantR[i])
			}
		}
		if gr, wr := func() (uint64, uint64) { a, _ := rj.Runs(); b, _ := ri.Runs(); return a, b }(); gr != wr {
			t.Errorf("round %d: %d runs counted, interpreter %d", round, gr, wr)
		}
	}
	for _, k := range []RedirectKind{RedirectDevMap, RedirectCPUMap, RedirectXSKMap, RedirectIfindex} {
		if kinds[k] == 0 {
			t.Errorf("no frame redirected with kind %v: the test lost its point", k)
		}
	}
}
