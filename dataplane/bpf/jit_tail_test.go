package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// loadTailProgs loads three programs sharing the program array jmp (3
// slots: 0 self, 1 other, 2 empty) for engine e: main tail-calls the
// slot of the packet's first byte (XDP_PASS when the call falls through);
// self counts itself in r6 and tail-calls itself until the limit stops it,
// returning the count; other calls a helper (a return to Go on every
// engine) and loads at data + the packet's second byte, unchecked (a
// fault past the end, naming other).
func loadTailProgs(t *testing.T, e Engine) (*Collection, *Program) {
	t.Helper()
	tail := func(idx asm.Instruction) asm.Instructions {
		return asm.Instructions{idx, asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"), asm.FnTailCall.Call()}
	}
	mainInsns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.Byte),
	}
	mainInsns = append(mainInsns, tail(asm.Mov.Reg(asm.R3, asm.R3))...)
	mainInsns = append(mainInsns, asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), asm.Return())
	self := asm.Instructions{asm.Add.Imm(asm.R6, 1)}
	self = append(self, tail(asm.Mov.Imm(asm.R3, 0))...)
	self = append(self, asm.Mov.Reg(asm.R0, asm.R6), asm.Return())
	other := asm.Instructions{
		asm.Mov.Reg(asm.R7, asm.R1),
		asm.FnGetSmpProcessorId.Call(),
		asm.LoadMem(asm.R2, asm.R7, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R7, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 1, asm.Byte),
		asm.Add.Reg(asm.R2, asm.R5),
		asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte),
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"),
		asm.Return(),
	}
	prog := func(name string, insns asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 3}},
		Programs: map[string]*ebpf.ProgramSpec{
			"main": prog("main", mainInsns), "self": prog("self", self), "other": prog("other", other),
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	jmp, err := c.Map("jmp")
	if err != nil {
		t.Fatal(err)
	}
	for slot, name := range []string{"self", "other"} {
		p, err := c.Program(name)
		if err != nil {
			t.Fatal(err)
		}
		var k, v [4]byte
		binary.LittleEndian.PutUint32(k[:], uint32(slot))
		binary.LittleEndian.PutUint32(v[:], p.ID())
		if err := jmp.Update(k[:], v[:], 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.Program("main")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestJITTailCalls: native tail calls give the interpreter's results:
// the limit of 33 tail calls a run (the count in r6 of a program that
// calls itself after main called it), empty
// and out-of-range slots falling through, a target that returns to Go for
// a helper and then faults (the fault names the target), through Run,
// RunFrame and RunBurst.
func TestJITTailCalls(t *testing.T) {
	needJIT(t)
	_, pi := loadTailProgs(t, EngineInterp)
	_, pj := loadTailProgs(t, EngineJIT)
	if nativeTailArch && pj.jit.Load().native == 0 {
		t.Fatal("the tail call is not native")
	}
	var frames []Frame
	for slot := byte(0); slot < 5; slot++ {
		for _, off := range []byte{0, 1, 40, 59, 60, 200} {
			pkt := udpFrame(9)[:60]
			pkt[0], pkt[1] = slot, off
			frames = append(frames, *newFrame(pkt))
		}
	}
	ri, rj := NewRunner(0), NewRunner(0)
	want := make([]Action, len(frames))
	for i := range frames {
		fi, fj := cloneFrame(frames[i]), cloneFrame(frames[i])
		vi, oki := ri.RunFrame(pi, &fi)
		vj, okj := rj.RunFrame(pj, &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("frame %d (slot %d, offset %d): interpreter %d %v (%v), JIT %d %v (%v)",
				i, frames[i].Buf[testHeadroom], frames[i].Buf[testHeadroom+1], vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if frames[i].Buf[testHeadroom] == 0 && vi != maxTailCalls {
			t.Errorf("self ran %d times, want %d (main's call is the first of the %d)", vi, maxTailCalls, maxTailCalls)
		}
		fi = cloneFrame(frames[i])
		want[i] = ri.Run(pi, &fi)
	}
	got := make([]Action, len(frames))
	work := make([]Frame, len(frames))
	for i := range frames {
		work[i] = cloneFrame(frames[i])
	}
	if n, _ := rj.RunBurst(pj, work, got, nil); n != len(frames) {
		t.Fatalf("burst ran %d", n)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("burst frame %d: %v, Run %v", i, got[i], want[i])
		}
	}
	ri2, _ := ri.Runs()
	rj2, _ := rj.Runs()
	if ri2 != rj2 {
		t.Errorf("runs: interpreter %d, JIT %d", ri2, rj2)
	}
}
