package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Edge cases of bpf_tail_call, native (jit_amd64_helpers.go,
// jit_arm64_tail.go) against the interpreter (Runner.tailCall), on every
// architecture with a JIT: the last slot and the first index past the
// array, an index whose high half is set (the kernel reads a u32), an
// empty slot, a target without native code, chains of exactly
// maxTailCalls and one more, the count reset per run through a burst, a
// target replaced by Go while runs go on, and a tail call from a
// bpf-to-bpf subprogram.

// tailEdgeSlots is the program array's size; slot 0 holds step, slot 1
// plain (whose native code the test drops), slot 2 nothing, the last
// slot last.
const tailEdgeSlots = 4

// tailCallOf loads the program array jmp into r2 and tail-calls slot r3.
func tailCallOf(idx asm.Instruction) asm.Instructions {
	return asm.Instructions{idx, asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"), asm.FnTailCall.Call()}
}

// pktBounds loads data into r2 and branches to "pass" unless n bytes of
// packet follow it (r1 the context; r3 and r4 clobbered).
func pktBounds(n int32) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, n),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
	}
}

// tailSpec is a collection of the programs in progs (name: instructions)
// around a program array jmp of slots entries.
func tailSpec(slots uint32, progs map[string]asm.Instructions) *ebpf.CollectionSpec {
	spec := &ebpf.CollectionSpec{
		Maps:     map[string]*ebpf.MapSpec{"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: slots}},
		Programs: map[string]*ebpf.ProgramSpec{},
	}
	for name, insns := range progs {
		spec.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	return spec
}

// loadTailSpec loads spec for engine e and fills jmp's slots with the
// programs named (slot: name).
func loadTailSpec(t testing.TB, spec *ebpf.CollectionSpec, e Engine, slots map[uint32]string) *Collection {
	t.Helper()
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pa := tailArray(t, c)
	for slot, name := range slots {
		p := mustProg(t, c, name)
		if err := pa.SetProg(slot, p, p.ID()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// tailArray is c's program array jmp.
func tailArray(t testing.TB, c *Collection) *maps.ProgArray {
	t.Helper()
	m, err := c.Map("jmp")
	if err != nil {
		t.Fatal(err)
	}
	pa, ok := m.(*maps.ProgArray)
	if !ok {
		t.Fatalf("jmp is a %T", m)
	}
	return pa
}

// loadTailEdges loads the edge programs for e: main reads packet bytes
// 0-2 as n, the index's low byte and its high word's low byte, and
// tail-calls slot index with n in r6 (XDP_PASS when the call falls
// through); step returns XDP_TX when r6 is 0, else decrements it and
// tail-calls slot 0 (itself), returning XDP_DROP when that falls through:
// n+1 tail calls in all. last and plain write 0xab and 0xcd at packet
// byte 3 and return XDP_TX. On the JIT, plain's native code is dropped.
// main and step start with pad moves of r0 (past 4000 instructions, the
// arm64 backend's branches take their long form).
func loadTailEdges(t testing.TB, e Engine, pad int) *Collection {
	t.Helper()
	var nops asm.Instructions
	for range pad {
		nops = append(nops, asm.Mov.Imm(asm.R0, 0))
	}
	main := append(nops, pktBounds(4)...)
	main = append(main,
		asm.LoadMem(asm.R6, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.LoadMem(asm.R8, asm.R2, 2, asm.Byte),
		asm.LSh.Imm(asm.R8, 32),
		asm.Or.Reg(asm.R7, asm.R8),
	)
	main = append(main, tailCallOf(asm.Mov.Reg(asm.R3, asm.R7))...)
	main = append(main, asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"), asm.Return())
	step := append(slices.Clone(nops), asm.JEq.Imm(asm.R6, 0, "done"), asm.Sub.Imm(asm.R6, 1))
	step = append(step, tailCallOf(asm.Mov.Imm(asm.R3, 0))...)
	step = append(step, asm.Mov.Imm(asm.R0, int32(ActionDrop)), asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionTX)).WithSymbol("done"), asm.Return())
	mark := func(b int64) asm.Instructions {
		insns := pktBounds(4)
		return append(insns, asm.StoreImm(asm.R2, 3, b, asm.Byte), asm.Mov.Imm(asm.R0, int32(ActionTX)), asm.Return(),
			asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"), asm.Return())
	}
	spec := tailSpec(tailEdgeSlots, map[string]asm.Instructions{
		"main": main, "step": step, "last": mark(0xab), "plain": mark(0xcd),
	})
	c := loadTailSpec(t, spec, e, map[uint32]string{0: "step", 1: "plain", tailEdgeSlots - 1: "last"})
	if e == EngineJIT {
		mustProg(t, c, "plain").releaseJIT()
	}
	return c
}

// tailEdgeCase is a frame of TestJITTailEdges: packet bytes 0-2 (main's
// n, index, index>>32) and what the run gives.
type tailEdgeCase struct {
	name  string
	pkt   [3]byte
	want  Action
	mark  byte   // packet byte 3 after the run
	tails int    // tail calls made (Runner.tails)
	to    string // the program the last one went to
}

var tailEdgeCases = []tailEdgeCase{
	{"one call", [3]byte{0, 0, 0}, ActionTX, 0, 1, "step"},
	{"32 more: 33 in all", [3]byte{maxTailCalls - 1, 0, 0}, ActionTX, 0, maxTailCalls, "step"},
	{"33 more: the 34th falls through", [3]byte{maxTailCalls, 0, 0}, ActionDrop, 0, maxTailCalls, "step"},
	{"far past the limit", [3]byte{200, 0, 0}, ActionDrop, 0, maxTailCalls, "step"},
	{"index max_entries-1", [3]byte{0, tailEdgeSlots - 1, 0}, ActionTX, 0xab, 1, "last"},
	{"index max_entries", [3]byte{0, tailEdgeSlots, 0}, ActionPass, 0, 0, ""},
	{"index 255", [3]byte{0, 255, 0}, ActionPass, 0, 0, ""},
	{"empty slot", [3]byte{0, 2, 0}, ActionPass, 0, 0, ""},
	{"high half ignored", [3]byte{0, tailEdgeSlots - 1, 1}, ActionTX, 0xab, 1, "last"},
	{"high half, index max_entries", [3]byte{0, tailEdgeSlots, 1}, ActionPass, 0, 0, ""},
	{"target without native code", [3]byte{0, 1, 0}, ActionTX, 0xcd, 1, "plain"},
}

func (tc tailEdgeCase) frame() Frame {
	pkt := make([]byte, 60)
	copy(pkt, tc.pkt[:])
	return *newFrame(pkt)
}

// TestJITTailEdges: the cases of tailEdgeCases give their verdict and
// packet byte, the same on the interpreter and the JIT (faults included),
// through Run, RunFrame and RunBurst (whose frames alternate chains that
// stop at the limit with ones that do not: the count starts at 0 for
// each frame); the tail calls the JIT compiles natively leave, after a
// run done in one native round, the count and the target's id where Go
// reads them (Runner.tails, jitState.tail), so they did not go to Go.
// The programs are short, then long enough for long branches.
func TestJITTailEdges(t *testing.T) {
	needJIT(t)
	for _, pad := range []int{0, 4001} {
		t.Run(fmt.Sprint("pad", pad), func(t *testing.T) { testTailEdges(t, pad) })
	}
}

func testTailEdges(t *testing.T, pad int) {
	ci, cj := loadTailEdges(t, EngineInterp, pad), loadTailEdges(t, EngineJIT, pad)
	pi, pj := mustProg(t, ci, "main"), mustProg(t, cj, "main")
	if nativeTailArch && pj.jit.Load().native == 0 {
		t.Fatal("main's tail call is not native")
	}
	if nativeTailArch && mustProg(t, cj, "step").jit.Load().native == 0 {
		t.Fatal("step's tail call is not native")
	}
	ri, rj := NewRunner(0), NewRunner(0)
	warm := tailEdgeCases[0].frame()
	rj.Run(pj, &warm) // binds the collection: later runs start in native code
	for _, tc := range tailEdgeCases {
		fi, fj := tc.frame(), tc.frame()
		vi, vj := ri.Run(pi, &fi), rj.Run(pj, &fj)
		if vi != tc.want || vj != tc.want || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("%s: interpreter %v (%v), JIT %v (%v), want %v", tc.name, vi, ri.Fault(), vj, rj.Fault(), tc.want)
		}
		if got := fj.Buf[fj.Data+3]; got != tc.mark || fi.Buf[fi.Data+3] != tc.mark {
			t.Errorf("%s: packet byte 3 %#x (interpreter %#x), want %#x", tc.name, got, fi.Buf[fi.Data+3], tc.mark)
		}
		if ri.tails != tc.tails || rj.tails != tc.tails {
			t.Errorf("%s: %d tail calls (interpreter %d), want %d", tc.name, rj.tails, ri.tails, tc.tails)
		}
		var id uint64
		if tc.to != "" && tc.to != "plain" && nativeTailArch {
			id = uint64(mustProg(t, cj, tc.to).ID())
		}
		if got := rj.jit.tail; got != id {
			t.Errorf("%s: jitState.tail %d, want %d (the native call's target)", tc.name, got, id)
		}
		fj = tc.frame()
		if v, ok := rj.RunFrame(pj, &fj); Action(v) != tc.want || !ok {
			t.Errorf("%s: RunFrame %d %v (%v)", tc.name, v, ok, rj.Fault())
		}
	}
	var frames []Frame
	for range 3 {
		for _, tc := range tailEdgeCases {
			frames = append(frames, tc.frame())
		}
	}
	got := make([]Action, len(frames))
	if n, ff := rj.RunBurst(pj, frames, got, nil); n != len(frames) || ff >= 0 {
		t.Fatalf("burst: %d of %d, first fault %d: %v", n, len(frames), ff, rj.Fault())
	}
	for i, v := range got {
		tc := tailEdgeCases[i%len(tailEdgeCases)]
		if v != tc.want || frames[i].Buf[frames[i].Data+3] != tc.mark {
			t.Errorf("burst frame %d (%s): %v, byte 3 %#x; want %v, %#x", i, tc.name, v, frames[i].Buf[frames[i].Data+3], tc.want, tc.mark)
		}
	}
}

// TestJITTailReplaced: while Go replaces the target in slot 0 (one
// returning XDP_TX, one XDP_DROP, then none) as fast as it can, every run
// of a program tail-calling slot 0 gives one of their verdicts (XDP_PASS
// for none) without a fault, through Run and RunBurst; once the writer
// stops, every run gives the verdict of what the slot holds.
func TestJITTailReplaced(t *testing.T) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		t.Run(e.String(), func(t *testing.T) {
			if e == EngineJIT {
				needJIT(t)
			}
			testTailReplaced(t, e)
		})
	}
}

func testTailReplaced(t *testing.T, e Engine) {
	main := tailCallOf(asm.Mov.Imm(asm.R3, 0))
	main = append(main, asm.Mov.Imm(asm.R0, int32(ActionPass)), asm.Return())
	ret := func(a Action) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R0, int32(a)), asm.Return()} }
	c := loadTailSpec(t, tailSpec(1, map[string]asm.Instructions{"main": main, "tx": ret(ActionTX), "drop": ret(ActionDrop)}), e, nil)
	p, tx, drop := mustProg(t, c, "main"), mustProg(t, c, "tx"), mustProg(t, c, "drop")
	if e == EngineJIT && nativeTailArch && p.jit.Load().native == 0 {
		t.Fatal("the tail call is not native")
	}
	pa := tailArray(t, c)
	var key [4]byte
	var stop atomic.Bool
	var wg sync.WaitGroup
	var werr atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			for _, q := range []*Program{tx, drop} {
				if err := pa.SetProg(0, q, q.ID()); err != nil {
					werr.Store(err)
					return
				}
			}
			if err := pa.Delete(key[:]); err != nil {
				werr.Store(err)
				return
			}
		}
	}()
	r := NewRunner(0)
	seen := map[Action]int{}
	frames := make([]Frame, 32)
	verdicts := make([]Action, len(frames))
	for round := 0; round < 200; round++ {
		for i := range frames {
			frames[i] = *newFrame(make([]byte, 60))
		}
		if n, ff := r.RunBurst(p, frames, verdicts, nil); n != len(frames) || ff >= 0 {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("burst: %d of %d, first fault %d: %v", n, len(frames), ff, r.Fault())
		}
		f := *newFrame(make([]byte, 60))
		for _, v := range append(verdicts, r.Run(p, &f)) {
			seen[v]++
		}
	}
	stop.Store(true)
	wg.Wait()
	if err, _ := werr.Load().(error); err != nil {
		t.Fatal(err)
	}
	for v := range seen {
		if v != ActionTX && v != ActionDrop && v != ActionPass {
			t.Fatalf("verdicts %v: %v is none of the targets'", seen, v)
		}
	}
	t.Logf("verdicts while the slot changed: %v", seen)
	for _, q := range []*Program{drop, tx, nil} {
		want := map[*Program]Action{drop: ActionDrop, tx: ActionTX, nil: ActionPass}[q]
		if q != nil {
			if err := pa.SetProg(0, q, q.ID()); err != nil {
				t.Fatal(err)
			}
		} else if err := pa.Delete(key[:]); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			f := *newFrame(make([]byte, 60))
			if v := r.Run(p, &f); v != want {
				t.Fatalf("slot holding %v: %v, want %v", q, v, want)
			}
		}
	}
}

// TestJITTailFromSubprogram: a tail call made in a bpf-to-bpf subprogram
// replaces the subprogram's frame, as in the kernel (which allows it
// since Linux 5.10 where the JIT supports it, with the caller's frame
// kept): the target runs on the subprogram's stack frame (r10 as the
// subprogram had it) and its exit returns to the subprogram's caller,
// which goes on after its call. main returns what sub returned less 1:
// the target's 3 (through its stack) when packet byte 0 names slot 0,
// sub's own 4 when the call falls through (slot 1 is empty, 2 past the
// array).
func TestJITTailFromSubprogram(t *testing.T) {
	needJIT(t)
	sub := pktBounds(1)
	sub = append(sub, asm.LoadMem(asm.R3, asm.R2, 0, asm.Byte))
	sub[0] = sub[0].WithSymbol("sub")
	sub = append(sub, tailCallOf(asm.Mov.Reg(asm.R3, asm.R3))...)
	sub = append(sub, asm.Mov.Imm(asm.R0, 4).WithSymbol("pass"), asm.Return())
	main := asm.Instructions{
		asm.Mov.Imm(asm.R6, 0x77),
		asm.StoreMem(asm.R10, -8, asm.R6, asm.DWord),
		asm.Call.Label("sub"),
		asm.LoadMem(asm.R1, asm.R10, -8, asm.DWord),
		asm.JNE.Imm(asm.R1, 0x77, "bad"),
		asm.Sub.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("bad"),
		asm.Return(),
	}
	main = append(main, sub...)
	tgt := asm.Instructions{
		asm.Mov.Imm(asm.R6, 3),
		asm.StoreMem(asm.R10, -8, asm.R6, asm.DWord),
		asm.LoadMem(asm.R0, asm.R10, -8, asm.DWord),
		asm.Return(),
	}
	spec := tailSpec(2, map[string]asm.Instructions{"main": main, "tgt": tgt})
	run := func(e Engine) []Action {
		c := loadTailSpec(t, spec, e, map[uint32]string{0: "tgt"})
		p := mustProg(t, c, "main")
		if e == EngineJIT && nativeTailArch && p.jit.Load().native == 0 {
			t.Fatal("the tail call is not native")
		}
		r := NewRunner(0)
		var out []Action
		for range 2 {
			for _, slot := range []byte{0, 1, 2} {
				f := *newFrame([]byte{slot, 0, 0, 0})
				out = append(out, r.Run(p, &f))
				if r.Fault() != nil {
					t.Fatalf("%v, slot %d: %v", e, slot, r.Fault())
				}
			}
		}
		return out
	}
	want := []Action{ActionPass, ActionTX, ActionTX, ActionPass, ActionTX, ActionTX}
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		if got := run(e); !slices.Equal(got, want) {
			t.Errorf("%v: %v, want %v", e, got, want)
		}
	}
}

// TestJITTailExample: the dispatcher of examples/xdp/xdp_tailcall.o
// (clang's code, its program array filled by the object) gives the
// interpreter's verdicts, bytes and faults through Run and RunBurst on
// TCP, UDP, ICMP, GRE and IPv6 frames, whole, truncated, with a short
// IHL or bytes mutated; the targets count the same hits (tc_hits).
func TestJITTailExample(t *testing.T) {
	needJIT(t)
	file := filepath.Join("..", "..", "examples", "xdp", "xdp_tailcall.o")
	load := func(e Engine) (*Collection, *Program) {
		c, err := LoadFile(file, &Options{NumCPU: 1, Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, mustProg(t, c, "xdp_tailcall")
	}
	ci, pi := load(EngineInterp)
	cj, pj := load(EngineJIT)
	if nativeTailArch && pj.jit.Load().native == 0 {
		t.Fatal("the dispatcher's tail calls are not native")
	}
	rng := rand.New(rand.NewPCG(21, 33))
	var pkts [][]byte
	for i := range 400 {
		f := udpFrame(uint16(rng.IntN(1000)))
		f[23] = []byte{6, 17, 1, 47}[i%4] // the IPv4 protocol
		switch i % 10 {
		case 1:
			f[12], f[13] = 0x86, 0xdd // IPv6
		case 2:
			f = f[:rng.IntN(len(f))]
		case 3:
			f[14] = 0x44 // IHL 4
		case 4:
			f[rng.IntN(len(f))] = byte(rng.Uint32())
		}
		pkts = append(pkts, f)
	}
	ri, rj := NewRunner(0), NewRunner(0)
	for i, pkt := range pkts {
		fi, fj := newFrame(pkt), newFrame(pkt)
		vi, vj := ri.Run(pi, fi), rj.Run(pj, fj)
		if vi != vj || errString(ri.Fault()) != errString(rj.Fault()) || !slices.Equal(fi.Buf, fj.Buf) {
			t.Fatalf("frame %d % x: interpreter %v (%v), JIT %v (%v)", i, pkt, vi, ri.Fault(), vj, rj.Fault())
		}
	}
	frames := make([]Frame, len(pkts))
	for i, pkt := range pkts {
		frames[i] = *newFrame(pkt)
	}
	got := make([]Action, len(frames))
	if n, _ := rj.RunBurst(pj, frames, got, nil); n != len(frames) {
		t.Fatalf("burst ran %d of %d", n, len(frames))
	}
	for i, pkt := range pkts {
		f := newFrame(pkt)
		if want := ri.Run(pi, f); got[i] != want || !slices.Equal(f.Buf, frames[i].Buf) {
			t.Fatalf("burst frame %d: %v, Run %v", i, got[i], want)
		}
	}
	hits := func(c *Collection) (out [4]uint64) {
		m, err := c.Map("tc_hits")
		if err != nil {
			t.Fatal(err)
		}
		for k := range out {
			if v := m.Lookup(binary.LittleEndian.AppendUint32(nil, uint32(k)), 0); len(v) == 8 {
				out[k] = binary.LittleEndian.Uint64(v)
			}
		}
		return out
	}
	hi, hj := hits(ci), hits(cj)
	if hi != hj || hi[0] == 0 || hi[1] == 0 || hi[2] == 0 {
		t.Errorf("tc_hits: interpreter %v, JIT %v (TCP, UDP and ICMP each hit)", hi, hj)
	}
}

// tailDiff fills the slots of the edge programs ci (interpreter) and cj
// (JIT) as in[0] says (two bits a slot: nothing, step, last or plain) and
// runs main on the packet in[1:] (main's n, index and high word in its
// first bytes) through Run and RunBurst: the verdicts, bytes, faults and
// tail call counts must agree.
func tailDiff(t *testing.T, ci, cj *Collection, ri, rj *Runner, in []byte) {
	if len(in) == 0 {
		return
	}
	for _, c := range []*Collection{ci, cj} {
		pa := tailArray(t, c)
		for slot := uint32(0); slot < tailEdgeSlots; slot++ {
			name := [4]string{"", "step", "last", "plain"}[in[0]>>(2*slot)&3]
			if name == "" {
				if err := pa.Delete(binary.LittleEndian.AppendUint32(nil, slot)); err != nil && !errors.Is(err, syscall.ENOENT) {
					t.Fatal(err)
				}
				continue
			}
			p := mustProg(t, c, name)
			if err := pa.SetProg(slot, p, p.ID()); err != nil {
				t.Fatal(err)
			}
		}
	}
	pi, pj := mustProg(t, ci, "main"), mustProg(t, cj, "main")
	fi, fj := newFrame(in[1:]), newFrame(in[1:])
	vi, vj := ri.Run(pi, fi), rj.Run(pj, fj)
	if vi != vj || errString(ri.Fault()) != errString(rj.Fault()) || !slices.Equal(fi.Buf, fj.Buf) || ri.tails != rj.tails {
		t.Fatalf("input % x: interpreter %v (%v, %d tail calls), JIT %v (%v, %d)", in, vi, ri.Fault(), ri.tails, vj, rj.Fault(), rj.tails)
	}
	frames := []Frame{*newFrame(in[1:]), *newFrame(in[1:])}
	got := make([]Action, len(frames))
	if n, _ := rj.RunBurst(pj, frames, got, nil); n != len(frames) || got[0] != vi || got[1] != vi ||
		!slices.Equal(frames[1].Buf, fi.Buf) {
		t.Fatalf("input % x: burst %d %v, Run %v", in, n, got, vi)
	}
}

// FuzzJITTail: any filling of the slots and any packet give the same
// results on the interpreter and the JIT (tailDiff).
func FuzzJITTail(f *testing.F) {
	needJIT(f)
	for _, seed := range [][]byte{
		{0x00, 0, 0, 0, 0}, {0xb9, 32, 0, 0, 0}, {0xb9, 33, 1, 0, 0}, {0x39, 0, 3, 1, 0},
		{0x55, 200, 0, 0, 0}, {0xe6, 5, 2, 0, 0}, {0xff, 0, 1}, {0x9d, 31, 255, 255, 0, 7},
	} {
		f.Add(seed)
	}
	ci, cj := loadTailEdges(f, EngineInterp, 0), loadTailEdges(f, EngineJIT, 0)
	ri, rj := NewRunner(0), NewRunner(0)
	f.Fuzz(func(t *testing.T, in []byte) { tailDiff(t, ci, cj, ri, rj, in) })
}

// TestJITTailRandom is FuzzJITTail on random inputs: random slot fillings
// with packets whose first bytes are small chain lengths and indexes
// around the array's size, or anything.
func TestJITTailRandom(t *testing.T) {
	needJIT(t)
	n := 2000
	if testing.Short() {
		n = 300
	}
	ci, cj := loadTailEdges(t, EngineInterp, 0), loadTailEdges(t, EngineJIT, 0)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(21, 1))
	for range n {
		in := make([]byte, 1+rng.IntN(12))
		for i := range in {
			in[i] = byte(rng.Uint32())
		}
		if len(in) > 3 && rng.IntN(3) > 0 {
			in[1] = byte(rng.IntN(40))                // n around the limit
			in[2] = byte(rng.IntN(tailEdgeSlots + 2)) // index around the size
			in[3] = byte(rng.IntN(2))
		}
		tailDiff(t, ci, cj, ri, rj, in)
	}
}
