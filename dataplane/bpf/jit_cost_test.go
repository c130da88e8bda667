//go:build linux && (amd64 || arm64)

package bpf

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Tests of the per-frame savings of the native array lookup (jit_cost.go):
// the key addressed from r10 without a check (stackKeyOff) and the first
// value access using what the lookup left (lookupFeeds, lookupFresh, and
// on amd64 the re-entry stub after a slow path at the call).

// TestStackKeyOff: the offset from r10 is found through additions and
// conditional jumps, and nothing across a jump target, another write of
// the register, a call or a legacy packet load.
func TestStackKeyOff(t *testing.T) {
	mov := insn{op: opMov64X, dst: 2, src: 10}
	add := func(k int64) insn { return insn{op: opAdd64K, dst: 2, imm: k} }
	ld := insn{op: opLdMap, dst: 1, imm: 0}
	call := insn{op: opCall, imm: int64(helperMapLookupElem)}
	jeq := insn{op: opJEQ64K, dst: 3, imm: 1, off: 5}
	other := insn{op: opMov64K, dst: 3, imm: 1}
	for _, tc := range []struct {
		name   string
		code   []insn
		target int // a jump target (0: none)
		off    int32
		ok     bool
	}{
		{"r10-4", []insn{mov, add(-4), ld, call}, 0, -4, true},
		{"two adds and a jump", []insn{mov, add(-8), jeq, add(4), other, ld, call}, 0, -4, true},
		{"frame bottom", []insn{mov, add(-512), ld, call}, 0, -512, true},
		{"r2 = r10", []insn{mov, ld, call}, 0, 0, true},
		{"jump target", []insn{mov, add(-4), ld, call}, 2, 0, false},
		{"other write", []insn{mov, add(-4), {op: opSub64K, dst: 2, imm: 4}, ld, call}, 0, 0, false},
		{"copy of r1", []insn{{op: opMov64X, dst: 2, src: 1}, add(-4), ld, call}, 0, 0, false},
		{"call between", []insn{mov, add(-4), call, ld, call}, 0, 0, false},
		{"legacy load between", []insn{mov, add(-4), {op: opLdAbsW}, ld, call}, 0, 0, false},
		{"far", []insn{mov, add(-1 << 30), add(-1 << 30), add(-1 << 30), ld, call}, 0, 0, false},
		{"no mov", []insn{add(-4), ld, call}, 0, 0, false},
		{"lddw between", []insn{mov, add(-4), ld, {op: opNop}, call}, 0, -4, true},
	} {
		targets := make([]bool, len(tc.code)+1)
		if tc.target != 0 {
			targets[tc.target] = true
		}
		off, ok := stackKeyOff(tc.code, targets, len(tc.code)-1, 2)
		if ok != tc.ok || ok && off != tc.off {
			t.Errorf("%s: %d %v, want %d %v", tc.name, off, ok, tc.off, tc.ok)
		}
	}
}

// TestLookupFeeds: the lookup feeds the first access through its result
// (or a copy) in a straight line, not one through another register, past
// a store, or across a jump target; lookupFresh finds the same call back.
func TestLookupFeeds(t *testing.T) {
	call := insn{op: opCall, imm: int64(helperMapLookupElem)}
	jeq := insn{op: opJEQ64K, dst: 0, imm: 0, off: 9}
	ld0 := insn{op: opLdxW, dst: 3, src: 0}
	for _, tc := range []struct {
		name   string
		code   []insn // the call at 0, the access last
		target int
		feeds  bool
	}{
		{"load after NULL check", []insn{call, jeq, ld0}, 0, true},
		{"load through a copy", []insn{call, {op: opMov64X, dst: 6, src: 0}, {op: opLdxB, dst: 3, src: 6}}, 0, true},
		{"store", []insn{call, jeq, {op: opStW, dst: 0, imm: 1}}, 0, true},
		{"other register", []insn{call, jeq, {op: opLdxW, dst: 3, src: 6}}, 0, false},
		{"moved pointer", []insn{call, {op: opAdd64K, dst: 0, imm: 4}, ld0}, 0, false},
		{"jump target", []insn{call, jeq, ld0}, 2, false},
		{"shift by a register", []insn{call, {op: opLsh64X, dst: 4, src: 5}, ld0}, 0, false},
		// An lddw's second slot (and le64) is opNop, whose row names r0:
		// it writes no register (writesDst).
		{"past an lddw", []insn{call, jeq, {op: opLdMapValue, dst: 1, imm: 7 << 32}, {op: opNop}, ld0}, 0, true},
		{"past le64 of r0", []insn{call, jeq, {op: opNop}, ld0}, 0, true},
		{"lddw into r0", []insn{call, jeq, {op: opLdImm64, dst: 0, imm: 1}, {op: opNop}, ld0}, 0, false},
	} {
		targets := make([]bool, len(tc.code)+1)
		if tc.target != 0 {
			targets[tc.target] = true
		}
		if got := lookupFeeds(tc.code, targets, 0); got != tc.feeds {
			t.Errorf("%s: feeds %v, want %v", tc.name, got, tc.feeds)
		}
		fresh := lookupFresh(tc.code, targets, len(tc.code)-1, func(q int) bool { return q == 0 })
		if want := tc.feeds || tc.name == "other register" || tc.name == "moved pointer" || tc.name == "lddw into r0"; fresh != want {
			t.Errorf("%s: fresh %v, want %v", tc.name, fresh, want)
		}
	}
}

// costMaps are valueCollection's maps, set as it sets them.
func costProg(body ...asm.Instructions) asm.Instructions {
	var out asm.Instructions
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}

// TestJITLookupEdges runs, in both engines, lookups whose key the JIT
// addresses from r10 without a check and whose first value access uses
// what the lookup left: keys at max_entries-1 and max_entries (NULL, then
// an access that must fault), per-CPU and read-only values, the value's
// last byte and one past it, the key at the frame's bottom, and a loop of
// lookups that outgrows the region table's capacity, so that the lookup
// leaves for Go at the call and native code resumes after it.
func TestJITLookupEdges(t *testing.T) {
	needJIT(t)
	key := func(k int32, at int16) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.R10, at, int64(k), asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, int32(at)),
		}
	}
	look := func(m string) asm.Instructions {
		return asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference(m), asm.FnMapLookupElem.Call()}
	}
	load := func(off int16, sz asm.Size) asm.Instructions {
		return asm.Instructions{asm.LoadMem(asm.R0, asm.R0, off, sz), asm.Return()}
	}
	cases := map[string]asm.Instructions{
		"last key":              costProg(key(3, -4), look("arr"), load(8, asm.Word)),
		"key = max_entries":     costProg(key(4, -4), look("arr"), load(0, asm.Byte)),
		"per-cpu last byte":     costProg(key(3, -4), look("pcpu"), load(7, asm.Byte)),
		"per-cpu one past":      costProg(key(3, -4), look("pcpu"), load(8, asm.Byte)),
		"per-cpu max_entries":   costProg(key(4, -4), look("pcpu"), load(0, asm.DWord)),
		"last byte":             costProg(key(2, -4), look("arr"), load(11, asm.Byte)),
		"one past the end":      costProg(key(2, -4), look("arr"), load(9, asm.Word)),
		"frame bottom key":      costProg(key(1, -512), look("arr"), load(4, asm.Word)),
		"store to read-only":    costProg(key(1, -4), look("ro"), asm.Instructions{asm.StoreImm(asm.R0, 0, 1, asm.Byte), asm.Mov.Imm(asm.R0, 2), asm.Return()}),
		"store last byte":       costProg(key(1, -4), look("arr"), asm.Instructions{asm.StoreImm(asm.R0, 11, 9, asm.Byte), asm.LoadMem(asm.R0, asm.R0, 8, asm.Word), asm.Return()}),
		"NULL checked then arr": costProg(key(5, -4), look("arr"), asm.Instructions{asm.JEq.Imm(asm.R0, 0, "n"), asm.LoadMem(asm.R0, asm.R0, 0, asm.Byte), asm.Return(), asm.Mov.Imm(asm.R0, 7).WithSymbol("n"), asm.Return()}),
		// 300 rounds of lookups of 8 values in turn (4 of arr, 4 of
		// ro), each read: never in the search window, every lookup adds
		// a region, and the table outgrows its capacity (64) in one run,
		// so that lookups leave for Go at the call and native code
		// resumes after it.
		"table outgrows capacity": costProg(asm.Instructions{asm.Mov.Imm(asm.R9, 0), asm.Mov.Imm(asm.R7, 0),
			asm.Mov.Reg(asm.R6, asm.R7).WithSymbol("loop"), asm.And.Imm(asm.R6, 3),
			asm.StoreMem(asm.R10, -4, asm.R6, asm.Word), asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4)},
			look("arr"), asm.Instructions{
				asm.LoadMem(asm.R3, asm.R0, 8, asm.Word), asm.Add.Reg(asm.R9, asm.R3),
				asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4)},
			look("ro"), asm.Instructions{
				asm.LoadMem(asm.R3, asm.R0, 9, asm.Half), asm.Add.Reg(asm.R9, asm.R3),
				asm.Add.Imm(asm.R7, 1), asm.JLT.Imm(asm.R7, 300, "loop"),
				asm.Mov.Reg(asm.R0, asm.R9), asm.Return()}),
	}
	for name, insns := range cases {
		t.Run(name, func(t *testing.T) { valueDiff(t, insns) })
	}
}

// valueDiff runs insns three times in each engine on valueCollection's
// maps and requires the same results, faults and map contents.
func valueDiff(t *testing.T, insns asm.Instructions) {
	ci, pi := valueCollection(t, insns, EngineInterp)
	cj, pj := valueCollection(t, insns, EngineJIT)
	ri, rj := NewRunner(0), NewRunner(0)
	for run := 0; run < 3; run++ {
		vi, oki := ri.RunFrame(pi, newFrame(udpFrame(9)))
		vj, okj := rj.RunFrame(pj, newFrame(udpFrame(9)))
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("run %d: interpreter %#x %v (%v), JIT %#x %v (%v)", run, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		for _, m := range []string{"arr", "ro", "pcpu"} {
			for k := uint32(0); k < 4; k++ {
				if a, b := valueOf(t, ci, m, k), valueOf(t, cj, m, k); string(a) != string(b) {
					t.Fatalf("run %d: %s[%d] %x, JIT %x", run, m, k, a, b)
				}
			}
		}
		if run == 0 {
			t.Logf("%#x %v %v", vj, okj, rj.Fault())
		}
	}
}

// TestJITLookupResume enters the native code right after an array lookup
// (where Go resumes it when the lookup ran in the slow path) with r0 set
// as no native lookup leaves it: NULL, a stack or context pointer, a
// region number past the table's end. The access through r0 must leave
// for the slow path (where the interpreter faults) rather than read; r0 a
// lookup's own pointer must read the value.
func TestJITLookupResume(t *testing.T) {
	needJIT(t)
	insns := asm.Instructions{
		asm.StoreImm(asm.R10, -4, 2, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
		asm.FnMapLookupElem.Call(),
		asm.LoadMem(asm.R0, asm.R0, 4, asm.Word),
		asm.Return(),
	}
	_, p := valueCollection(t, insns, EngineJIT)
	j, call := nativeCall(t, p)
	r := NewRunner(0)
	v, ok := r.RunFrame(p, newFrame(udpFrame(9)))
	if !ok || v != 0x27262524 {
		t.Fatalf("run: %#x %v (%v)", v, ok, r.Fault())
	}
	for _, tc := range []struct {
		name string
		r0   uint64
		slow bool
	}{
		{"NULL", 0, true},
		{"stack", regionStack<<32 | (stackSize - 8), true},
		{"context", regionCtx << 32, true},
		{"past the table", uint64(len(r.regions)+3) << 32, true},
		// amd64's stub checks the offset (arm64 resumes through the full
		// check, which relies on valueOrigin as everywhere else: not run).
		{"at an offset", uint64(len(r.regions)-1)<<32 | 4, true},
		{"the lookup's", 1, false}, // set below: the entry the run left
	} {
		if tc.name == "at an offset" && runtime.GOARCH != "amd64" {
			continue
		}
		f := newFrame(udpFrame(9))
		r.bind(p.coll)
		n := len(r.regions)
		r.RunFrame(p, f) // leaves the value's entry at n
		r.regions = r.regions[:n+1]
		reg := directEntry(r, p, f) // jit_plain_test.go
		reg[0], reg[10] = tc.r0, regionStack<<32|stackSize
		if tc.r0 == 1 {
			reg[0] = uint64(n) << 32
		}
		e := jitRun(r, reg, j.addr(call+1))
		slow := e&0xff == jitExitSlow && int(e>>8) == call+1
		if slow != tc.slow {
			t.Errorf("%s: exit %#x (slow at %d: %v, want %v)", tc.name, e, call+1, slow, tc.slow)
		}
		if !tc.slow && reg[0] != 0x27262524 {
			t.Errorf("%s: r0 %#x, want 0x27262524", tc.name, reg[0])
		}
	}
}

// TestJITCtxReuse: a context load right after another uses the frame that
// one proved (ctxAfterCtx), and no other does (a jump target in between,
// a helper call, another instruction); each program, which returns the
// offsets it loaded, runs against the interpreter as an XDP program (also
// across bpf_xdp_adjust_head, after which the loads must see the new
// offsets) and as a raw program, where there is no frame: the first load
// leaves for Go, which re-enters the next one through its stub.
func TestJITCtxReuse(t *testing.T) {
	data := func(dst, ctx asm.Register) asm.Instruction { return asm.LoadMem(dst, ctx, 0, asm.Word) }
	end := func(dst, ctx asm.Register) asm.Instruction { return asm.LoadMem(dst, ctx, 4, asm.Word) }
	meta := func(dst, ctx asm.Register) asm.Instruction { return asm.LoadMem(dst, ctx, 8, asm.Word) }
	// r0 = (end-data) + (data-meta)<<8 + r9<<16
	fold := asm.Instructions{
		asm.Mov.Reg(asm.R0, asm.R3), asm.Sub.Reg(asm.R0, asm.R2),
		asm.Sub.Reg(asm.R2, asm.R4), asm.LSh.Imm(asm.R2, 8), asm.Add.Reg(asm.R0, asm.R2),
		asm.LSh.Imm(asm.R9, 16), asm.Add.Reg(asm.R0, asm.R9), asm.Return(),
	}
	adjust := func(n int32) asm.Instructions {
		return asm.Instructions{asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Imm(asm.R2, n), asm.FnXdpAdjustHead.Call(),
			asm.Mov.Reg(asm.R9, asm.R0), asm.Mov.Reg(asm.R1, asm.R6)}
	}
	cases := []struct {
		name  string
		body  asm.Instructions
		reuse int
	}{
		{"three in a row", asm.Instructions{end(asm.R3, asm.R1), data(asm.R2, asm.R1), meta(asm.R4, asm.R1)}, 2},
		{"another instruction between", asm.Instructions{end(asm.R3, asm.R1), asm.Mov.Imm(asm.R5, 1),
			data(asm.R2, asm.R1), meta(asm.R4, asm.R1)}, 1},
		{"jump target", asm.Instructions{end(asm.R3, asm.R1), asm.JEq.Imm(asm.R3, 0, "t"),
			data(asm.R2, asm.R1).WithSymbol("t"), meta(asm.R4, asm.R1)}, 1},
		{"after adjust_head", append(append(asm.Instructions{end(asm.R3, asm.R1), data(asm.R2, asm.R1)}, adjust(-4)...),
			end(asm.R3, asm.R1), data(asm.R2, asm.R1), meta(asm.R4, asm.R1)), 3},
		{"after a failed adjust_head", append(adjust(-4096), end(asm.R3, asm.R1), data(asm.R2, asm.R1), meta(asm.R4, asm.R1)), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			insns := append(asm.Instructions{asm.Mov.Imm(asm.R9, 0), asm.Mov.Reg(asm.R6, asm.R1)}, tc.body...)
			insns = append(insns, fold...)
			pi := loadRange(t, insns, EngineInterp)
			plain, funcs := plainOf(t, insns)
			targets := jumpTargets(plain, funcs)
			got := 0
			for pc, in := range plain {
				if opTable[in.op].form == formCtx && ctxAfterCtx(plain, targets, pc) {
					got++
				}
			}
			if got != tc.reuse {
				t.Fatalf("%d context loads reuse the frame, want %d\n%s", got, tc.reuse, pi.Disasm())
			}
			if !jitArch {
				return
			}
			pj := loadRange(t, insns, EngineJIT)
			for _, n := range []int{0, 14, 60} {
				runBoth(t, pi, pj, make([]byte, n))
			}
		})
	}
}

// TestJITAtomicValue: atomic operations through an array lookup's result
// (the value check of valueAccess) give the interpreter's results and
// faults: in bounds, across the value's end, misaligned, on a read-only
// value, on NULL, after a load that left the entry, and fetching.
func TestJITAtomicValue(t *testing.T) {
	needJIT(t)
	look := func(m string, k int64) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.R10, -4, k, asm.Word), asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m), asm.FnMapLookupElem.Call(),
			asm.Mov.Imm(asm.R1, 5),
		}
	}
	ret := asm.Instructions{asm.LoadMem(asm.R0, asm.R0, 8, asm.Word), asm.Return()}
	add := func(off int16, sz asm.Size) asm.Instruction { return asm.AddAtomic.Mem(asm.R0, asm.R1, sz, off) }
	cases := map[string]asm.Instructions{
		"add32 in bounds":  costProg(look("arr", 1), asm.Instructions{add(8, asm.Word)}, ret),
		"add64 past end":   costProg(look("arr", 1), asm.Instructions{add(8, asm.DWord)}, ret),
		"add32 misaligned": costProg(look("arr", 1), asm.Instructions{add(6, asm.Word)}, ret),
		"add32 read-only":  costProg(look("ro", 1), asm.Instructions{add(8, asm.Word)}, ret),
		"add64 NULL":       costProg(look("arr", 9), asm.Instructions{add(0, asm.DWord)}, ret),
		"add64 per-cpu":    costProg(look("pcpu", 3), asm.Instructions{add(0, asm.DWord), asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord), asm.Return()}),
		"after a load": costProg(look("arr", 2), asm.Instructions{asm.LoadMem(asm.R3, asm.R0, 0, asm.Byte),
			add(8, asm.Word)}, ret),
		"fetch add": costProg(look("arr", 3), asm.Instructions{
			asm.FetchAdd.Mem(asm.R0, asm.R1, asm.Word, 8),
			asm.Mov.Reg(asm.R0, asm.R1), asm.Return()}),
	}
	for name, insns := range cases {
		t.Run(name, func(t *testing.T) { valueDiff(t, insns) })
	}
}
