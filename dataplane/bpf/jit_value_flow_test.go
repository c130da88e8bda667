//go:build linux && (amd64 || arm64)

package bpf

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// flowProg looks key up in m, keeps the result in r6 and reaches an access
// through r6 (at off, of size, a load or a store then a load of byte 0)
// the way shape says, across a helper call (get_smp_processor_id, which
// returns 0 here) and, in most shapes, a join:
//   - "checked": if r6 == 0 goto null, the helper, a branch that joins;
//   - "jne": if r6 != 0 goto ok (the non-NULL way is the jump);
//   - "unchecked": no NULL check at all;
//   - "null joins": the NULL check jumps to the access (NULL on one way);
//   - "null jumps", "jne falls": only a NULL result reaches the access,
//     through the jump of `== 0` or the fall-through of `!= 0`;
//   - "overwritten": r6 = r10-16 on the way the run takes, then a join.
//
// A NULL result (key out of range) that reaches the access faults in both
// engines; the native code may leave out the region number's checks only
// where r6 is the non-NULL result on every path (valueFlow).
func flowProg(m string, key int32, off int16, size asm.Size, store bool, shape string) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreImm(asm.R10, -4, int64(key), asm.Word),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.FnMapLookupElem.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
	}
	switch shape {
	case "checked":
		insns = append(insns, asm.JEq.Imm(asm.R6, 0, "null"), asm.FnGetSmpProcessorId.Call(),
			asm.JGT.Imm(asm.R0, 100, "access"), asm.Mov.Imm(asm.R9, 5))
	case "jne":
		insns = append(insns, asm.JNE.Imm(asm.R6, 0, "ok"), asm.Ja.Label("null"),
			asm.FnGetSmpProcessorId.Call().WithSymbol("ok"))
	case "unchecked":
		insns = append(insns, asm.FnGetSmpProcessorId.Call())
	case "null joins":
		insns = append(insns, asm.FnGetSmpProcessorId.Call(), asm.JEq.Imm(asm.R6, 0, "access"), asm.Mov.Imm(asm.R9, 5))
	case "null jumps":
		insns = append(insns, asm.FnGetSmpProcessorId.Call(), asm.JEq.Imm(asm.R6, 0, "access"), asm.Ja.Label("null"))
	case "jne falls":
		insns = append(insns, asm.FnGetSmpProcessorId.Call(), asm.JNE.Imm(asm.R6, 0, "null"))
	case "overwritten":
		insns = append(insns, asm.JEq.Imm(asm.R6, 0, "null"), asm.FnGetSmpProcessorId.Call(),
			asm.JNE.Imm(asm.R0, 0, "access"), asm.Mov.Reg(asm.R6, asm.R10), asm.Add.Imm(asm.R6, -16))
	}
	if store {
		insns = append(insns, asm.Mov.Imm(asm.R1, 0x5a).WithSymbol("access"), asm.StoreMem(asm.R6, off, asm.R1, size),
			asm.LoadMem(asm.R0, asm.R6, 0, asm.Byte))
	} else {
		insns = append(insns, asm.LoadMem(asm.R0, asm.R6, off, size).WithSymbol("access"))
	}
	return append(insns, asm.Return(), asm.Mov.Imm(asm.R0, 7).WithSymbol("null"), asm.Return())
}

// TestJITValueFlow runs flowProg's accesses at the value's edges, in the
// three arrays of valueCollection, for a key in range and one out of it:
// the JIT gives the interpreter's result or fault and the same maps.
func TestJITValueFlow(t *testing.T) {
	needJIT(t)
	sizes := map[asm.Size]int16{asm.Byte: 1, asm.Half: 2, asm.Word: 4, asm.DWord: 8}
	faults, n := 0, 0
	for _, m := range []string{"arr", "ro", "pcpu"} {
		vs := int16(12)
		if m == "pcpu" {
			vs = 8
		}
		for sz, w := range sizes {
			for _, off := range []int16{0, vs - w, vs - w + 1, -1} {
				for _, store := range []bool{false, true} {
					for _, key := range []int32{1, 9} {
						for _, shape := range []string{"checked", "jne", "unchecked", "null joins", "null jumps", "jne falls", "overwritten"} {
							name := fmt.Sprintf("%s key %d off %d size %d store %v %s", m, key, off, w, store, shape)
							insns := flowProg(m, key, off, sz, store, shape)
							ci, pi := valueCollection(t, insns, EngineInterp)
							cj, pj := valueCollection(t, insns, EngineJIT)
							ri, rj := NewRunner(0), NewRunner(0)
							if runRawBoth(t, name, ri, pi, rj, pj) {
								faults++
							}
							n++
							for k := uint32(0); k < 4; k++ {
								if vi, vj := valueOf(t, ci, m, k), valueOf(t, cj, m, k); string(vi) != string(vj) {
									t.Errorf("%s: %s[%d] = %x, interpreter %x", name, m, k, vj, vi)
								}
							}
						}
					}
				}
			}
		}
	}
	if faults == 0 || faults == n {
		t.Errorf("%d of %d cases fault: the edges were not both exercised", faults, n)
	}
	t.Logf("%d cases agree, %d fault", n, faults)
}

// TestValueFlow checks valueFlow's facts where flowProg's shapes (and the
// calls it must forget at) need them: the lookup's result is known not
// NULL past its NULL check, across a helper and a join, through a copy
// and on the jump of `!= 0`; not on the NULL check's jump, nor where a
// NULL way or another value joins, nor in r1-r5 after a helper, nor
// after a bpf-to-bpf call or an atomic fetch into it.
func TestValueFlow(t *testing.T) {
	lookup := func(pc int) bool { return pc == 0 }
	call := insn{op: opCall, imm: int64(helperMapLookupElem)}
	helper := insn{op: opCall, imm: int64(helperGetSmpProcessor)}
	cp := func(d, s uint8) insn { return insn{op: opMov64X, dst: d, src: s} }
	exit := insn{op: opExit}
	for _, tc := range []struct {
		name string
		code []insn // the call at 0
		at   int
		reg  uint8
		ok   bool
	}{
		{"past the NULL check", []insn{call, {op: opJEQ64K, dst: 0, off: 3}, cp(9, 9), exit}, 2, 0, true},
		{"copy before the check", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 0, off: 4}, cp(9, 9), exit}, 3, 6, true},
		{"no check", []insn{call, cp(6, 0), cp(9, 9), exit}, 2, 6, false},
		{"on the NULL jump", []insn{call, {op: opJEQ64K, dst: 0, off: 3}, exit, cp(9, 9), exit}, 3, 0, false},
		{"jump of != 0", []insn{call, {op: opJNE64K, dst: 0, off: 3}, exit, cp(9, 9), exit}, 3, 0, true},
		{"32-bit check", []insn{call, {op: opJEQ32K, dst: 0, off: 3}, cp(9, 9), exit}, 2, 0, false},
		{"across a helper", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 5}, helper, cp(9, 9), exit}, 4, 6, true},
		{"r1 across a helper", []insn{call, cp(1, 0), {op: opJEQ64K, dst: 1, off: 5}, helper, cp(9, 9), exit}, 4, 1, false},
		{"across a local call", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 5}, {op: opCallLocal, off: 6}, cp(9, 9), exit, exit}, 4, 6, false},
		{"NULL way joins", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 4}, cp(9, 9), cp(8, 8), exit}, 4, 6, false},
		{"other value joins", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 6}, {op: opJGT64K, dst: 0, off: 5}, cp(6, 10), cp(9, 9), exit}, 5, 6, false},
		{"both ways not NULL", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 6}, {op: opJGT64K, dst: 0, off: 5}, cp(9, 9), cp(8, 8), exit}, 5, 6, true},
		{"atomic fetch", []insn{call, cp(6, 0), {op: opJEQ64K, dst: 6, off: 5}, {op: opAtomic64, dst: 10, src: 6, off: -8, imm: atomicAdd | atomicFetch}, cp(9, 9), exit}, 4, 6, false},
		{"lddw between", []insn{call, {op: opJEQ64K, dst: 0, off: 5}, {op: opLdImm64, dst: 1, imm: 1}, {op: opNop}, cp(9, 9), exit}, 4, 0, true},
	} {
		funcs := make([]bool, len(tc.code))
		funcs[0] = true
		if tc.name == "across a local call" {
			funcs[6] = true
		}
		facts := valueFlow(tc.code, funcs, lookup)
		got, ok := valueFlowCall(facts, tc.at, tc.reg)
		if ok != tc.ok || ok && got != 0 {
			t.Errorf("%s: call %d %v, want %v", tc.name, got, ok, tc.ok)
		}
	}
}
