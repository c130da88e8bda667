package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// The lean burst loop (jit_burst_flags.go) leaves out per-frame work a
// program's native code cannot need. Each program below needs one kind of
// it, or none, and runs in bursts of frames that take different paths, so
// that a frame would see what the one before it left if its work were
// left out: its verdicts, redirects, frames, run and abort counts, first
// fault and maps must be the interpreter's, run frame by frame.

// burstHead loads data into r2 and data_end into r3, the frame's first
// byte into r6 and its second into r7, keeping the context in r9, and
// goes to "pass" when the frame is shorter than 2 bytes.
func burstHead() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R9, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R6, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
	}
}

// burstPass is the "pass" label's code: XDP_PASS.
func burstPass() asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"), asm.Return()}
}

// burstLeanInsns needs none of the work: by the first byte a (b the
// second), 0 moves the head by -(b&15) (native adjust_head) and returns
// the new first byte's low two bits, 1 returns b&7 (5-7 abort), 2 loads
// past the frame (a fault), 3 calls a helper Go runs (bpf_get_numa_node_id:
// the burst goes on after it, burstCall) and returns XDP_DROP, 4 returns
// XDP_REDIRECT with no target; else a&3.
func burstLeanInsns() asm.Instructions {
	insns := burstHead()
	insns = append(insns,
		asm.JNE.Imm(asm.R6, 0, "not0"),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.And.Imm(asm.R2, 15),
		asm.Neg.Imm(asm.R2, 0),
		asm.FnXdpAdjustHead.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R2, asm.R9, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R9, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 1),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte),
		asm.And.Imm(asm.R0, 3),
		asm.Return().WithSymbol("out"),
		asm.JNE.Imm(asm.R6, 1, "not1").WithSymbol("not0"),
		asm.Mov.Reg(asm.R0, asm.R7),
		asm.And.Imm(asm.R0, 7),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 2, "not2").WithSymbol("not1"),
		asm.LoadMem(asm.R0, asm.R2, 4000, asm.Byte),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 3, "not3").WithSymbol("not2"),
		asm.FnGetNumaNodeId.Call(),
		asm.Mov.Imm(asm.R0, int32(ActionDrop)),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 4, "not4").WithSymbol("not3"),
		asm.Mov.Imm(asm.R0, int32(ActionRedirect)),
		asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R6).WithSymbol("not4"),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
	)
	return append(insns, burstPass()...)
}

// burstRegionsInsns needs the regions trimmed per frame: it looks up arr
// at a&3 and then at b&3 and stores the second value's pointer (its region
// number) into the first value, so that a region left by the frame before
// gives another number than the interpreter's. It returns XDP_TX.
func burstRegionsInsns() asm.Instructions {
	lookup := func(key asm.Register, dst asm.Register) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R1, key),
			asm.And.Imm(asm.R1, 3),
			asm.StoreMem(asm.R10, -8, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "pass"),
			asm.Mov.Reg(dst, asm.R0),
		}
	}
	insns := burstHead()
	insns = append(insns, lookup(asm.R6, asm.R8)...)
	insns = append(insns, lookup(asm.R7, asm.R6)...)
	insns = append(insns,
		asm.StoreMem(asm.R8, 0, asm.R6, asm.DWord),
		asm.Mov.Imm(asm.R0, int32(ActionTX)),
		asm.Return(),
	)
	return append(insns, burstPass()...)
}

// burstGoLookupInsns needs none of the work: its lookup, in a hash map
// made BPF_F_NO_PREALLOC, runs in Go (burstCall goes on after it) and
// appends the value's region there, which the lean loop's setup trims
// before the next frame starts. It looks up key a&3 (keys 0-2 present)
// and returns the region number's low two bits (XDP_TX for the first
// region past the fixed ones), else XDP_PASS.
func burstGoLookupInsns() asm.Instructions {
	insns := burstHead()
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.And.Imm(asm.R1, 3),
		asm.StoreMem(asm.R10, -8, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("hash"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.RSh.Imm(asm.R0, 32),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
	)
	return append(insns, burstPass()...)
}

// burstBudgetInsns needs the budget set per frame: it loops b times
// (a backward jump, charging the budget; burstLeanBudget 300 lets about 100
// rounds run before the run faults) and returns a&3.
func burstBudgetInsns() asm.Instructions {
	insns := burstHead()
	insns = append(insns,
		asm.JEq.Imm(asm.R7, 0, "done"),
		asm.Add.Imm(asm.R7, -1).WithSymbol("loop"),
		asm.JNE.Imm(asm.R7, 0, "loop"),
		asm.Mov.Reg(asm.R0, asm.R6).WithSymbol("done"),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
	)
	return append(insns, burstPass()...)
}

const burstLeanBudget = 300

// burstTailInsns needs the tail call state reset per frame: it tail-calls
// slot a&3 of jmp (t0 returns XDP_DROP, t1 loads the frame's byte b and
// returns its low two bits, t2 loads past the frame: a fault, in the
// target; slot 3 is empty) and returns XDP_PASS when that falls through.
// Without the reset, the 34th frame's tail call would fall through.
func burstTailInsns() asm.Instructions {
	insns := burstHead()
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.And.Imm(asm.R3, 3),
		asm.FnTailCall.Call(),
	)
	return append(insns, burstPass()...)
}

// burstTailTargets are the tail call targets of burstTailInsns, by slot.
func burstTailTargets() []asm.Instructions {
	return []asm.Instructions{
		{asm.Mov.Imm(asm.R0, int32(ActionDrop)), asm.Return()},
		append(burstHead(),
			asm.Mov.Reg(asm.R0, asm.R7),
			asm.And.Imm(asm.R0, 3),
			asm.Return(),
			asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"),
			asm.Return()),
		{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.LoadMem(asm.R0, asm.R2, 4000, asm.Byte),
			asm.Return(),
		},
	}
}

// burstRedirectOnlyInsns needs the redirect slot moved per frame: a 0
// redirects to ifindex b, 1 through dev at key b&3 (keys 0 and 2 hold
// ports), 2 returns XDP_REDIRECT without a helper; else a&3.
func burstRedirectOnlyInsns() asm.Instructions {
	insns := burstHead()
	insns = append(insns,
		asm.JNE.Imm(asm.R6, 0, "not0"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 1, "not1").WithSymbol("not0"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("dev"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.And.Imm(asm.R2, 3),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.JNE.Imm(asm.R6, 2, "not2").WithSymbol("not1"),
		asm.Mov.Imm(asm.R0, int32(ActionRedirect)),
		asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R6).WithSymbol("not2"),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
	)
	return append(insns, burstPass()...)
}

// burstLeanColl loads main (and t0-t2 in slots 0-2 of jmp, and
// burstLeanInsns as lean) with the maps the programs above use, with
// engine e.
func burstLeanColl(t *testing.T, main asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	prog := func(name string, insns asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"arr": {Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4},
			"dev": {Name: "dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
			"hash": {Name: "hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4,
				Flags: uint32(maps.FlagNoPrealloc)},
		},
		Programs: map[string]*ebpf.ProgramSpec{"main": prog("main", main), "lean": prog("lean", burstLeanInsns())},
	}
	targets := burstTailTargets()
	for i, insns := range targets {
		name := fmt.Sprintf("t%d", i)
		spec.Programs[name] = prog(name, insns)
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e, InsnBudget: burstLeanBudget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	put := func(name string, k, v uint32) {
		m, err := c.Map(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update(binary.LittleEndian.AppendUint32(nil, k), binary.LittleEndian.AppendUint32(nil, v), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range targets {
		p, err := c.Program(fmt.Sprintf("t%d", i))
		if err != nil {
			t.Fatal(err)
		}
		put("jmp", uint32(i), p.ID())
	}
	put("dev", 0, 7)
	put("dev", 2, 9)
	for k := range uint32(3) {
		put("hash", k, k)
	}
	p, err := c.Program("main")
	if err != nil {
		t.Fatal(err)
	}
	if e == EngineJIT && p.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	return c, p
}

// TestJITBurstLean: each program gets the per-frame work it needs (its
// jitProg.burst; all of it where the backend has no lean loop), and
// bursts of frames that take its paths in random order give every frame
// the interpreter's verdict, redirect and frame, the interpreter's run
// and abort counts, first fault and array contents.
func TestJITBurstLean(t *testing.T) {
	needJIT(t)
	for _, tc := range []struct {
		name  string
		insns asm.Instructions
		want  uint8 // jitProg.burst, with the lean loop
		paths int   // first bytes that pick a path
	}{
		{"lean", burstLeanInsns(), 0, 6},
		{"go lookup", burstGoLookupInsns(), 0, 4},
		{"regions", burstRegionsInsns(), burstRegions, 4},
		{"budget", burstBudgetInsns(), burstBudget, 4},
		{"tail", burstTailInsns(), burstAll, 4},
		{"redirect", burstRedirectOnlyInsns(), burstRedirect, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci, pi := burstLeanColl(t, tc.insns, EngineInterp)
			cj, pj := burstLeanColl(t, tc.insns, EngineJIT)
			want := uint8(burstAll)
			if jitBurstLean {
				want = tc.want
			}
			if got := pj.jit.Load().burst; got != want {
				t.Fatalf("burst work %04b, want %04b", got, want)
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			ri, rj := NewRunner(0), NewRunner(0)
			for round := range 30 {
				// Odd rounds take the first two paths only, which no
				// tail call, fault or helper run in Go interrupts: long
				// native bursts.
				paths := tc.paths
				if round%2 == 1 {
					paths = 2
				}
				frames := burstLeanFrames(rng, 1+rng.IntN(3*jitBurstMax), paths, round%2 == 1)
				burstLeanRound(t, fmt.Sprintf("round %d", round), ri, rj, pi, pj, frames, rng)
				burstSameArr(t, round, ci, cj)
			}
			if tc.want == 0 && rj.jit.resumes == 0 {
				t.Error("no burst went on after a helper Go ran: the test lost its point")
			}
		})
	}
}

// burstLeanFrames makes n frames whose first byte picks one of paths
// paths: unless calm, a few shorter than 2 bytes or with offsets runJIT
// refuses.
func burstLeanFrames(rng *rand.Rand, n, paths int, calm bool) []Frame {
	frames := make([]Frame, n)
	for i := range frames {
		pkt := make([]byte, 2+rng.IntN(30))
		for j := range pkt {
			pkt[j] = byte(rng.UintN(256))
		}
		pkt[0] = byte(rng.IntN(paths))
		if !calm && rng.IntN(25) == 0 {
			pkt = pkt[:rng.IntN(2)]
		}
		frames[i] = *newFrame(pkt)
		if calm {
			continue
		}
		switch rng.IntN(40) {
		case 0:
			frames[i].DataEnd = len(frames[i].Buf) + 1
		case 1:
			frames[i].DataMeta = frames[i].Data + 1
		case 2:
			frames[i].DataMeta = -1 // below 0 (FRAMECHECK compares unsigned)
		case 3:
			frames[i].DataMeta, frames[i].Data = -4, -4
		}
	}
	return frames
}

// burstLeanRound runs frames with pi frame by frame on ri and with pj in
// bursts of random sizes on rj, and compares.
func burstLeanRound(t *testing.T, where string, ri, rj *Runner, pi, pj *Program, frames []Frame, rng *rand.Rand) {
	t.Helper()
	n := len(frames)
	want := cloneFrames(frames)
	wantV, wantR := make([]Action, n), make([]Redirect, n)
	wantFirst, wantErr := -1, ""
	for i := range want {
		wantV[i] = ri.Run(pi, &want[i])
		if wantV[i] == ActionRedirect {
			wantR[i] = ri.Redirect()
			wantR[i].Map = nil // the collections' maps differ
		}
		if err := ri.Fault(); err != nil && wantFirst < 0 {
			wantFirst, wantErr = i, err.Error()
		}
	}
	got := cloneFrames(frames)
	gotV, gotR := make([]Action, n), make([]Redirect, n)
	for i := range gotR {
		gotR[i] = Redirect{Kind: RedirectDevMap, Key: 99} // stale: must be overwritten
	}
	first, gotErr := -1, ""
	for at := 0; at < n; {
		k := min(n-at, 1+rng.IntN(2*jitBurstMax))
		done, f := rj.RunBurst(pj, got[at:at+k], gotV[at:at+k], gotR[at:at+k])
		if done != k {
			t.Fatalf("%s: ran %d of %d", where, done, k)
		}
		if f >= 0 && first < 0 {
			first, gotErr = at+f, errString(rj.Fault())
		}
		at += k
	}
	if first != wantFirst || gotErr != wantErr && wantFirst >= 0 {
		t.Errorf("%s: first fault at %d (%s), interpreter %d (%s)", where, first, gotErr, wantFirst, wantErr)
	}
	for i := range got {
		if gotV[i] == ActionRedirect {
			gotR[i].Map = nil
		}
		if gotV[i] != wantV[i] || wantV[i] == ActionRedirect && gotR[i] != wantR[i] {
			t.Errorf("%s frame %d (path %v): %v %+v, interpreter %v %+v", where, i, frames[i].Buf[frames[i].Data:min(frames[i].Data+2, len(frames[i].Buf))], gotV[i], gotR[i], wantV[i], wantR[i])
		}
		g, w := got[i], want[i]
		if g.DataMeta != w.DataMeta || g.Data != w.Data || g.DataEnd != w.DataEnd || !bytes.Equal(g.Buf, w.Buf) {
			t.Errorf("%s frame %d: frame %d/%d/%d, interpreter %d/%d/%d (or bytes differ)",
				where, i, g.DataMeta, g.Data, g.DataEnd, w.DataMeta, w.Data, w.DataEnd)
		}
	}
	gr, ga := rj.Runs()
	wr, wa := ri.Runs()
	if gr != wr || ga != wa {
		t.Errorf("%s: runs %d aborted %d, interpreter %d %d", where, gr, ga, wr, wa)
	}
}

// burstSameArr compares the two collections' arr maps.
func burstSameArr(t *testing.T, round int, ci, cj *Collection) {
	t.Helper()
	mi, err := ci.Map("arr")
	if err != nil {
		t.Fatal(err)
	}
	mj, err := cj.Map("arr")
	if err != nil {
		t.Fatal(err)
	}
	for k := range uint32(4) {
		key := binary.LittleEndian.AppendUint32(nil, k)
		if g, w := mj.Lookup(key, 0), mi.Lookup(key, 0); !bytes.Equal(g, w) {
			t.Errorf("round %d: arr[%d] = %x, interpreter %x", round, k, g, w)
		}
	}
}

// TestJITBurstWork: burstWork names the work of each kind of instruction
// that needs it, and none for the rest.
func TestJITBurstWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		insns   []insn
		regions int
		want    uint8
	}{
		{"plain", []insn{{op: opMov64K}, {op: opExit}}, 0, 0},
		{"forward", []insn{{op: opJA, off: 2}, {op: opMov64K}, {op: opExit}}, 0, 0},
		{"backward", []insn{{op: opMov64K}, {op: opJNE64K, off: 0, back: 1}, {op: opExit}}, 0, burstBudget},
		{"local call", []insn{{op: opCallLocal, imm: 2}, {op: opExit}, {op: opExit}}, 0, burstBudget},
		{"bpf_loop", []insn{{op: opCall, imm: int64(helperLoop)}, {op: opExit}}, 0, burstBudget},
		{"regions", []insn{{op: opCall, imm: int64(helperMapLookupElem)}, {op: opExit}}, 1, burstRegions},
		{"elided lookup", []insn{{op: opCall, imm: int64(helperMapLookupElem)}, {op: opExit}}, 0, 0},
		{"redirect", []insn{{op: opCall, imm: int64(helperRedirect)}, {op: opExit}}, 0, burstRedirect},
		{"redirect_map", []insn{{op: opCall, imm: int64(helperRedirectMap)}, {op: opExit}}, 0, burstRedirect},
		{"tail call", []insn{{op: opTailCall}, {op: opExit}}, 0, burstAll},
		{"callx", []insn{{op: opCallX}, {op: opExit}}, 0, burstAll},
	} {
		if got := burstWork(tc.insns, tc.regions); got != tc.want {
			t.Errorf("%s: %04b, want %04b", tc.name, got, tc.want)
		}
	}
}

// TestJITBurstLeanAfterTail: bursts of a program that needs no per-frame
// work after bursts of one of the same collection whose last frame ended
// in a tail call target (jitState.tail and Runner.tails left set) on the
// same Runner: the lean
// loop's setup clears them, so a frame of the first that leaves for a
// helper in Go is read against its own program.
func TestJITBurstLeanAfterTail(t *testing.T) {
	needJIT(t)
	ci, ti := burstLeanColl(t, burstTailInsns(), EngineInterp)
	cj, tj := burstLeanColl(t, burstTailInsns(), EngineJIT)
	li, err := ci.Program("lean")
	if err != nil {
		t.Fatal(err)
	}
	lj, err := cj.Program("lean")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	ri, rj := NewRunner(0), NewRunner(0)
	for round := range 20 {
		tail := burstLeanFrames(rng, 1+rng.IntN(jitBurstMax), 2, true)
		burstLeanRound(t, fmt.Sprintf("round %d tail", round), ri, rj, ti, tj, tail, rng)
		lean := burstLeanFrames(rng, 1+rng.IntN(jitBurstMax), 6, false)
		lean[0].Buf[lean[0].Data] = 3 // a helper Go runs
		burstLeanRound(t, fmt.Sprintf("round %d lean", round), ri, rj, li, lj, lean, rng)
	}
}
