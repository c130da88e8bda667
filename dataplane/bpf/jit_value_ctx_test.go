//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// ctxLenProg looks key 1 up in m and, after the NULL check, counts in the
// value's first word and adds the frame's length (data_end - data, two
// context loads) to the word at lenOff: xdp-tools'
// xdp_stats_record_action. With early, the context loads come before the
// first access instead (its lookup then feeds no unchecked access); with
// nullable, there is no NULL check (key 9 is past both maps). The context
// loads use the scratch registers the lookup leaves the value's address
// in, so on amd64 the access at lenOff finds the buffer from r0's region
// number (jitUnchecked.stale) when the first access was unchecked.
func ctxLenProg(m string, key int32, lenOff int16, early, nullable bool) asm.Instructions {
	insns := append(asm.Instructions{asm.Mov.Reg(asm.R7, asm.R1), asm.Mov.Imm(asm.R6, key)}, lookupKey(m, asm.R6)...)
	if !nullable {
		insns = append(insns, asm.JEq.Imm(asm.R0, 0, "out"))
	}
	count := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word), asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),
	}
	length := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R7, 0, asm.Word), asm.LoadMem(asm.R3, asm.R7, 4, asm.Word), asm.Sub.Reg(asm.R3, asm.R2),
	}
	if early {
		insns = append(append(insns, length...), count...)
	} else {
		insns = append(append(insns, count...), length...)
	}
	return append(insns,
		asm.LoadMem(asm.R1, asm.R0, lenOff, asm.Word), asm.Add.Reg(asm.R1, asm.R3),
		asm.StoreMem(asm.R0, lenOff, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
}

// TestJITValueAfterContext runs ctxLenProg in both engines on every frame
// length, one Runner per engine across the lengths (later runs reuse the
// entries past the table's end the first left), and compares verdicts,
// faults, region tables and maps: on an array and a per-CPU array, the
// length word last in the value, past its end (checked: faults), with
// the context loads first, with a NULL result and no check.
func TestJITValueAfterContext(t *testing.T) {
	needJIT(t)
	for _, tc := range []struct {
		m              string
		key            int32
		off            int16
		early, nilable bool
	}{
		{"arr", 1, 8, false, false}, {"pcpu", 1, 4, false, false},
		{"arr", 1, 4, false, false}, {"arr", 1, 9, false, false}, {"pcpu", 1, 6, false, false},
		{"arr", 1, 8, true, false}, {"pcpu", 1, 4, true, false},
		{"arr", 9, 8, false, true}, {"arr", 9, 8, false, false},
	} {
		name := fmt.Sprintf("%+v", tc)
		insns := ctxLenProg(tc.m, tc.key, tc.off, tc.early, tc.nilable)
		ci, pi := loadLookup(t, insns, EngineInterp)
		cj, pj := loadLookup(t, insns, EngineJIT)
		if pj.jit.Load().native != 1 {
			t.Fatalf("%s: the lookup is not native", name)
		}
		ri, rj := NewRunner(0), NewRunner(0)
		full := udpFrame(9)
		for l := 0; l <= len(full); l++ {
			fi, fj := newFrame(full[:l]), newFrame(full[:l])
			vi, oki := ri.RunFrame(pi, fi)
			vj, okj := rj.RunFrame(pj, fj)
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("%s, %d bytes: interpreter %#x %v (%v), JIT %#x %v (%v)", name, l, vi, oki, ri.Fault(), vj, okj, rj.Fault())
			}
			if len(ri.regions) != len(rj.regions) {
				t.Fatalf("%s, %d bytes: region tables of %d and %d entries", name, l, len(ri.regions), len(rj.regions))
			}
			mi := append(lookupBytes(t, ci), mustMap(t, ci, "pcpu").Bytes()...)
			mj := append(lookupBytes(t, cj), mustMap(t, cj, "pcpu").Bytes()...)
			if !bytes.Equal(mi, mj) {
				t.Fatalf("%s, %d bytes: maps differ\ninterp %x\njit    %x", name, l, mi, mj)
			}
		}
	}
}
