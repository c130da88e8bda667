package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// redirectEdgeCases is what redirectEdgeInsns does for each value of a
// frame's first byte b0, with b1 (r7), b2 (r8) and b3 (r9) its next bytes:
// the call sites the native helpers compile differently (a constant or a
// variable key and flags, keys past the map or at an empty slot, flags a
// map type refuses or a broadcast), several calls in one run, a redirect
// another verdict overrides, none at all, and redirects around helpers
// that run in Go. The maps are helperProg's: dev[0] = 7, dev[2] = 9,
// cpu[0], xsk[1].
var redirectEdgeCases = []string{
	"dev const key 0 (entry), flags 0",
	"dev const key 1 (empty), flags XDP_PASS",
	"dev const key 9 (past the map), flags XDP_TX",
	"dev key b1, flags b2",
	"cpu key b1, flags b2",
	"xsk key b1, flags b2",
	"dev key b1 flags 0, then cpu key b3 flags XDP_DROP",
	"dev const key 0, then xsk const key 0 (empty), return XDP_REDIRECT",
	"cpu const key 3 (empty), then dev const key 2, return XDP_REDIRECT",
	"dev key b1 flags XDP_PASS, return XDP_PASS",
	"return XDP_REDIRECT, no helper",
	"bpf_redirect(b1+1, 0)",
	"bpf_redirect(b1, b2)",
	"bpf_redirect(5, const 1)",
	"dev const key 0, const flags broadcast|XDP_DROP",
	"dev const key 2, const flags exclude-ingress",
	"cpu const key 0, const flags broadcast (refused)",
	"Go helper, then dev const key 0",
	"dev key b1 flags b2, then a Go helper, return XDP_REDIRECT",
	"dev const key 0, Go helper, xsk key b3 flags 0, return XDP_REDIRECT",
	"xsk const key 1, const flags 0, then bpf_redirect(b3, 0)",
	"dev 32-bit const key 2, 32-bit const flags exclude-ingress|XDP_TX",
	"dev const key 5 (past), flags 0 or XDP_DROP by b1, joining before the call",
	"xsk const key 1 or b3 by b1, joining before the call, flags 0",
	"cpu const key 0, flags XDP_PASS then + b2",
	"dev const key 1 (empty), const flags broadcast",
	"dev const key 9 (past the map), const flags broadcast|exclude-ingress|XDP_PASS",
	"dev key b1, const flags broadcast|XDP_TX",
	"dev key b1, flags b2|broadcast, then a Go helper, return XDP_REDIRECT",
}

// redirectEdgeInsns builds the program of redirectEdgeCases; any other
// b0 returns b0's low two bits, a frame shorter than 4 bytes passes.
func redirectEdgeInsns() asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 4),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R6, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.LoadMem(asm.R8, asm.R2, 2, asm.Byte),
		asm.LoadMem(asm.R9, asm.R2, 3, asm.Byte),
	}
	rmap := func(m string, key, flags asm.Instruction) asm.Instructions {
		return asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference(m), key, flags, asm.FnRedirectMap.Call()}
	}
	k := func(v int32) asm.Instruction { return asm.Mov.Imm(asm.R2, v) }
	kr := func(r asm.Register) asm.Instruction { return asm.Mov.Reg(asm.R2, r) }
	f := func(v int32) asm.Instruction { return asm.Mov.Imm(asm.R3, v) }
	fr := func(r asm.Register) asm.Instruction { return asm.Mov.Reg(asm.R3, r) }
	ret := func(v int32) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R0, v)} }
	goHelper := asm.Instructions{asm.FnGetNumaNodeId.Call()}
	ifindex := func(r1, r2 asm.Instruction) asm.Instructions {
		return asm.Instructions{r1, r2, asm.FnRedirect.Call()}
	}
	join := func(parts ...asm.Instructions) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	redirect := ActionRedirect
	bodies := []asm.Instructions{
		rmap("dev", k(0), f(0)),
		rmap("dev", k(1), f(int32(ActionPass))),
		rmap("dev", k(9), f(int32(ActionTX))),
		rmap("dev", kr(asm.R7), fr(asm.R8)),
		rmap("cpu", kr(asm.R7), fr(asm.R8)),
		rmap("xsk", kr(asm.R7), fr(asm.R8)),
		join(rmap("dev", kr(asm.R7), f(0)), rmap("cpu", kr(asm.R9), f(int32(ActionDrop)))),
		join(rmap("dev", k(0), f(0)), rmap("xsk", k(0), f(0)), ret(int32(redirect))),
		join(rmap("cpu", k(3), f(0)), rmap("dev", k(2), f(0)), ret(int32(redirect))),
		join(rmap("dev", kr(asm.R7), f(int32(ActionPass))), ret(int32(ActionPass))),
		ret(int32(redirect)),
		ifindex(asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Imm(asm.R2, 0)),
		ifindex(asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R8)),
		ifindex(asm.Mov.Imm(asm.R1, 5), asm.Mov.Imm(asm.R2, 1)),
		rmap("dev", k(0), f(flagBroadcast|int32(ActionDrop))),
		rmap("dev", k(2), f(flagExcludeIngr)),
		rmap("cpu", k(0), f(flagBroadcast)),
		join(goHelper, rmap("dev", k(0), f(0))),
		join(rmap("dev", kr(asm.R7), fr(asm.R8)), goHelper, ret(int32(redirect))),
		join(rmap("dev", k(0), f(0)), goHelper, rmap("xsk", kr(asm.R9), f(0)), ret(int32(redirect))),
		join(rmap("xsk", k(1), f(0)), ifindex(asm.Mov.Reg(asm.R1, asm.R9), asm.Mov.Imm(asm.R2, 0))),
		rmap("dev", asm.Mov.Imm32(asm.R2, 2), asm.Mov.Imm32(asm.R3, flagExcludeIngr|int32(ActionTX))),
		// constIn must not see through a jump target: r3 (then r2) has
		// two values at the call.
		{
			asm.Mov.Imm(asm.R3, 0),
			asm.JEq.Imm(asm.R7, 0, "join21"),
			asm.Mov.Imm(asm.R3, int32(ActionDrop)),
			asm.LoadMapPtr(asm.R1, 0).WithReference("dev").WithSymbol("join21"),
			asm.Mov.Imm(asm.R2, 5),
			asm.FnRedirectMap.Call(),
		},
		{
			asm.Mov.Imm(asm.R2, 1),
			asm.JEq.Imm(asm.R7, 0, "join22"),
			asm.Mov.Reg(asm.R2, asm.R9),
			asm.Mov.Imm(asm.R3, 0).WithSymbol("join22"),
			asm.LoadMapPtr(asm.R1, 0).WithReference("xsk"),
			asm.FnRedirectMap.Call(),
		},
		join(rmap("cpu", k(0), f(int32(ActionPass)))[:3], asm.Instructions{asm.Add.Reg(asm.R3, asm.R8), asm.FnRedirectMap.Call()}),
		rmap("dev", k(1), f(flagBroadcast)),
		rmap("dev", k(9), f(flagBroadcast|flagExcludeIngr|int32(ActionPass))),
		rmap("dev", kr(asm.R7), f(flagBroadcast|int32(ActionTX))),
		join(asm.Instructions{asm.Or.Imm(asm.R8, flagBroadcast)}, rmap("dev", kr(asm.R7), fr(asm.R8)), goHelper, ret(int32(redirect))),
	}
	bodies[11] = append(asm.Instructions{asm.Add.Imm(asm.R7, 1)}, bodies[11]...)
	for i, b := range bodies {
		label := fmt.Sprintf("not%d", i)
		insns = append(insns, asm.JNE.Imm(asm.R6, int32(i), label))
		insns = append(insns, b...)
		insns = append(insns, asm.Return(), asm.Mov.Reg(asm.R0, asm.R6).WithSymbol(label))
	}
	return append(insns,
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"),
		asm.Return(),
	)
}

// redirectOracle runs redirectEdgeInsns in the interpreter and the JIT.
type redirectOracle struct {
	ci, cj *Collection
	pi, pj *Program
}

func newRedirectOracle(t *testing.T) redirectOracle {
	insns := redirectEdgeInsns()
	var o redirectOracle
	o.ci, o.pi = helperProg(t, insns, EngineInterp)
	o.cj, o.pj = helperProg(t, insns, EngineJIT)
	return o
}

// named replaces a Redirect's map, which differs between the two
// collections, by its name.
func (o redirectOracle) named(c *Collection, rd Redirect) string {
	name := "<nil>"
	if rd.Map != nil {
		name = "<another map>"
		for _, n := range []string{"dev", "cpu", "xsk", "devh"} {
			if m, err := c.Map(n); err == nil && rd.Map == m {
				name = n
			}
		}
	}
	rd.Map = nil
	return fmt.Sprintf("%+v map %s", rd, name)
}

// redirectFrame is a frame of case b0 with bytes b1-b3 (flags mostly ones
// a map takes, sometimes not).
func redirectFrame(rng *rand.Rand, b0 int) Frame {
	flags := []byte{0, 1, 2, 3, 8, 9, 16, 19, 4, 32, 128, 255}
	return *newFrame([]byte{byte(b0), byte(rng.IntN(8)), flags[rng.IntN(len(flags))], byte(rng.IntN(5)), 0, 0})
}

// check runs frames through a burst of the JIT and one Run each in the
// interpreter: every verdict and each XDP_REDIRECT frame's Redirect, the
// Runner's Redirect afterwards (the last frame's) and the runs counted are
// the interpreter's. The redirects given to the JIT hold stale targets.
func (o redirectOracle) check(t *testing.T, what string, ri, rj *Runner, frames []Frame) {
	t.Helper()
	n := len(frames)
	runs0, _ := rj.Runs()
	wantRuns0, _ := ri.Runs()
	wantV, wantR := make([]Action, n), make([]Redirect, n)
	for i := range frames {
		f := frames[i]
		wantV[i] = ri.Run(o.pi, &f)
		wantR[i] = ri.Redirect()
	}
	gotV, gotR := make([]Action, n), make([]Redirect, n)
	dev, _ := o.cj.Map("dev")
	for i := range gotR {
		gotR[i] = Redirect{Kind: RedirectCPUMap, Ifindex: 3, Map: dev, Key: 99, Flags: 1}
	}
	if k, _ := rj.RunBurst(o.pj, frames, gotV, gotR); k != n {
		t.Fatalf("%s: ran %d of %d", what, k, n)
	}
	for i := range frames {
		b0 := frames[i].Buf[frames[i].Data]
		if gotV[i] != wantV[i] {
			t.Errorf("%s frame %d (case %d, % x): verdict %v, interpreter %v", what, i, b0,
				frames[i].Buf[frames[i].Data:frames[i].DataEnd], gotV[i], wantV[i])
		}
		g, w := o.named(o.cj, gotR[i]), o.named(o.ci, wantR[i])
		if wantV[i] == ActionRedirect && g != w {
			t.Errorf("%s frame %d (case %d, % x): redirect %s, interpreter %s", what, i, b0,
				frames[i].Buf[frames[i].Data:frames[i].DataEnd], g, w)
		}
	}
	if g, w := o.named(o.cj, rj.Redirect()), o.named(o.ci, ri.Redirect()); g != w {
		t.Errorf("%s: Redirect after the burst %s, interpreter %s", what, g, w)
	}
	runs1, _ := rj.Runs()
	wantRuns1, _ := ri.Runs()
	if runs1-runs0 != wantRuns1-wantRuns0 {
		t.Errorf("%s: %d runs counted, interpreter %d", what, runs1-runs0, wantRuns1-wantRuns0)
	}
}

// TestJITRedirectEdges: every case of redirectEdgeCases, alone and mixed
// in bursts of every size around the native burst's capacity (1, 63, 64,
// 65, 128, 200), with frames that drop, pass, transmit and redirect: each
// frame's verdict and Redirect are the interpreter's, whatever the frames
// before it (in the burst or the last one) left.
func TestJITRedirectEdges(t *testing.T) {
	needJIT(t)
	o := newRedirectOracle(t)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(21, 6))
	cases := len(redirectEdgeCases)
	for c := range cases {
		for range 8 {
			f := redirectFrame(rng, c)
			o.check(t, "case "+redirectEdgeCases[c], ri, rj, []Frame{f})
		}
	}
	for _, n := range []int{1, 2, jitBurstMax - 1, jitBurstMax, jitBurstMax + 1, 2 * jitBurstMax, 200} {
		for round := range 6 {
			frames := make([]Frame, n)
			for i := range frames {
				frames[i] = redirectFrame(rng, rng.IntN(cases+4))
			}
			o.check(t, fmt.Sprintf("burst of %d, round %d", n, round), ri, rj, frames)
		}
	}
}

// TestJITRedirectNoStale: a frame that returns XDP_REDIRECT without a
// helper call gets the empty Redirect, in a burst right after one whose
// frames all redirected (the same slots), after a frame of its own burst
// that redirected, and in Run after either.
func TestJITRedirectNoStale(t *testing.T) {
	needJIT(t)
	o := newRedirectOracle(t)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, jitBurstMax, jitBurstMax + 3} {
		all := make([]Frame, n)
		none := make([]Frame, n)
		alt := make([]Frame, n)
		for i := range all {
			all[i] = redirectFrame(rng, []int{0, 11, 15, 20}[i%4])
			none[i] = redirectFrame(rng, 10)
			alt[i] = redirectFrame(rng, []int{0, 10, 17, 10, 18, 10}[i%6])
		}
		o.check(t, fmt.Sprintf("%d redirects", n), ri, rj, all)
		o.check(t, fmt.Sprintf("%d without a helper after them", n), ri, rj, none)
		o.check(t, fmt.Sprintf("%d alternating", n), ri, rj, alt)
		f := redirectFrame(rng, 10)
		if a := rj.Run(o.pj, &f); a != ActionRedirect || rj.Redirect() != (Redirect{}) {
			t.Errorf("Run after a burst, no helper: %v %+v, want XDP_REDIRECT to nowhere", a, rj.Redirect())
		}
		o.check(t, fmt.Sprintf("%d redirects again", n), ri, rj, all)
		f = redirectFrame(rng, 7)
		if a := rj.Run(o.pj, &f); a != ActionRedirect || rj.Redirect() != (Redirect{}) {
			t.Errorf("Run after a burst, redirect then a missing key: %v %+v, want XDP_REDIRECT to nowhere", a, rj.Redirect())
		}
	}
}

// TestJITRedirectFallback: bpf_redirect_map to a missing key returns the
// flags' action bits (each of the four XDP actions) and clears the
// redirect, with the flags a constant or not, on each map type; flags a
// map type refuses abort.
func TestJITRedirectFallback(t *testing.T) {
	needJIT(t)
	o := newRedirectOracle(t)
	ri, rj := NewRunner(0), NewRunner(0)
	var frames []Frame
	for _, c := range []int{3, 4, 5} { // dev, cpu, xsk with key b1, flags b2
		for _, flags := range []byte{0, 1, 2, 3, 16, 17, 8, 4, 64} {
			for _, key := range []byte{3, 6, 200} { // empty or past every map
				frames = append(frames, *newFrame([]byte{byte(c), key, flags, 0}))
			}
		}
	}
	frames = append(frames, *newFrame([]byte{1, 0, 0, 0}), *newFrame([]byte{2, 0, 0, 0}), *newFrame([]byte{16, 0, 0, 0}))
	for i := range frames {
		o.check(t, fmt.Sprintf("frame %d", i), ri, rj, frames[i:i+1])
	}
	o.check(t, "all", ri, rj, frames)
	for i, f := range frames[:len(frames)-3] {
		b := f.Buf[f.Data:]
		allowed := byte(flagsActionMask)
		if b[0] == 3 {
			allowed |= flagBroadcast | flagExcludeIngr
		}
		w := Action(b[2] & flagsActionMask)
		switch {
		case b[2]&^allowed != 0:
			w = ActionAborted
		case b[2]&flagBroadcast != 0:
			continue // a broadcast redirects even to no entry
		}
		var v [1]Action
		rd := []Redirect{{Kind: RedirectDevMap, Key: 1}}
		rj.RunBurst(o.pj, frames[i:i+1], v[:], rd)
		if v[0] != w || w == ActionRedirect && rd[0] != (Redirect{}) {
			t.Errorf("case %d key %d flags %#x: %v %+v, want %v", b[0], b[1], b[2], v[0], rd[0], w)
		}
	}
}

// TestJITRedirectAllocs: a burst of native redirects allocates nothing.
func TestJITRedirectAllocs(t *testing.T) {
	needJIT(t)
	o := newRedirectOracle(t)
	r := NewRunner(0)
	rng := rand.New(rand.NewPCG(9, 9))
	frames := make([]Frame, jitBurstMax+5)
	for i := range frames {
		frames[i] = redirectFrame(rng, []int{0, 3, 4, 6, 11, 10}[i%6])
	}
	verdicts := make([]Action, len(frames))
	redirects := make([]Redirect, len(frames))
	if a := testing.AllocsPerRun(50, func() { r.RunBurst(o.pj, frames, verdicts, redirects) }); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
}
