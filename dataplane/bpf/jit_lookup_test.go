package bpf

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native bpf_map_lookup_elem on arrays (jitArray): the same
// pointers (region numbers included), NULLs and faults as the
// interpreter's helper, run after run on one Runner, and the checks that
// send a lookup the native code cannot vouch for back to Go.

// lookupMaps are the maps of the lookup tests' programs.
var lookupMaps = map[string]*ebpf.MapSpec{
	"arr":  {Type: ebpf.Array, KeySize: 4, ValueSize: 12, MaxEntries: 8},
	"pcpu": {Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	"ro":   {Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: uint32(maps.FlagRdonlyProg)},
	"hash": {Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
}

// loadLookup loads insns with fresh lookupMaps for engine e.
func loadLookup(t testing.TB, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{
		"lk": {Name: "lk", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for n, m := range lookupMaps {
		m := *m
		m.Name = n
		spec.Maps[n] = &m
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2, InsnBudget: 5_000_000, Engine: e})
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

// lookupKey is the lookup of map m with the u32 key at r10-4 (set from
// rKey), leaving the result in r0.
func lookupKey(m string, rKey asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.StoreMem(asm.RFP, -4, rKey, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.FnMapLookupElem.Call(),
	}
}

// keep folds r0's region number (r0 >> 32, 0 for NULL) into r9 one byte
// up, so that the run's raw return value shows every pointer it got.
func keep() asm.Instructions {
	return asm.Instructions{
		asm.LSh.Imm(asm.R9, 8),
		asm.RSh.Imm(asm.R0, 32),
		asm.Or.Reg(asm.R9, asm.R0),
	}
}

func prog(parts ...asm.Instructions) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0)}
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
}

func movKey(k int32) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R6, k)} }

// TestJITArrayLookup runs lookup programs in both engines, three runs each
// on one Runner per engine (the second and third reuse the regions the
// first left past the table's end), and compares raw return values,
// faults and map contents; it also requires the JIT to have compiled the
// array lookups natively.
func TestJITArrayLookup(t *testing.T) {
	needJIT(t)
	cases := map[string]struct {
		insns  asm.Instructions
		cpu    int
		native int // array lookups the JIT must compile natively
		elided int // of them, those whose region is left out (jit_elide.go)
	}{
		// key 0: the static region of the array's first value; 1 and 2
		// new regions; 1 again the region of the first lookup of 1.
		"regions": {insns: prog(movKey(0), lookupKey("arr", asm.R6), keep(),
			movKey(1), lookupKey("arr", asm.R6), keep(),
			movKey(2), lookupKey("arr", asm.R6), keep(),
			movKey(1), lookupKey("arr", asm.R6), keep()), native: 4},
		"out of range": {insns: prog(movKey(8), lookupKey("arr", asm.R6), keep(),
			movKey(-1), lookupKey("arr", asm.R6), keep(), movKey(7), lookupKey("arr", asm.R6), keep()), native: 3},
		"per-cpu": {insns: prog(movKey(3), lookupKey("pcpu", asm.R6), keep(),
			movKey(4), lookupKey("pcpu", asm.R6), keep()), native: 2},
		"per-cpu, cpu out of range": {insns: prog(movKey(3), lookupKey("pcpu", asm.R6), keep()), cpu: 5, native: 1},
		// The hash lookup is native too (jit_amd64_hash.go,
		// jit_arm64_hash.go).
		"hash and array": {insns: prog(movKey(1), lookupKey("hash", asm.R6), keep(),
			movKey(1), lookupKey("arr", asm.R6), keep()), native: 1 + nativeHashArch},
		// Writes through the values: the read-only one faults at its store.
		"write": {insns: prog(movKey(2), lookupKey("arr", asm.R6),
			asm.Instructions{asm.JEq.Imm(asm.R0, 0, "skip"), asm.StoreImm(asm.R0, 8, 0x55, asm.Word),
				asm.LoadMem(asm.R9, asm.R0, 8, asm.Word), asm.Mov.Imm(asm.R6, 0).WithSymbol("skip")}), native: 1, elided: elideArch},
		"read-only": {insns: prog(movKey(1), lookupKey("ro", asm.R6), keep(),
			movKey(1), lookupKey("ro", asm.R6), asm.Instructions{
				asm.JEq.Imm(asm.R0, 0, "skip"), asm.LoadMem(asm.R9, asm.R0, 0, asm.Word),
				asm.StoreImm(asm.R0, 0, 1, asm.Word), asm.Mov.Imm(asm.R6, 0).WithSymbol("skip")}), native: 2},
		"value bounds": {insns: prog(movKey(3), lookupKey("arr", asm.R6),
			asm.Instructions{asm.LoadMem(asm.R9, asm.R0, 9, asm.Word)}), native: 1},
		// The key read from the packet (another region than the stack
		// guessed), and from no region at all.
		"key in packet": {insns: prog(asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.FnMapLookupElem.Call()}, keep()), native: 1},
		"key not a pointer": {insns: prog(asm.Instructions{
			asm.Mov.Imm(asm.R2, 16),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.FnMapLookupElem.Call()}, keep()), native: 1},
		// r1 set on two paths: not the straight line the JIT looks for.
		"handle on two paths": {insns: prog(asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference("hash"),
			asm.Mov.Imm(asm.R6, 1), asm.StoreMem(asm.RFP, -4, asm.R6, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
			asm.JEq.Imm(asm.R9, 1, "call"),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.FnMapLookupElem.Call().WithSymbol("call")}, keep()), native: 0},
		// 8 values in turn: never among the last 4 regions, so every
		// lookup adds one until the table is full (a fault).
		"table full": {insns: prog(asm.Instructions{
			asm.Mov.Imm(asm.R7, 0),
			asm.Mov.Reg(asm.R6, asm.R7).WithSymbol("loop"), asm.And.Imm(asm.R6, 7)},
			lookupKey("arr", asm.R6), asm.Instructions{
				asm.Add.Imm(asm.R7, 1),
				asm.JLT.Imm(asm.R7, maxRegions+10, "loop")}), native: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ci, pi := loadLookup(t, tc.insns, EngineInterp)
			cj, pj := loadLookup(t, tc.insns, EngineJIT)
			if n := pj.jit.Load().native; n != tc.native {
				t.Errorf("%d lookups compiled natively, want %d", n, tc.native)
			}
			ri, rj := NewRunner(tc.cpu), NewRunner(tc.cpu)
			for run := 0; run < 3; run++ {
				fi, fj := newFrame(udpFrame(9)), newFrame(udpFrame(9))
				vi, oki := ri.RunFrame(pi, fi)
				vj, okj := rj.RunFrame(pj, fj)
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("run %d: interpreter %#x %v (%v), JIT %#x %v (%v)", run, vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				if len(ri.regions) != len(rj.regions)+tc.elided {
					t.Fatalf("run %d: region tables of %d and %d entries", run, len(ri.regions), len(rj.regions))
				}
				if mi, mj := lookupBytes(t, ci), lookupBytes(t, cj); !bytes.Equal(mi, mj) {
					t.Fatalf("run %d: maps differ\ninterp %x\njit    %x", run, mi, mj)
				}
				if run == 0 {
					t.Logf("%#x %v %v", vj, okj, rj.Fault())
				}
			}
		})
	}
}

// lookupBytes dumps the arrays of c.
func lookupBytes(t *testing.T, c *Collection) []byte {
	var out []byte
	for _, n := range []string{"arr", "ro"} {
		m, err := c.Map(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.(*maps.Array).Bytes()...)
	}
	return out
}

// The checks of r1 against the handle and of Runner.coll that native
// lookups once made cannot fail (mapChecksProof in jit_first.go):
// TestJITMapChecksUnreachable covers that.

// TestMapAt: the straight-line analysis finds the map of a lddw right
// before the call, and nothing across a jump target, a write of r1 or a
// call.
func TestMapAt(t *testing.T) {
	ld := insn{op: opLdMap, dst: 1, imm: 3}
	nop := insn{op: opNop}
	mov2 := insn{op: opMov64K, dst: 2, imm: 1}
	call := insn{op: opCall, imm: int64(helperMapLookupElem)}
	for _, tc := range []struct {
		name   string
		plain  []insn
		target int // a jump target, or -1
		ok     bool
	}{
		{"lddw, call", []insn{ld, nop, call}, -1, true},
		{"key set between", []insn{ld, nop, mov2, mov2, call}, -1, true},
		{"r1 written", []insn{ld, nop, {op: opMov64K, dst: 1, imm: 5}, call}, -1, false},
		{"r1 loaded", []insn{ld, nop, {op: opLdxDW, dst: 1, src: 10, off: -8}, call}, -1, false},
		{"call between", []insn{ld, nop, call, call}, -1, false},
		{"target between", []insn{ld, nop, mov2, call}, 2, false},
		{"call is a target", []insn{ld, nop, call}, 2, false},
		{"atomic between", []insn{ld, nop, {op: opAtomic64, dst: 10, src: 1, imm: atomicXchg}, call}, -1, false},
		{"no lddw", []insn{mov2, call}, -1, false},
	} {
		targets := make([]bool, len(tc.plain)+1)
		if tc.target >= 0 {
			targets[tc.target] = true
		}
		k, ok := mapAt(tc.plain, targets, len(tc.plain)-1)
		if ok != tc.ok || ok && k != 3 {
			t.Errorf("%s: %d %v, want %v", tc.name, k, ok, tc.ok)
		}
	}
}
