package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the linked scalars of the range analysis (jit_range_link.go):
// a bound a compare learns of one copy proves the accesses another copy
// indexes, and every way the link breaks (a write, a merge with a path
// without it, a 32-bit move of a 64-bit value, a helper call, a spill and
// fill, a signed or 32-bit compare of an unknown value) leaves the access
// checked, faulting or not exactly as in the interpreter.

// linkTable is the size of .data in the link tests: five 8-byte counters
// (xdp_globals' per_verdict).
const linkTable = 40

// loadLinkColl loads insns with a writable linkTable-byte .data (bytes 1,
// 2, 3, ...) and an 8-byte .rodata for engine e, with an instruction
// budget (0: the default).
func loadLinkColl(t *testing.T, insns asm.Instructions, e Engine, budget int) (*Collection, *Program) {
	t.Helper()
	val := make([]byte, linkTable)
	for i := range val {
		val[i] = byte(i + 1)
	}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			".data": {Name: ".data", Type: ebpf.Array, KeySize: 4, ValueSize: linkTable, MaxEntries: 1,
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: val}}},
			".rodata": {Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1,
				Flags: uint32(maps.FlagRdonlyProg), Contents: []ebpf.MapKV{{Key: uint32(0), Value: []byte{9, 8, 7, 6, 5, 4, 3, 2}}}},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"lk": {Name: "lk", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e, InsnBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("lk")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// linkProg wraps body: r2 = data, r3 = data_end, 16 bytes proven (XDP_PASS
// when shorter); r4 = the packet's first 8 bytes, r5 its byte 8; body
// leaves in r0 what the program returns (its low byte); "out" returns
// XDP_PASS.
func linkProg(body ...asm.Instruction) asm.Instructions {
	out := asm.Instructions{
		asm.Mov.Imm(asm.R0, 0),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 16), asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R4, asm.R2, 0, asm.DWord),
		asm.LoadMem(asm.R5, asm.R2, 8, asm.Byte),
	}
	out = append(out, body...)
	return append(out, asm.And.Imm(asm.R0, 0xff), asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("out"), asm.Return())
}

// counter is per_verdict[idx]++ with the .data counters: r6 = .data +
// idx*8, the load, the add and the store, the value left in r0.
func counter(idx asm.Register) []asm.Instruction {
	return []asm.Instruction{
		asm.LSh.Imm(idx, 3),
		asm.LoadMapValue(asm.R6, 0, 0).WithReference(".data"),
		asm.Add.Reg(asm.R6, idx),
		asm.LoadMem(asm.R0, asm.R6, 0, asm.DWord),
		asm.Add.Imm(asm.R0, 1),
		asm.StoreMem(asm.R6, 0, asm.R0, asm.DWord),
	}
}

func catInsns(parts ...[]asm.Instruction) []asm.Instruction {
	var out []asm.Instruction
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// linkFrames are the frames every link test runs on: the first 8 bytes
// (r4) at the edges of the bound (0, 4, 5, 6), negative, with high bits
// set above a small low half, and a byte 8 (r5) of 0 or not, each also
// cut short of the 16 bytes.
func linkFrames() [][]byte {
	var out [][]byte
	for _, v := range []uint64{0, 3, 4, 5, 6, 255, 1 << 32, 1<<32 | 2, 0xffffffff, 1<<63 | 1, ^uint64(0), ^uint64(3)} {
		for _, b8 := range []byte{0, 1} {
			pkt := make([]byte, 20)
			binary.LittleEndian.PutUint64(pkt, v)
			pkt[8] = b8
			out = append(out, pkt, pkt[:15])
		}
	}
	return out
}

// linkCases are the link tests: the program body after linkProg's
// prologue and the count of accesses the JIT proves (the packet loads of
// the prologue are 2 of them).
var linkCases = map[string]struct {
	body   []asm.Instruction
	proven int
	sound  bool // unproven, yet no frame faults: the copies are equal at run time
}{
	// clang's "if (verdict < 5) per_verdict[verdict]++": the compare of
	// one copy, the index of another.
	"copy bounded": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.Mov.Reg(asm.R0, asm.R4), asm.JGT.Imm(asm.R1, 4, "out")},
		counter(asm.R0)), 4, false},
	// The original bounded through its copy, the compare taken.
	"original bounded": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JLT.Imm(asm.R1, 5, "ok"), asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("ok")}, counter(asm.R4)), 4, false},
	// A copy of a copy, the bound from a register of known range.
	"chain, bound by a register": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R8, 4),
		asm.JGT.Reg(asm.R7, asm.R8, "out")}, counter(asm.R4)), 4, false},
	// A bound one too large: index 5 is past the table.
	"bound too large": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JGT.Imm(asm.R1, 5, "out")}, counter(asm.R4)), 2, false},
	// A 32-bit move of a scalar below 2^31 is a copy: linked.
	"32-bit copy of a byte": {catInsns([]asm.Instruction{
		asm.Mov.Reg32(asm.R1, asm.R5), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R5)), 4, false},
	// A 32-bit move of a 64-bit value drops its high bits: not a copy.
	"32-bit move of a 64-bit value": {catInsns([]asm.Instruction{
		asm.Mov.Reg32(asm.R1, asm.R4), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 2, false},
	// A 32-bit compare of an unknown value bounds its low half only.
	"32-bit compare": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JGT.Imm32(asm.R1, 4, "out")}, counter(asm.R4)), 2, false},
	// A signed compare lets negative values through.
	"signed compare": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JSGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 2, false},
	// The copy written between the move and the compare.
	"original written": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.Add.Imm(asm.R4, 1), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 2, false},
	"copy written": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.LoadMem(asm.R1, asm.R2, 8, asm.Byte), asm.JGT.Imm(asm.R1, 4, "out")},
		counter(asm.R4)), 3, false},
	// Linked on one path only: the paths meet before the compare.
	"linked on one path": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JEq.Imm(asm.R5, 0, "join"),
		asm.LoadMem(asm.R1, asm.R2, 9, asm.Byte),
		asm.Mov.Imm(asm.R7, 0).WithSymbol("join"), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 3, false},
	// Linked differently on two paths (r1 = r4 on one, r1 = r7 on the
	// other): only what both say holds.
	"linked differently": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R7, asm.R4), asm.Mov.Reg(asm.R1, asm.R4), asm.JEq.Imm(asm.R5, 0, "join"),
		asm.LoadMem(asm.R7, asm.R2, 9, asm.Byte), asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mov.Imm(asm.R8, 0).WithSymbol("join"), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 3, false},
	// Linked on both paths: still linked after the merge.
	"linked on both paths": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.JEq.Imm(asm.R5, 0, "join"),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Mov.Imm(asm.R7, 0).WithSymbol("join"), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 4, false},
	// A helper clobbers r1-r5: r1 after the call is not r7's copy (the
	// interpreter happens to leave it as it was, a native helper may
	// not: the analysis must not rely on it).
	"helper between": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.Mov.Reg(asm.R7, asm.R4), asm.FnGetSmpProcessorId.Call(),
		asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R7)), 2, true},
	// r6-r9 survive a helper that keeps the packet, links and all.
	"helper before": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R7, asm.R4), asm.Mov.Reg(asm.R8, asm.R4), asm.FnGetSmpProcessorId.Call(),
		asm.JGT.Imm(asm.R8, 4, "out")}, counter(asm.R7)), 2 + 2, false},
	// Spilled and filled: the fill is not known to equal the copy.
	"spill and fill": {catInsns([]asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R4), asm.StoreMem(asm.RFP, -8, asm.R4, asm.DWord),
		asm.LoadMem(asm.R7, asm.RFP, -8, asm.DWord), asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R7)), 2, true},
	// A sign-extending move of a byte below 128 is a copy; of an
	// unknown value, not.
	"movsx of a byte": {catInsns([]asm.Instruction{
		asm.And.Imm(asm.R5, 0x7f), asm.MovSX8.Reg(asm.R1, asm.R5),
		asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R5)), 4, false},
	"movsx of an unknown": {catInsns([]asm.Instruction{
		asm.MovSX8.Reg(asm.R1, asm.R4),
		asm.JGT.Imm(asm.R1, 4, "out")}, counter(asm.R4)), 2, false},
}

// TestJITLinkedScalars: each link case proves what it says and gives the
// interpreter's verdict, fault and .data on every frame of linkFrames.
func TestJITLinkedScalars(t *testing.T) {
	needJIT(t)
	for name, tc := range linkCases {
		t.Run(name, func(t *testing.T) {
			insns := linkProg(tc.body...)
			ci, pi := loadLinkColl(t, insns, EngineInterp, 0)
			cj, pj := loadLinkColl(t, insns, EngineJIT, 0)
			if n := pj.jit.Load().proven; n != tc.proven {
				t.Errorf("%d accesses proven, want %d\n%s", n, tc.proven, pj.Disasm())
			}
			faults := linkRuns(t, ci, cj, pi, pj, linkFrames())
			if tc.proven < 4 && !tc.sound && faults == 0 {
				t.Error("no frame faults: the unproven access is not exercised at its edge")
			}
		})
	}
}

// linkRuns runs every frame in both engines, fails unless they agree
// (guardedDiff: verdict, fault, frame) and their .data is the same after
// each, and returns how many runs faulted.
func linkRuns(t *testing.T, ci, cj *Collection, pi, pj *Program, frames [][]byte) int {
	t.Helper()
	ri, rj := NewRunner(0), NewRunner(0)
	faults := 0
	for _, pkt := range frames {
		if !guardedDiff(t, ri, rj, pi, pj, pkt, nil) { // jit_meta_test.go
			faults++
		}
		mi, _ := ci.Map(".data")
		mj, _ := cj.Map(".data")
		if string(mi.(*maps.Array).Bytes()) != string(mj.(*maps.Array).Bytes()) {
			t.Fatalf("frame % x: .data differs\ninterpreter % x\nJIT         % x", pkt, mi.(*maps.Array).Bytes(), mj.(*maps.Array).Bytes())
		}
	}
	return faults
}
