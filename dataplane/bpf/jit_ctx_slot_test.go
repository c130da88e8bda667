//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ctxSlotProg spills the context to r10-8, runs mid (which may write the
// slot when ingress_ifindex, in r7, is 1), fills r2 from the slot and
// reads data and data_end through it, then the packet's first byte when
// there is one: what xdp-filter does around its map lookups.
func ctxSlotProg(mid ...asm.Instruction) asm.Instructions {
	out := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, 12, asm.Word), // ingress_ifindex
	}
	out = append(out, mid...)
	return append(out,
		asm.LoadMem(asm.R2, asm.RFP, -8, asm.DWord).WithSymbol("fill"),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.Word), // data
		asm.LoadMem(asm.R4, asm.R2, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R5, asm.R3),
		asm.Add.Imm(asm.R5, 1),
		asm.Mov.Imm(asm.R0, int32(ActionPass)),
		asm.JGT.Reg(asm.R5, asm.R4, "out"),
		asm.LoadMem(asm.R0, asm.R3, 0, asm.Byte),
		asm.And.Imm(asm.R0, 3),
		asm.Return().WithSymbol("out"),
	)
}

// ctxSlotLoad loads insns with an array map "arr" (4-byte keys, 8-byte
// values, one entry) for engine e.
func ctxSlotLoad(t *testing.T, insns asm.Instructions, e Engine) *Program {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"arr": {Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"s": {Name: "s", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("s")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stDW is *(u64 *)(dst + off) = v (asm.StoreImm refuses the 8-byte form).
func stDW(dst asm.Register, off int16, v int64) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: v}
}

// atR10 is an atomic add of src to the 8 bytes at r10+off.
func atR10(off int16, src asm.Register) asm.Instruction {
	in := asm.StoreXAdd(asm.RFP, src, asm.DWord)
	in.Offset = off
	return in
}

// TestCtxSlotFill: a fill from a stack slot the context was spilled to
// holds the context (its data and data_end loads are specialised and the
// packet access after the compare is proven) only while nothing that may
// have written the slot ran since the spill, on every path. In each
// hostile case the slot holds something else when ingress_ifindex is 1
// (a stack slot overwritten on one path, a join with a scalar, partial
// overwrites, a helper given the slot, stores through a copy of r10 or a
// forged stack pointer, an atomic, a subprogram given the slot): the load
// of data through the fill must then fault in both engines, naming that
// load, which a wrong specialisation (reading the Frame) would not.
func TestCtxSlotFill(t *testing.T) {
	needJIT(t)
	hostile := func(body ...asm.Instruction) []asm.Instruction {
		return append([]asm.Instruction{asm.JNE.Imm(asm.R7, 1, "fill")}, body...)
	}
	forged := int64(regionStack<<32 | (stackSize - 8)) // main's r10-8
	cases := []struct {
		name string
		mid  []asm.Instruction
		sub  []asm.Instruction // a subprogram "sub" after the program
		ctx  bool
	}{
		{name: "spill and fill", ctx: true},
		{name: "lookups and a value store between", ctx: true, mid: []asm.Instruction{
			asm.StoreImm(asm.RFP, -16, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -16),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "fill"),
			stDW(asm.R0, 0, 1),
			asm.StoreMem(asm.RFP, -16, asm.R7, asm.DWord), // the next slot
			asm.FnKtimeGetNs.Call(),
		}},
		{name: "both paths spill", ctx: true, mid: []asm.Instruction{
			asm.JNE.Imm(asm.R7, 1, "other"),
			asm.StoreMem(asm.RFP, -8, asm.R6, asm.DWord),
			asm.Ja.Label("fill"),
			asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord).WithSymbol("other"),
		}},
		{name: "overwritten on one path", mid: hostile(stDW(asm.RFP, -8, 1))},
		{name: "join with a scalar", mid: []asm.Instruction{
			asm.JNE.Imm(asm.R7, 1, "ctx"),
			asm.Mov.Imm(asm.R8, 5),
			asm.StoreMem(asm.RFP, -8, asm.R8, asm.DWord),
			asm.Ja.Label("fill"),
			asm.StoreMem(asm.RFP, -8, asm.R6, asm.DWord).WithSymbol("ctx"),
		}},
		{name: "upper half", mid: hostile(asm.StoreImm(asm.RFP, -4, 0, asm.Word))},
		{name: "lower half", mid: hostile(asm.StoreImm(asm.RFP, -8, 0x100, asm.Word))},
		{name: "top byte", mid: hostile(asm.StoreImm(asm.RFP, -1, 0x40, asm.Byte))},
		{name: "spilled as 4 bytes", mid: hostile(stDW(asm.RFP, -8, 0),
			asm.StoreMem(asm.RFP, -8, asm.R6, asm.Word))},
		{name: "helper writes it", mid: hostile(
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 8),
			asm.FnXdpLoadBytes.Call(),
		)},
		{name: "helper writes past a lower pointer", mid: hostile(
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -16),
			asm.Mov.Imm(asm.R4, 16),
			asm.FnXdpLoadBytes.Call(),
		)},
		{name: "copy of r10", mid: hostile(asm.Mov.Reg(asm.R3, asm.RFP), stDW(asm.R3, -8, 0))},
		{name: "forged stack pointer", mid: hostile(asm.LoadImm(asm.R3, forged, asm.DWord), stDW(asm.R3, 0, 0))},
		{name: "forged from a lookup's value", mid: hostile(
			asm.StoreImm(asm.RFP, -16, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -16),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "fill"),
			asm.LoadImm(asm.R3, forged, asm.DWord),
			asm.Mov.Reg(asm.R0, asm.R3),
			stDW(asm.R0, 0, 0),
		)},
		{name: "atomic", mid: hostile(asm.LoadImm(asm.R3, 1<<44, asm.DWord), atR10(-8, asm.R3))},
		{name: "subprogram given the slot", mid: hostile(
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, -8),
			asm.Call.Label("sub"),
		), sub: []asm.Instruction{
			stDW(asm.R1, 0, 0).WithSymbol("sub"),
			asm.Return(),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			insns := append(ctxSlotProg(tc.mid...), tc.sub...)
			pi := ctxSlotLoad(t, insns, EngineInterp)
			pj := ctxSlotLoad(t, insns, EngineJIT)
			data := ctxSlotData(t, pj.code)
			if got := pj.code[data].op == opLdCtxData; got != tc.ctx {
				t.Fatalf("data load through the fill specialised %v, want %v", got, tc.ctx)
			}
			if j := pj.jit.Load(); j == nil || (j.proven > 0) != tc.ctx {
				t.Errorf("proven accesses: %+v, want some %v", j, tc.ctx)
			}
			pkt := append(bytes.Repeat([]byte{0xff}, 16), 1) // no pointer in 8 of its bytes
			for _, ifindex := range []uint32{1, 2} {
				gi, fi := ctxSlotRun(pi, pkt, ifindex)
				gj, _ := ctxSlotRun(pj, pkt, ifindex)
				if gi != gj {
					t.Errorf("ifindex %d: interpreter\n%s\nJIT\n%s", ifindex, gi, gj)
				}
				var f *Fault
				faulted := errors.As(fi, &f)
				if want := !tc.ctx && ifindex == 1; faulted != want || (want && f.Index != data) {
					t.Errorf("ifindex %d: fault %v, want one at the data load %d: %v", ifindex, faulted, data, want)
				}
			}
		})
	}
}

// ctxSlotData is the index of the data load after the fill.
func ctxSlotData(t *testing.T, code []insn) int {
	for pc, in := range code {
		if in.op == opLdxDW && in.src == 10 && in.dst == 2 && in.off == -8 {
			return pc + 1
		}
	}
	t.Fatal("no fill")
	return 0
}

// ctxSlotRun runs p on pkt with ingress_ifindex through RunFrame and
// RunBurst and describes what it saw; it returns RunFrame's fault too.
func ctxSlotRun(p *Program, pkt []byte, ifindex uint32) (string, error) {
	r := NewRunner(0)
	var out bytes.Buffer
	f := newFrame(pkt)
	f.IngressIfindex = ifindex
	v, ok := r.RunFrame(p, f)
	fault := r.Fault()
	fmt.Fprintf(&out, "%d %v %v %x\n", v, ok, fault, f.Buf[testHeadroom:f.DataEnd])
	frames := []Frame{*newFrame(pkt), *newFrame(pkt)}
	frames[0].IngressIfindex, frames[1].IngressIfindex = ifindex, ifindex
	verdicts := make([]Action, 2)
	n, first := r.RunBurst(p, frames, verdicts, nil)
	fmt.Fprintf(&out, "%d %d %v %v\n", n, first, verdicts, r.Fault())
	return out.String(), fault
}
