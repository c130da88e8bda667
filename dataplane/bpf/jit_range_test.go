package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of provenIn: which packet accesses the JIT emits without their
// check, and that the programs that do not prove an access in bounds
// (no compare, a compare too short, on one path only, before a helper, in
// 32 bits, below data) fault exactly as in the interpreter, on frames of
// every length around the bound.

// loadRange loads an XDP program for engine e (no maps).
func loadRange(t *testing.T, insns asm.Instructions, e Engine) *Program {
	t.Helper()
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"rg": {Name: "rg", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("rg")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ctxPtrs: r2 = data, r3 = data_end (r1 is the context).
var ctxPtrs = asm.Instructions{
	asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
	asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
}

// bound is "r4 = r2 + n; if r4 > r3 goto out" (out returns XDP_PASS).
func bound(n int32) asm.Instructions {
	return asm.Instructions{asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, n), asm.JGT.Reg(asm.R4, asm.R3, "out")}
}

// rangeProg wraps body: r0 = XDP_DROP when it falls through, the loaded
// value folded in.
func rangeProg(body ...asm.Instructions) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Mov.Imm(asm.R5, 0)}
	out = append(out, ctxPtrs...)
	for _, b := range body {
		out = append(out, b...)
	}
	return append(out,
		asm.And.Imm(asm.R5, 0), asm.Mov.Imm(asm.R0, 1), asm.Or.Reg(asm.R0, asm.R5), asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
}

// vlanOffset leaves in r4 the offset of the header after Ethernet: 14, or
// 18 when the packet's byte 12 is 8 (udpFrame's 0x0800 runs that path;
// the analysis meets both), after a proven load of that byte.
func vlanOffset() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Byte), asm.Mov.Imm(asm.R4, 14), asm.JNE.Imm(asm.R5, 8, "joined"),
		asm.Mov.Imm(asm.R4, 18), asm.Mov.Reg(asm.R5, asm.R4).WithSymbol("joined"),
	}
}

// vlanPointer leaves in r6 a pointer to the header after Ethernet: data
// + 14, or data + 18 when the packet's byte 12 is 8, after a proven load
// of that byte; the paths meet at "joined" with two packet pointers.
func vlanPointer(data asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R5, data, 12, asm.Byte), asm.Mov.Reg(asm.R6, data), asm.Add.Imm(asm.R6, 14),
		asm.JNE.Imm(asm.R5, 8, "joined"), asm.Mov.Reg(asm.R6, data), asm.Add.Imm(asm.R6, 18),
		asm.Mov.Imm(asm.R5, 0).WithSymbol("joined"),
	}
}

// shiftBy leaves in r6 data + (byte 14 & 3) << r4, r4 being 3 when the
// packet's byte 12 is 8 and 2 else (the paths meet in [0, 3]), shifted
// in 32 bits when narrow; the two bytes are loaded proven.
func shiftBy(narrow bool) asm.Instructions {
	shift := asm.LSh.Reg(asm.R6, asm.R4)
	if narrow {
		shift = asm.LSh.Reg32(asm.R6, asm.R4)
	}
	return asm.Instructions{
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Byte), asm.Mov.Imm(asm.R4, 2), asm.JNE.Imm(asm.R5, 8, "shift"),
		asm.Mov.Imm(asm.R4, 3),
		asm.LoadMem(asm.R6, asm.R2, 14, asm.Byte).WithSymbol("shift"), asm.And.Imm(asm.R6, 3),
		shift, asm.Add.Reg(asm.R6, asm.R2),
	}
}

func ld(dst, base asm.Register, off int16, size asm.Size) asm.Instructions {
	return asm.Instructions{asm.LoadMem(dst, base, off, size)}
}

func TestJITPacketRanges(t *testing.T) {
	needJIT(t)
	cases := map[string]struct {
		insns  asm.Instructions
		proven int
	}{
		"checked":      {rangeProg(bound(14), ld(asm.R5, asm.R2, 12, asm.Half), ld(asm.R5, asm.R2, 0, asm.DWord)), 2},
		"store":        {rangeProg(bound(6), asm.Instructions{asm.StoreImm(asm.R2, 0, 7, asm.Word), asm.StoreMem(asm.R2, 4, asm.R0, asm.Half)}), 2},
		"no check":     {rangeProg(ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"one short":    {rangeProg(bound(13), ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"below data":   {rangeProg(bound(14), ld(asm.R5, asm.R2, -2, asm.Half)), 0},
		"32-bit check": {rangeProg(asm.Instructions{asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 14), asm.JGT.Reg32(asm.R4, asm.R3, "out")}, ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"mirrored check": {rangeProg(asm.Instructions{asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 14),
			asm.JLT.Reg(asm.R3, asm.R4, "out")}, ld(asm.R5, asm.R2, 12, asm.Half)), 1},
		"taken check": {rangeProg(asm.Instructions{asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 14),
			asm.JLE.Reg(asm.R4, asm.R3, "ok"), asm.Ja.Label("out"), asm.Mov.Imm(asm.R5, 0).WithSymbol("ok")},
			ld(asm.R5, asm.R2, 12, asm.Half)), 1},
		// Checked on one path only: the paths meet before the load.
		"one path": {rangeProg(asm.Instructions{asm.JEq.Imm(asm.R0, 1, "skip")}, bound(14),
			asm.Instructions{asm.Mov.Imm(asm.R5, 0).WithSymbol("skip")}, ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		// A helper may move data: the compare before it proves nothing
		// after it (adjust_head by 0 keeps the frame as it is).
		"after a helper": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R2, 0),
			asm.FnXdpAdjustHead.Call(), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		// Helpers that do move data or data_end (native on amd64): a
		// pointer proven before them is checked after them, and faults
		// where the frame no longer reaches.
		"after adjust_tail": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R2, -8),
			asm.FnXdpAdjustTail.Call(), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"after adjust_head": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R2, 4),
			asm.FnXdpAdjustHead.Call(), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 2, asm.Half)), 0},
		"after adjust_meta": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R2, -4),
			asm.FnXdpAdjustMeta.Call(), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half), ld(asm.R5, asm.R2, -4, asm.Word)), 0},
		// Helpers that move neither data nor data_end (a clock, the CPU
		// number, map lookups: helperInfo.keepsPacket) keep what was
		// proven of r6-r9, as the kernel's verifier does; r1-r5 are
		// clobbered, and a pointer proven too short before the call
		// is still checked after it (faults on the 13-byte frame).
		"after a clock": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.FnKtimeGetNs.Call(), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half)), 1},
		"after a clock, checked short": {rangeProg(bound(13), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.FnKtimeGetNs.Call(), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"stores after the CPU number": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.FnGetSmpProcessorId.Call(),
			asm.StoreMem(asm.R6, 0, asm.R0, asm.Half), asm.StoreMem(asm.R6, 12, asm.R0, asm.Half),
			asm.StoreMem(asm.R6, 13, asm.R0, asm.Half)}), 2},
		// The proof was of r2, which the call clobbers: r2 after it is
		// not a packet pointer the analysis knows.
		"clobbered by a clock": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.FnKtimeGetNs.Call(), asm.Mov.Reg(asm.R3, asm.R6),
			asm.Mov.Reg(asm.R2, asm.R3), asm.Add.Reg(asm.R2, asm.R0), asm.Sub.Reg(asm.R2, asm.R0)},
			ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		// A bpf-to-bpf call whose callee shrinks the tail.
		"after a call": {append(rangeProg(bound(14), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1),
			asm.Call.Label("shrink"), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 12, asm.Half)),
			asm.Mov.Imm(asm.R2, -8).WithSymbol("shrink"), asm.FnXdpAdjustTail.Call(), asm.Return()), 0},
		// The variable offset of an IPv4 header: data + 14 + ihl*4.
		"variable offset": {rangeProg(bound(15), ld(asm.R6, asm.R2, 14, asm.Byte), asm.Instructions{
			asm.And.Imm(asm.R6, 15), asm.LSh.Imm(asm.R6, 2), asm.Add.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R4, asm.R6),
			asm.Add.Imm(asm.R4, 18), asm.JGT.Reg(asm.R4, asm.R3, "out")}, ld(asm.R5, asm.R6, 16, asm.Half)), 2},
		"variable offset, checked short": {rangeProg(bound(15), ld(asm.R6, asm.R2, 14, asm.Byte), asm.Instructions{
			asm.And.Imm(asm.R6, 15), asm.LSh.Imm(asm.R6, 2), asm.Add.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R4, asm.R6),
			asm.Add.Imm(asm.R4, 17), asm.JGT.Reg(asm.R4, asm.R3, "out")}, ld(asm.R5, asm.R6, 16, asm.Half)), 1},
		// An offset with no bound (a full byte loaded, no mask... then
		// shifted past what the analysis keeps): the check before it
		// proves only the loaded byte.
		"unbounded offset": {rangeProg(bound(15), ld(asm.R6, asm.R2, 14, asm.Byte), asm.Instructions{
			asm.LSh.Imm(asm.R6, 24), asm.Add.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R4, asm.R6),
			asm.Add.Imm(asm.R4, 18), asm.JGT.Reg(asm.R4, asm.R3, "out")}, ld(asm.R5, asm.R6, 16, asm.Half)), 1},
		// Offsets that differ by path (an Ethernet header with or without
		// a VLAN tag) meet in a scalar of known range: the header after
		// them is a variable offset, proven by the compare that follows.
		"offsets meet": {rangeProg(bound(14), vlanOffset(), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Reg(asm.R6, asm.R4), asm.Mov.Reg(asm.R7, asm.R6),
			asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")},
			ld(asm.R5, asm.R6, 1, asm.Byte), ld(asm.R5, asm.R6, 18, asm.Half)), 3},
		"offsets meet, checked short": {rangeProg(bound(14), vlanOffset(), asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Reg(asm.R6, asm.R4), asm.Mov.Reg(asm.R7, asm.R6),
			asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")},
			ld(asm.R5, asm.R6, 1, asm.Byte), ld(asm.R5, asm.R6, 19, asm.Half)), 2},
		// Pointers that differ by path (clang keeps "the next header" as a
		// pointer: 14 or 18 bytes past data) meet in a join base, which the
		// compare after the join proves, as the kernel's verifier proves
		// each path.
		"pointers meet": {rangeProg(bound(14), vlanPointer(asm.R2), asm.Instructions{
			asm.Mov.Reg(asm.R7, asm.R6), asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")},
			ld(asm.R5, asm.R6, 1, asm.Byte), ld(asm.R5, asm.R6, 18, asm.Half)), 3},
		"pointers meet, checked short": {rangeProg(bound(14), vlanPointer(asm.R2), asm.Instructions{
			asm.Mov.Reg(asm.R7, asm.R6), asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")},
			ld(asm.R5, asm.R6, 1, asm.Byte), ld(asm.R5, asm.R6, 19, asm.Half)), 2},
		// Each path proved more than the join's farthest offset: what is
		// left after it holds without another compare (22 - 18 = 4).
		"pointers meet, proved before": {rangeProg(bound(22), vlanPointer(asm.R2),
			ld(asm.R5, asm.R6, 2, asm.Half), ld(asm.R5, asm.R6, 3, asm.Half)), 2},
		// The same, with the path of the shorter offset jumping to the
		// join: the analysis walks the code after the join with that
		// path's pointer before the other path arrives. The instructions
		// after the join then take the joined state as it is (one edge
		// reaches each), instead of meeting it with the first one in a
		// join base of each register, which would lose r7 = r6 + 20.
		"pointers meet after a jump": {rangeProg(bound(14), asm.Instructions{
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Byte), asm.JEq.Imm(asm.R5, 8, "tagged"),
			asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Imm(asm.R6, 14), asm.Ja.Label("joined"),
			asm.Mov.Reg(asm.R6, asm.R2).WithSymbol("tagged"), asm.Add.Imm(asm.R6, 18),
			asm.Mov.Reg(asm.R7, asm.R6).WithSymbol("joined"), asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")},
			ld(asm.R5, asm.R6, 1, asm.Byte), ld(asm.R5, asm.R6, 18, asm.Half)), 3},
		// On one path the register is no packet pointer: nothing joins.
		"pointer meets a scalar": {rangeProg(bound(14), asm.Instructions{
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Byte), asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Imm(asm.R6, 14),
			asm.JNE.Imm(asm.R5, 8, "joined"), asm.Mov.Imm(asm.R6, 18), asm.Mov.Reg(asm.R7, asm.R6).WithSymbol("joined"),
			asm.Add.Imm(asm.R7, 20), asm.JGT.Reg(asm.R7, asm.R3, "out")}, ld(asm.R5, asm.R6, 1, asm.Byte)), 1},
		// A shift by a register of known range (IPv6 extension headers'
		// (len + 1) << 3, or << 2 for AH: parsing_helpers.h): [0, 3] << [0,
		// 3] is [0, 24], so data + [0, 24] + 14 has 2 bytes proven by
		// the compare of data + 40; the frame's bytes give 3 << 3.
		"variable shift":                {rangeProg(bound(40), shiftBy(false), ld(asm.R5, asm.R6, 14, asm.Half)), 3},
		"variable shift in 32 bits":     {rangeProg(bound(40), shiftBy(true), ld(asm.R5, asm.R6, 14, asm.Half)), 3},
		"variable shift, checked short": {rangeProg(bound(40), shiftBy(false), ld(asm.R5, asm.R6, 15, asm.Half)), 2},
		// A count of unknown range (a whole byte): nothing is known of the
		// result, nor of the pointer made from it.
		"shift by a byte": {rangeProg(bound(40), ld(asm.R4, asm.R2, 13, asm.Byte), ld(asm.R6, asm.R2, 14, asm.Byte),
			asm.Instructions{asm.And.Imm(asm.R6, 3), asm.LSh.Reg(asm.R6, asm.R4), asm.Add.Reg(asm.R6, asm.R2)},
			ld(asm.R5, asm.R6, 14, asm.Half)), 2},
		// A variable add keeps what its base proved, less the distance:
		// data + 14 + [0, 7] has 24 - 14 - 7 = 3 bytes proven after it.
		"variable add keeps the proof": {rangeProg(bound(24), ld(asm.R4, asm.R2, 12, asm.Byte), asm.Instructions{
			asm.And.Imm(asm.R4, 7), asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Imm(asm.R6, 14), asm.Add.Reg(asm.R6, asm.R4)},
			ld(asm.R5, asm.R6, 1, asm.Half), ld(asm.R5, asm.R6, 2, asm.Half)), 2},
		// A loop that moves the joined pointer brings back the join base
		// plus a distance: the register is unknown in the loop, and the
		// compare inside proves nothing (the pointer may walk any
		// distance; the kernel's verifier walks the rounds instead).
		"joined pointer walks": {rangeProg(bound(14), vlanPointer(asm.R2), asm.Instructions{
			asm.Mov.Reg(asm.R7, asm.R6).WithSymbol("walk"), asm.Add.Imm(asm.R7, 2), asm.JGT.Reg(asm.R7, asm.R3, "out"),
			asm.LoadMem(asm.R5, asm.R6, 0, asm.Half), asm.Add.Imm(asm.R6, 2), asm.JNE.Imm(asm.R5, 0, "walk")},
			ld(asm.R5, asm.R6, 0, asm.Byte)), 1},
		// A sum growing round a loop widens until it leaves the range the
		// analysis keeps, then is unknown: the analysis settles (the load
		// through data stays proven) and the pointer made from the sum is
		// checked.
		"growing offset": {rangeProg(bound(14), asm.Instructions{
			asm.Mov.Imm(asm.R8, 0), asm.Mov.Imm(asm.R9, 4),
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Byte).WithSymbol("loop"), asm.And.Imm(asm.R5, 3), asm.Add.Reg(asm.R8, asm.R5),
			asm.Mov.Reg(asm.R6, asm.R2), asm.Add.Reg(asm.R6, asm.R8), asm.Mov.Reg(asm.R7, asm.R6),
			asm.Add.Imm(asm.R7, 2), asm.JGT.Reg(asm.R7, asm.R3, "out"), asm.LoadMem(asm.R5, asm.R6, 1, asm.Byte),
			asm.Sub.Imm(asm.R9, 1), asm.JNE.Imm(asm.R9, 0, "loop")}), 1},
		// A loop walking the packet: the pointer differs per iteration, so
		// the paths into the loop meet with nothing known of it.
		"loop": {rangeProg(asm.Instructions{
			asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("loop"), asm.Add.Imm(asm.R4, 2), asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R5, asm.R2, 0, asm.Half), asm.Add.Imm(asm.R2, 2), asm.JNE.Imm(asm.R5, 0, "loop"),
			asm.LoadMem(asm.R5, asm.R2, 2, asm.Half)}), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pi, pj := rangePair(t, tc.insns, tc.proven) // jit_meta_test.go
			ri, rj := NewRunner(0), NewRunner(0)
			full := udpFrame(9)
			full[14] = 0x4f // ihl 15: the variable offsets reach 74
			for l := 0; l <= len(full); l++ {
				pkt := full[:l]
				guardedDiff(t, ri, rj, pi, pj, pkt, nil) // jit_meta_test.go
				// A bare run: the JIT's program runs in the interpreter
				// when it has proven accesses, with the same result.
				mi, mj := append([]byte(nil), pkt...), append([]byte(nil), pkt...)
				gi, ei := ri.RunRaw(pi, mi)
				gj, ej := rj.RunRaw(pj, mj)
				if gi != gj || errString(ei) != errString(ej) || string(mi) != string(mj) {
					t.Fatalf("%d-byte raw run: interpreter %#x (%v), JIT %#x (%v)", l, gi, ei, gj, ej)
				}
			}
		})
	}
}

// TestJITPacketRangesSeeTheFrame: a proven load reads the frame's bytes
// at its data offset, with headroom and metadata in front and data moved
// by the frame's offsets (not a fixed buffer position).
func TestJITPacketRangesSeeTheFrame(t *testing.T) {
	needJIT(t)
	insns := rangeProg(bound(4), ld(asm.R0, asm.R2, 0, asm.Word), asm.Instructions{asm.Return()})
	p := loadRange(t, insns, EngineJIT)
	if p.jit.Load().proven != 1 {
		t.Fatal("the load is not proven")
	}
	r := NewRunner(0)
	buf := make([]byte, 512)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, data := range []int{0, 1, 100, 300} {
		f := &Frame{Buf: buf, DataMeta: max(0, data-8), Data: data, DataEnd: data + 4}
		v, ok := r.RunFrame(p, f)
		want := uint32(byte(data)) | uint32(byte(data+1))<<8 | uint32(byte(data+2))<<16 | uint32(byte(data+3))<<24
		if !ok || v != want {
			t.Errorf("data at %d: %#x %v (%v), want %#x", data, v, ok, r.Fault(), want)
		}
	}
}

// loadGlobals loads insns with a 16-byte .data and a 4-byte read-only
// .rodata for engine e.
func loadGlobals(t *testing.T, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			".data": {Name: ".data", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1,
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}}},
			".rodata": {Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1,
				Flags: uint32(maps.FlagRdonlyProg), Contents: []ebpf.MapKV{{Key: uint32(0), Value: []byte{2, 1, 2, 3}}}},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"gl": {Name: "gl", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("gl")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

func data(dst asm.Register, off uint32) asm.Instruction {
	return asm.LoadMapValue(dst, 0, off).WithReference(".data")
}

// TestJITGlobalRanges: accesses to global data at constant offsets, and
// through an index of known range, are proven against the region's fixed
// bounds (the writable part for stores); those past the end, stores to
// .rodata and unbounded indexes stay checked and fault as in the
// interpreter.
func TestJITGlobalRanges(t *testing.T) {
	needJIT(t)
	ret := asm.Instructions{asm.And.Imm(asm.R0, 0xff), asm.Return()}
	cases := map[string]struct {
		insns  asm.Instructions
		proven int
	}{
		"counter": {append(asm.Instructions{data(asm.R1, 8), asm.LoadMem(asm.R0, asm.R1, 0, asm.DWord),
			asm.Add.Imm(asm.R0, 1), asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord)}, ret...), 2},
		"last bytes":   {append(asm.Instructions{data(asm.R1, 8), asm.LoadMem(asm.R0, asm.R1, 7, asm.Byte)}, ret...), 1},
		"past the end": {append(asm.Instructions{data(asm.R1, 8), asm.LoadMem(asm.R0, asm.R1, 5, asm.Word)}, ret...), 0},
		"rodata store": {append(asm.Instructions{asm.LoadMapValue(asm.R1, 0, 0).WithReference(".rodata"),
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Byte), asm.StoreImm(asm.R1, 0, 9, asm.Byte)}, ret...), 1},
		// A table indexed by a loaded byte & 3 (xdp_globals' tos_verdict).
		"indexed": {append(asm.Instructions{asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
			asm.Mov.Imm(asm.R0, 0), asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 1), asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R4, 3),
			asm.LoadMapValue(asm.R5, 0, 0).WithReference(".rodata"), asm.Add.Reg(asm.R5, asm.R4),
			asm.LoadMem(asm.R0, asm.R5, 0, asm.Byte), asm.Return().WithSymbol("out")}, ret...), 2},
		"indexed past the end": {append(asm.Instructions{asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
			asm.Mov.Imm(asm.R0, 0), asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 1), asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R4, 7),
			asm.LoadMapValue(asm.R5, 0, 0).WithReference(".rodata"), asm.Add.Reg(asm.R5, asm.R4),
			asm.LoadMem(asm.R0, asm.R5, 0, asm.Byte), asm.Return().WithSymbol("out")}, ret...), 1},
		// clang's merged tail of two counters (xdp_vlan's pushed++ and
		// popped++): r1 holds one lddw or the other where the paths meet.
		"merged counters":     {mergedGlobals(data(asm.R1, 0), data(asm.R1, 8), 0, asm.DWord), 3},
		"merged, a byte over": {mergedGlobals(data(asm.R1, 0), data(asm.R1, 9), 0, asm.DWord), 1},
		"merged, below":       {mergedGlobals(data(asm.R1, 0), data(asm.R1, 8), -1, asm.Byte), 1},
		"merged regions": {mergedGlobals(data(asm.R1, 0),
			asm.LoadMapValue(asm.R1, 0, 0).WithReference(".rodata"), 0, asm.Byte), 1},
		// A pointer walking round a loop meets itself at ever larger
		// offsets: the range widens until it gives up, and the walk past
		// the end faults as in the interpreter.
		"walk": {append(asm.Instructions{data(asm.R1, 0), asm.Mov.Imm(asm.R2, 0),
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Byte).WithSymbol("loop"), asm.Add.Imm(asm.R1, 1), asm.Add.Imm(asm.R2, 1),
			asm.JLT.Imm(asm.R2, 20, "loop")}, ret...), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ci, pi := loadGlobals(t, tc.insns, EngineInterp)
			cj, pj := loadGlobals(t, tc.insns, EngineJIT)
			if n := pj.jit.Load().proven; n != tc.proven {
				t.Errorf("%d accesses proven, want %d\n%s", n, tc.proven, pj.Disasm())
			}
			ri, rj := NewRunner(0), NewRunner(0)
			for b := 0; b < 8; b++ {
				pkt := []byte{byte(b), 0, 0, 0}
				vi, oki := ri.RunFrame(pi, newFrame(pkt))
				vj, okj := rj.RunFrame(pj, newFrame(pkt))
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("byte %d: interpreter %#x %v (%v), JIT %#x %v (%v)", b, vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				for _, m := range []string{".data", ".rodata"} {
					mi, _ := ci.Map(m)
					mj, _ := cj.Map(m)
					if string(mi.(*maps.Array).Bytes()) != string(mj.(*maps.Array).Bytes()) {
						t.Fatalf("byte %d: %s differs", b, m)
					}
				}
			}
		})
	}
}

// mergedGlobals is "r1 = a when the packet's first byte is 0, else b;
// r0 = *(size *)(r1 + off); r0 += 1; *(size *)(r1 + off) = r0", the
// packet byte's load proven.
func mergedGlobals(a, b asm.Instruction, off int16, size asm.Size) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Imm(asm.R0, 0), asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 1), asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), asm.JEq.Imm(asm.R4, 0, "first"),
		b, asm.Ja.Label("join"),
		a.WithSymbol("first"),
		asm.LoadMem(asm.R0, asm.R1, off, size).WithSymbol("join"), asm.Add.Imm(asm.R0, 1),
		asm.StoreMem(asm.R1, off, asm.R0, size),
		asm.And.Imm(asm.R0, 0xff), asm.Return().WithSymbol("out"),
	}
}
