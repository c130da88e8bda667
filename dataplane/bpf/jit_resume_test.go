package bpf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// goCallBody is a program whose frames call helpers that run in Go
// (bpf_get_numa_node_id, bpf_map_push_elem on the queue q) in the middle
// of a burst, on a path the packet's first byte picks (its low four
// bits), after r1-r5 were set to constants and r6-r9 hold the context, the
// packet's data and its first two bytes:
// 0 returns the sum of every register after the call (r10 included),
// which reads the packet through a proven access; 1 calls again; 2
// redirects (native) after the call; 3 redirects before another call; 4
// returns the second byte's low three bits (5-7: an unknown action); 5
// pushes with r1 not a map (a fault in Go); 6 pushes and then loads at
// data plus the second byte unchecked (a load fault past the end); 7
// pushes and writes the push's result into the packet; 8 reserves a ring
// buffer record (in Go, which keeps it: the frame ends in Go) and
// returns XDP_REDIRECT without a redirect of its own; 9 redirects
// through the devmap dm in Go (to a slot the second byte picks, some
// empty); 10-15 are 0. Frames shorter than two bytes pass.
func goCallBody() asm.Instructions {
	push := func(r1 asm.Instruction) asm.Instructions {
		return asm.Instructions{r1, asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -8),
			asm.Mov.Imm(asm.R3, 0), asm.FnMapPushElem.Call()}
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R7), asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R9, asm.R7, 0, asm.Byte),
		asm.LoadMem(asm.R8, asm.R7, 1, asm.Byte),
		asm.Mov.Imm(asm.R1, 11), asm.Mov.Imm(asm.R2, 22), asm.Mov.Imm(asm.R3, 33),
		asm.Mov.Imm(asm.R4, 44), asm.Mov.Imm(asm.R5, 55),
		asm.FnGetNumaNodeId.Call(),
		asm.Add.Reg(asm.R0, asm.R1), asm.Add.Reg(asm.R0, asm.R2), asm.Add.Reg(asm.R0, asm.R3),
		asm.Add.Reg(asm.R0, asm.R4), asm.Add.Reg(asm.R0, asm.R5), asm.Add.Reg(asm.R0, asm.R6),
		asm.Add.Reg(asm.R0, asm.R8), asm.Add.Reg(asm.R0, asm.R9), asm.Xor.Reg(asm.R0, asm.R10),
		asm.LoadMem(asm.R2, asm.R7, 1, asm.Byte), // proven: data + 2 was checked
		asm.Add.Reg(asm.R0, asm.R2),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R9), asm.And.Imm(asm.R1, 15),
		asm.JEq.Imm(asm.R1, 1, "p1"), asm.JEq.Imm(asm.R1, 2, "p2"), asm.JEq.Imm(asm.R1, 3, "p3"),
		asm.JEq.Imm(asm.R1, 4, "p4"), asm.JEq.Imm(asm.R1, 5, "p5"), asm.JEq.Imm(asm.R1, 6, "p6"),
		asm.JEq.Imm(asm.R1, 7, "p7"), asm.JEq.Imm(asm.R1, 8, "p8"), asm.JEq.Imm(asm.R1, 9, "p9"),
		asm.And.Imm(asm.R0, 3), asm.Return(),
		asm.FnGetNumaNodeId.Call().WithSymbol("p1"),
		asm.LoadMem(asm.R2, asm.R10, -8, asm.DWord), asm.Add.Reg(asm.R0, asm.R2), asm.Add.Reg(asm.R0, asm.R1),
		asm.And.Imm(asm.R0, 3), asm.Return(),
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("p2"), asm.Mov.Imm(asm.R2, 0), asm.FnRedirect.Call(), asm.Return(),
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("p3"), asm.Mov.Imm(asm.R2, 0), asm.FnRedirect.Call(),
		asm.FnGetNumaNodeId.Call(), asm.Mov.Imm(asm.R0, int32(ActionRedirect)), asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R8).WithSymbol("p4"), asm.And.Imm(asm.R0, 7), asm.Return(),
	}
	insns = append(insns, push(asm.Mov.Imm(asm.R1, 0).WithSymbol("p5"))...)
	insns = append(insns, asm.Return())
	insns = append(insns, push(asm.LoadMapPtr(asm.R1, 0).WithReference("q").WithSymbol("p6"))...)
	insns = append(insns, asm.Mov.Reg(asm.R2, asm.R7), asm.Add.Reg(asm.R2, asm.R8),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R0, 3), asm.Return())
	insns = append(insns, push(asm.LoadMapPtr(asm.R1, 0).WithReference("q").WithSymbol("p7"))...)
	insns = append(insns, asm.StoreMem(asm.R7, 0, asm.R0, asm.Byte), // proven
		asm.Mov.Imm(asm.R0, int32(ActionPass)), asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"), asm.Return())
	insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference("rb").WithSymbol("p8"),
		asm.Mov.Imm(asm.R2, 8), asm.Mov.Imm(asm.R3, 0), asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "p8ret"),
		asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R2, 0), asm.FnRingbufDiscard.Call(),
		asm.Mov.Imm(asm.R0, int32(ActionRedirect)).WithSymbol("p8ret"), asm.Return())
	// The jump makes the call a jump target: its map is not known where it
	// is compiled, so Go runs it.
	insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference("dm").WithSymbol("p9"),
		asm.Mov.Reg(asm.R2, asm.R8), asm.And.Imm(asm.R2, 7), asm.Mov.Imm(asm.R3, 0),
		asm.Ja.Label("p9call"), asm.FnRedirectMap.Call().WithSymbol("p9call"), asm.Return())
	return insns
}

// goCallSpec is a collection of the programs named, with the queue q, the
// ring buffer rb, the devmap dm and the program array jmp (slot 0: the program "t" when
// there is one).
func goCallSpec(progs map[string]asm.Instructions) *ebpf.CollectionSpec {
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"q":   {Name: "q", Type: ebpf.Queue, ValueSize: 8, MaxEntries: 40},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1},
			"rb":  {Name: "rb", Type: ebpf.RingBuf, MaxEntries: 4096},
			"dm":  {Name: "dm", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		},
		Programs: map[string]*ebpf.ProgramSpec{},
	}
	for name, insns := range progs {
		spec.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	return spec
}

// loadGoCall loads spec for engine e and returns its program "main", with
// "t" in jmp's slot 0 when there is one and dm's slots 0-4 set.
func loadGoCall(t *testing.T, spec *ebpf.CollectionSpec, e Engine) (*Collection, *Program) {
	t.Helper()
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tp, err := c.Program("t"); err == nil {
		jmp, err := c.Map("jmp")
		if err != nil {
			t.Fatal(err)
		}
		v := []byte{byte(tp.ID()), byte(tp.ID() >> 8), byte(tp.ID() >> 16), byte(tp.ID() >> 24)}
		if err := jmp.Update([]byte{0, 0, 0, 0}, v, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	dm, err := c.Map("dm")
	if err != nil {
		t.Fatal(err)
	}
	for k := range byte(5) {
		if err := dm.Update([]byte{k, 0, 0, 0}, []byte{k + 1, 0, 0, 0}, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.Program("main")
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine() != e {
		t.Fatalf("main runs in %v, want %v", p.Engine(), e)
	}
	return c, p
}

// drainQueue pops every value of c's queue q.
func drainQueue(t *testing.T, c *Collection) [][]byte {
	t.Helper()
	m, err := c.Map("q")
	if err != nil {
		t.Fatal(err)
	}
	q, ok := m.(*maps.Queue)
	if !ok {
		t.Fatalf("q is a %T", m)
	}
	var out [][]byte
	for {
		v := make([]byte, 8)
		if q.Pop(v) != nil {
			return out
		}
		out = append(out, v)
	}
}

// goCallFrames are n frames for goCallBody: burstFrames' (random lengths,
// some invalid offsets) with every path of the first byte.
func goCallFrames(rng *rand.Rand, n int) []Frame {
	frames := burstFrames(rng, n)
	for i := range frames {
		if f := &frames[i]; f.Data < f.DataEnd && f.DataEnd <= len(f.Buf) {
			f.Buf[f.Data] = byte(rng.UintN(256))
		}
	}
	return frames
}

// checkGoCallBursts runs spec's main in the interpreter (Run, frame by
// frame) and natively (RunBurst, bursts of random sizes) on the same
// random frames, and compares what each frame got (verdict, redirect,
// bytes and offsets), the first fault of each burst, the runs counted and
// the queue's values (burst false: Run frame by frame); it returns how many times a burst went on after a
// helper run in Go (burstCall).
func checkGoCallBursts(t *testing.T, spec *ebpf.CollectionSpec, seed uint64, burst bool) uint64 {
	t.Helper()
	ic, ip := loadGoCall(t, spec, EngineInterp)
	jc, jp := loadGoCall(t, spec, EngineJIT)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 30 {
		frames := goCallFrames(rng, 1+rng.IntN(150))
		want, got := cloneFrames(frames), cloneFrames(frames)
		wantV, gotV := make([]Action, len(want)), make([]Action, len(got))
		wantR, gotR := make([]Redirect, len(want)), make([]Redirect, len(got))
		for at := 0; at < len(got); {
			k := min(len(got)-at, 1+rng.IntN(90))
			wantFirst, wantErr := -1, error(nil)
			for i := at; i < at+k; i++ {
				wantV[i] = ri.Run(ip, &want[i])
				if wantV[i] == ActionRedirect {
					wantR[i] = ri.Redirect()
				}
				if err := ri.Fault(); err != nil && wantFirst < 0 {
					wantFirst, wantErr = i-at, err
				}
			}
			n, first, err := runJITFrames(rj, jp, got[at:at+k], gotV[at:at+k], gotR[at:at+k], burst)
			if n != k || first != wantFirst {
				t.Fatalf("round %d at %d: ran %d of %d, first fault %d, interpreter %d", round, at, n, k, first, wantFirst)
			}
			if errString(err) != errString(wantErr) {
				t.Errorf("round %d at %d: fault %v, interpreter %v", round, at, err, wantErr)
			}
			at += k
		}
		for i := range got {
			g, w := got[i], want[i]
			gr, wr := gotR[i], wantR[i]
			// The two collections' maps: the same one when both or neither.
			gr.Map, wr.Map = nil, nil
			if gotV[i] != wantV[i] || gr != wr || (gotR[i].Map == nil) != (wantR[i].Map == nil) {
				t.Errorf("round %d frame %d: %v %+v, interpreter %v %+v", round, i, gotV[i], gotR[i], wantV[i], wantR[i])
			}
			if g.DataMeta != w.DataMeta || g.Data != w.Data || g.DataEnd != w.DataEnd || !bytes.Equal(g.Buf, w.Buf) {
				t.Errorf("round %d frame %d: frame %d/%d/%d %x, interpreter %d/%d/%d %x",
					round, i, g.DataMeta, g.Data, g.DataEnd, g.Buf, w.DataMeta, w.Data, w.DataEnd, w.Buf)
			}
		}
		if gr, ga := rj.Runs(); true {
			if wr, wa := ri.Runs(); gr != wr || ga != wa {
				t.Fatalf("round %d: runs %d aborted %d, interpreter %d %d", round, gr, ga, wr, wa)
			}
		}
		if gq, wq := drainQueue(t, jc), drainQueue(t, ic); len(gq) != len(wq) || !bytes.Equal(bytes.Join(gq, nil), bytes.Join(wq, nil)) {
			t.Fatalf("round %d: queue %x, interpreter %x", round, gq, wq)
		}
	}
	return rj.jit.resumes
}

// TestJITBurstGoCalls: a burst whose frames call helpers run in Go goes on
// natively after each call that leaves nothing for Go to finish, and every
// frame gets what the interpreter gives it, on every path of goCallBody
// (a second call, redirects after and before a call, faults after and in
// the call, the packet read and written after it).
func TestJITBurstGoCalls(t *testing.T) {
	needJIT(t)
	if n := checkGoCallBursts(t, goCallSpec(map[string]asm.Instructions{"main": goCallBody()}), 1, true); n == 0 {
		t.Error("no burst went on after a helper run in Go")
	}
}

// TestJITBurstGoCallsTail: the same after a tail call, whose target's
// instructions the exit codes after the call count.
func TestJITBurstGoCallsTail(t *testing.T) {
	needJIT(t)
	main := asm.Instructions{
		asm.Mov.Imm(asm.R6, 7), // kept through the tail call
		asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"), asm.Mov.Imm(asm.R3, 0), asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, int32(ActionAborted)), asm.Return(),
	}
	spec := goCallSpec(map[string]asm.Instructions{"main": main, "t": goCallBody()})
	if n := checkGoCallBursts(t, spec, 2, true); n == 0 {
		t.Error("no burst went on after a helper run in Go")
	}
}

// TestJITBurstGoCallsLocal: goCallBody with its first helper call
// replaced by a bpf-to-bpf call (native: its frame stays in jitState while
// the burst goes on) of a subprogram that calls helpers run in Go.
func TestJITBurstGoCallsLocal(t *testing.T) {
	needJIT(t)
	body := goCallBody()
	for i, in := range body {
		if in.IsBuiltinCall() && asm.BuiltinFunc(in.Constant) == asm.FnGetNumaNodeId {
			body[i] = asm.Call.Label("sub")
			break
		}
	}
	sub := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1).WithSymbol("sub"),
		asm.FnGetNumaNodeId.Call(),
		asm.Add.Reg(asm.R0, asm.R6),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("q"), asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -8),
		asm.Mov.Imm(asm.R3, 0), asm.FnMapPushElem.Call(),
		asm.Add.Reg(asm.R0, asm.R6),
		asm.Return(),
	}
	spec := goCallSpec(map[string]asm.Instructions{"main": append(body, sub...)})
	if n := checkGoCallBursts(t, spec, 3, true); n == 0 {
		t.Error("no burst went on after a helper run in Go")
	}
	_, jp := loadGoCall(t, spec, EngineJIT)
	if j := jp.jit.Load(); j == nil || j.calls == 0 {
		t.Error("the bpf-to-bpf call is not native")
	}
}

// TestJITBurstGoCallsLoop: a bpf_loop callback calls helpers run in Go
// (the loop native, its frames in jitState), pushing its index and the
// registers' sum, and ends the loop at the packet's first byte mod 4.
func TestJITBurstGoCallsLoop(t *testing.T) {
	needJIT(t)
	main := asm.Instructions{
		asm.Mov.Imm(asm.R3, 9),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), asm.LoadMem(asm.R4, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R5, asm.R2), asm.Add.Imm(asm.R5, 1), asm.JGT.Reg(asm.R5, asm.R4, "nobyte"),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R3, 3),
		asm.Mov.Imm(asm.R1, 5).WithSymbol("nobyte"),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc},
		asm.Mov.Imm(asm.R4, 0), asm.FnLoop.Call(),
		asm.And.Imm(asm.R0, 3), asm.Return(),
	}
	const lddw = 9
	main[lddw].Constant = int64(len(main) + 1 - lddw - 1) // slots: the lddw counts two
	cb := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Reg(asm.R7, asm.R2),
		asm.Mov.Imm(asm.R1, 3), asm.Mov.Imm(asm.R5, 5),
		asm.FnGetNumaNodeId.Call(),
		asm.Add.Reg(asm.R0, asm.R1), asm.Add.Reg(asm.R0, asm.R5), asm.Add.Reg(asm.R0, asm.R6),
		asm.Add.Reg(asm.R0, asm.R7), asm.LSh.Imm(asm.R0, 8), asm.Add.Reg(asm.R0, asm.R6),
		asm.Xor.Reg(asm.R0, asm.R10),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("q"), asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -8),
		asm.Mov.Imm(asm.R3, 0), asm.FnMapPushElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.JNE.Reg(asm.R6, asm.R7, "next"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return().WithSymbol("next"),
	}
	spec := goCallSpec(map[string]asm.Instructions{"main": append(main, cb...)})
	if n := checkGoCallBursts(t, spec, 4, true); n == 0 {
		t.Error("no burst went on after a helper run in Go")
	}
}

// runJITFrames runs frames in a burst, or frame by frame as RunBurst
// reports them: how many ran, the first fault's index (-1: none) and
// error.
func runJITFrames(r *Runner, p *Program, frames []Frame, verdicts []Action, rds []Redirect, burst bool) (n, first int, err error) {
	if burst {
		n, first = r.RunBurst(p, frames, verdicts, rds)
		if first >= 0 {
			err = r.Fault()
		}
		return n, first, err
	}
	first = -1
	for i := range frames {
		verdicts[i] = r.Run(p, &frames[i])
		if verdicts[i] == ActionRedirect {
			rds[i] = r.Redirect()
		}
		if e := r.Fault(); e != nil && first < 0 {
			first, err = i, e
		}
	}
	return len(frames), first, err
}

// TestJITCallDepthAfterFault: a run that ends in Go inside a bpf-to-bpf
// call (goCallBody as a subprogram: its context loads are not specialised
// and go to Go, which adopts the native frame, and some of its paths
// fault there) leaves Go's call depth above 0; the next run's native calls
// count their depth, and their r10, from 0 again, in a burst or not.
func TestJITCallDepthAfterFault(t *testing.T) {
	needJIT(t)
	main := asm.Instructions{asm.Call.Label("sub"), asm.Return()}
	body := goCallBody()
	body[0] = body[0].WithSymbol("sub")
	spec := goCallSpec(map[string]asm.Instructions{"main": append(main, body...)})
	for _, burst := range []bool{true, false} {
		// In a burst, each context load goes on natively after Go ran it.
		if n := checkGoCallBursts(t, spec, 5, burst); burst && n == 0 {
			t.Error("no burst went on after a load run in Go")
		}
	}
}

// TestJITBurstGoCallsNoAllocs: a burst that goes on after helpers run in
// Go allocates nothing.
func TestJITBurstGoCallsNoAllocs(t *testing.T) {
	needJIT(t)
	_, jp := loadGoCall(t, goCallSpec(map[string]asm.Instructions{"main": goCallBody()}), EngineJIT)
	frames := make([]Frame, 64)
	for i := range frames {
		pkt := make([]byte, 64)
		pkt[0] = byte(i % 2) // paths 0 and 1: one and two calls
		frames[i] = *newFrame(pkt)
	}
	verdicts := make([]Action, len(frames))
	r := NewRunner(0)
	if a := testing.AllocsPerRun(100, func() { r.RunBurst(jp, frames, verdicts, nil) }); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
	if r.jit.resumes < 64*100 {
		t.Errorf("%d resumes in 100 bursts of 64 frames", r.jit.resumes)
	}
	var fe *Fault
	if err := r.Fault(); err != nil && !errors.As(err, &fe) {
		t.Errorf("fault %v", err)
	}
}
