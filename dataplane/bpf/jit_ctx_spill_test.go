package bpf

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestJITCtxSpilled: context loads through a context pointer spilled to
// the stack and loaded back where the context analysis does not follow it
// (here a spill through a copy of r10, which ends what it knows of every
// slot: decode_ctx.go) read the frame's
// fields as the interpreter's slowLoad does, the packet pointers among
// them usable for packet accesses, through RunFrame and RunBurst; an
// offset past the fields or misaligned faults alike.
func TestJITCtxSpilled(t *testing.T) {
	needJIT(t)
	for _, off := range []int16{0, 4, 8, 12, 16, 20, 2} {
		insns := asm.Instructions{
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.StoreMem(asm.R2, -8, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R1, 0),
			asm.LoadMem(asm.R2, asm.RFP, -8, asm.DWord),
			asm.LoadMem(asm.R3, asm.R2, 0, asm.Word), // data
			asm.LoadMem(asm.R4, asm.R2, 4, asm.Word), // data_end
			asm.LoadMem(asm.R5, asm.R2, off, asm.Word),
			asm.Mov.Reg(asm.R6, asm.R3),
			asm.Add.Imm(asm.R6, 16),
			asm.Mov.Imm(asm.R0, int32(ActionPass)),
			asm.JGT.Reg(asm.R6, asm.R4, "out"),
			// The field as loaded (a pointer's offset and tag), and the
			// byte it points at when it is a packet pointer in range.
			asm.StoreMem(asm.R3, 0, asm.R5, asm.DWord),
			asm.Mov.Reg(asm.R7, asm.R5),
			asm.RSh.Imm(asm.R7, 32),
			asm.JNE.Imm(asm.R7, regionPacket, "tx"),
			asm.Mov.Reg(asm.R7, asm.R5),
			asm.Add.Imm(asm.R7, 1),
			asm.JGT.Reg(asm.R7, asm.R4, "tx"),
			asm.JLT.Reg(asm.R5, asm.R3, "tx"),
			asm.LoadMem(asm.R7, asm.R5, 0, asm.Byte),
			asm.StoreMem(asm.R3, 8, asm.R7, asm.Byte),
			asm.Mov.Imm(asm.R0, int32(ActionTX)).WithSymbol("tx"),
			asm.Return().WithSymbol("out"),
		}
		var got [2]string
		for e, eng := range []Engine{EngineInterp, EngineJIT} {
			spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
				"s": {Name: "s", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
			}}
			c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := c.Program("s")
			for pc, in := range p.code {
				if in.op == opLdCtxData || in.op == opLdCtxDataEnd {
					t.Fatalf("context load at %d specialised: the test wants one the analysis lost", pc)
				}
			}
			r := NewRunner(0)
			var out bytes.Buffer
			for _, f := range []Frame{helperFrame(5, 6, 64, 512, 256, 8), helperFrame(7, 8, 20, 512, 128, 0)} {
				f.RxQueueIndex = 3
				one := f
				one.Buf = bytes.Clone(f.Buf)
				v, ok := r.RunFrame(p, &one)
				fmt.Fprintf(&out, "%d %v %v %x\n", v, ok, r.Fault(), one.Buf)
				frames := []Frame{f, f}
				frames[0].Buf, frames[1].Buf = bytes.Clone(f.Buf), bytes.Clone(f.Buf)
				verdicts := make([]Action, 2)
				n, first := r.RunBurst(p, frames, verdicts, nil)
				fmt.Fprintf(&out, "%d %d %v %v %x %x\n", n, first, verdicts, r.Fault(), frames[0].Buf, frames[1].Buf)
			}
			got[e] = out.String()
			c.Close()
		}
		if got[0] != got[1] {
			t.Errorf("offset %d:\ninterpreter %s\nJIT         %s", off, got[0], got[1])
		}
	}
}
