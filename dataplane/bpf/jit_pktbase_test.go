package bpf

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Tests of the packet's base pinned in a register (RBP, X25:
// jit_amd64_pktbase.go): programs whose packet accesses, proven and
// guessed, follow each way native code is entered or resumed (a run, a
// burst of frames in different buffers at different headroom, a return
// from Go after a helper, the adjust helpers, tail calls, bpf-to-bpf calls,
// bpf_loop callbacks) give the interpreter's results and bytes. Each
// program folds what it reads into r7 and ends with pktFold, so a base
// left on another frame's buffer changes the result or the bytes.

// pktRead is "r2 = data, r3 = data_end; if data + n > data_end goto out"
// through the context in r6.
func pktRead(n int32) asm.Instructions {
	return append(asm.Instructions{asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.LoadMem(asm.R3, asm.R6, 4, asm.Word)},
		bound(n)...) // jit_range_test.go
}

// pktSum adds the load of size at r2+off to r7 and mixes r7.
func pktSum(off int16, size asm.Size) asm.Instructions {
	return asm.Instructions{asm.LoadMem(asm.R4, asm.R2, off, size), asm.Add.Reg(asm.R7, asm.R4), asm.Mul.Imm(asm.R7, 31)}
}

// pktBody reads bytes 0-15 in every size and writes two of them back:
// nine proven accesses after pktRead(16).
func pktBody() asm.Instructions {
	b := pktRead(16)
	b = append(b, pktSum(0, asm.Byte)...)
	b = append(b, pktSum(1, asm.Half)...)
	b = append(b, pktSum(3, asm.Word)...)
	b = append(b, pktSum(7, asm.DWord)...)
	b = append(b, asm.StoreMem(asm.R2, 2, asm.R7, asm.Half))
	b = append(b, pktSum(12, asm.Word)...)
	b = append(b, pktSum(2, asm.Byte)...)
	b = append(b, asm.StoreImm(asm.R2, 14, 0x77, asm.Byte))
	return b
}

// pktProg is r6 = ctx, r7 = 0, the body, then pktFold.
func pktProg(body ...asm.Instructions) asm.Instructions {
	out := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R7, 0)}
	for _, b := range body {
		out = append(out, b...)
	}
	return append(out, pktFold()...)
}

// pktFold stores r7's low byte at data+15 and returns its low two bits
// (a verdict), or r7 itself when the frame is shorter than 16 bytes.
func pktFold() asm.Instructions {
	f := asm.Instructions{asm.LoadMem(asm.R2, asm.R6, 0, asm.Word).WithSymbol("fin"), asm.LoadMem(asm.R3, asm.R6, 4, asm.Word)}
	f = append(f, bound(16)...)
	return append(f, asm.StoreMem(asm.R2, 15, asm.R7, asm.Byte), asm.Mov.Reg(asm.R0, asm.R7), asm.And.Imm(asm.R0, 3), asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("out"), asm.Return())
}

// pktFrames are n frames of random bytes (headroom and tailroom too) in
// buffers of their own, at random headroom, of random lengths.
func pktFrames(rng *rand.Rand, n int) []Frame {
	fs := make([]Frame, n)
	for i := range fs {
		head, size := rng.IntN(300), rng.IntN(64)
		buf := make([]byte, head+size+8+rng.IntN(64))
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		fs[i] = Frame{Buf: buf, DataMeta: head, Data: head, DataEnd: head + size, IngressIfindex: uint32(i)}
	}
	return fs
}

// pktBaseDiff compares spec's program "main" in both engines on random
// frames (frameDiff, jit_meta_test.go: RunFrame per frame, and bursts of
// 64 against Run) and checks how many accesses the JIT proved.
func pktBaseDiff(t *testing.T, spec *ebpf.CollectionSpec, setup func(*testing.T, *Collection), proven int) *Program {
	t.Helper()
	var ps [2]*Program
	for i, e := range []Engine{EngineInterp, EngineJIT} {
		c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if setup != nil {
			setup(t, c)
		}
		if ps[i], err = c.Program("main"); err != nil {
			t.Fatal(err)
		}
	}
	if j := ps[1].jit.Load(); j == nil || j.proven < proven {
		t.Fatalf("not compiled, or fewer than %d accesses proven (%d)\n%s", proven, j.proven, ps[1].Disasm())
	}
	rng := rand.New(rand.NewPCG(uint64(len(spec.Programs["main"].Instructions)), 21))
	if _, results := frameDiff(t, ps[0], ps[1], pktFrames(rng, 300)); results < 4 {
		t.Fatalf("only %d distinct results", results)
	}
	return ps[1]
}

func TestJITPktBaseProven(t *testing.T) {
	needJIT(t)
	pktBaseDiff(t, oneProg("main", pktProg(pktBody()), nil), nil, 9)
}

// TestJITPktBaseAfterGo: a hash map insert (always Go's) keeps the
// packet's proofs (keepsPacket), so the accesses through r8 after it are
// proven and run after native code is entered again from Go.
func TestJITPktBaseAfterGo(t *testing.T) {
	needJIT(t)
	body := pktRead(16)
	body = append(body, asm.Mov.Reg(asm.R8, asm.R2))
	body = append(body, pktSum(0, asm.Word)...)
	body = append(body,
		asm.StoreMem(asm.RFP, -8, asm.R7, asm.DWord), asm.StoreMem(asm.RFP, -16, asm.R7, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("h"), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -16), asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(), asm.Add.Reg(asm.R7, asm.R0),
		asm.Mov.Reg(asm.R2, asm.R8))
	body = append(body, pktSum(5, asm.DWord)...)
	body = append(body, asm.StoreMem(asm.R2, 13, asm.R7, asm.Half))
	spec := oneProg("main", pktProg(body), map[string]*ebpf.MapSpec{
		"h": {Name: "h", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 64}})
	pktBaseDiff(t, spec, nil, 3)
}

// TestJITPktBaseAdjust: bpf_xdp_adjust_head by minus the first byte's low
// nibble, adjust_tail by -4 and adjust_meta by -8, each followed by reads
// of the packet (the metadata through data_meta, a checked access guessed
// on the packet).
func TestJITPktBaseAdjust(t *testing.T) {
	needJIT(t)
	adjust := func(fn asm.BuiltinFunc, by asm.Instruction) asm.Instructions {
		return asm.Instructions{asm.Mov.Reg(asm.R1, asm.R6), by, fn.Call(), asm.JNE.Imm(asm.R0, 0, "fin")}
	}
	body := pktRead(1)
	body = append(body, asm.LoadMem(asm.R2, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R2, 15), asm.Neg.Imm(asm.R2, 0))
	body = append(body, asm.Mov.Reg(asm.R1, asm.R6), asm.FnXdpAdjustHead.Call(), asm.JNE.Imm(asm.R0, 0, "fin"))
	body = append(body, pktBody()...)
	body = append(body, adjust(asm.FnXdpAdjustTail, asm.Mov.Imm(asm.R2, -4))...)
	body = append(body, pktRead(12)...)
	body = append(body, pktSum(8, asm.Word)...)
	body = append(body, adjust(asm.FnXdpAdjustMeta, asm.Mov.Imm(asm.R2, -8))...)
	body = append(body, asm.LoadMem(asm.R2, asm.R6, 8, asm.Word)) // data_meta
	body = append(body, pktSum(0, asm.DWord)...)
	body = append(body, asm.StoreMem(asm.R2, 4, asm.R7, asm.Word))
	pktBaseDiff(t, oneProg("main", pktProg(body), nil), nil, 11)
}

// TestJITPktBaseCalls: a bpf-to-bpf call whose callee reads the packet
// (proven and, through a pointer it adds a byte to, guessed), before and
// after the caller's own reads.
func TestJITPktBaseCalls(t *testing.T) {
	needJIT(t)
	body := asm.Instructions{asm.Mov.Reg(asm.R1, asm.R6), asm.Call.Label("sub"), asm.Add.Reg(asm.R7, asm.R0)}
	body = append(body, pktBody()...)
	insns := pktProg(body)
	sub := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1).WithSymbol("sub"), asm.Mov.Imm(asm.R7, 0),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 8), asm.JGT.Reg(asm.R4, asm.R3, "subout"),
	}
	sub = append(sub, pktSum(1, asm.Word)...)
	sub = append(sub, asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), asm.And.Imm(asm.R4, 31), asm.Add.Reg(asm.R2, asm.R4))
	sub = append(sub, pktSum(0, asm.Byte)...) // guessed: data + up to 31, checked
	sub = append(sub, asm.StoreMem(asm.R2, 0, asm.R7, asm.Byte), asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("subout"), asm.Return())
	pktBaseDiff(t, oneProg("main", append(insns, sub...), nil), nil, 9)
}

// TestJITPktBaseGuessed: checked accesses guessed on the packet that land
// in another region (the stack through r8, the context's ingress_ifindex
// through r6) or in the packet (a pointer read back from the stack); and
// without the context's field, which arm64 reads in Go, so that the
// packet's reads run in native bursts there too.
func TestJITPktBaseGuessed(t *testing.T) {
	needJIT(t)
	for _, ingress := range []bool{true, false} {
		pktBaseDiff(t, oneProg("main", pktProg(pktGuessed(ingress)), nil), nil, 1)
	}
}

func pktGuessed(ingress bool) asm.Instructions {
	body := asm.Instructions{
		asm.Mov.Reg(asm.R8, asm.RFP), asm.Add.Imm(asm.R8, -16),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word),
		asm.StoreMem(asm.R8, 0, asm.R2, asm.DWord),
		asm.StoreMem(asm.R8, 8, asm.R6, asm.DWord),
		asm.LoadMem(asm.R2, asm.R8, 0, asm.DWord),
	}
	body = append(body, pktSum(3, asm.Byte)...)
	body = append(body, pktSum(6, asm.Half)...)
	body = append(body, asm.StoreMem(asm.R2, 1, asm.R7, asm.Byte))
	if ingress {
		body = append(body, asm.LoadMem(asm.R4, asm.R6, 12, asm.Word), asm.Add.Reg(asm.R7, asm.R4))
	}
	return body
}

// TestJITPktBaseLoop: a bpf_loop callback of 10 rounds reads the packet
// (proven) and adds to byte i (checked), and the caller reads it after.
func TestJITPktBaseLoop(t *testing.T) {
	needJIT(t)
	body := asm.Instructions{
		asm.Mov.Imm(asm.R1, 10),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc},
		asm.Mov.Reg(asm.R3, asm.R6), asm.Mov.Imm(asm.R4, 0), asm.FnLoop.Call(), asm.Add.Reg(asm.R7, asm.R0),
	}
	body = append(body, pktBody()...)
	insns := pktProg(body)
	insns[3].Constant = int64(len(insns) + 1 - 4) // from the slot after the lddw's two
	cb := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R8, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 4), asm.JGT.Reg(asm.R4, asm.R3, "cbout"),
		asm.LoadMem(asm.R5, asm.R2, 2, asm.Half),
		asm.Add.Reg(asm.R2, asm.R8),
		asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte), // checked: data + i
		asm.Add.Reg(asm.R4, asm.R5),
		asm.StoreMem(asm.R2, 0, asm.R4, asm.Byte),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("cbout"), asm.Return(),
	}
	pktBaseDiff(t, oneProg("main", append(insns, cb...), nil), nil, 9)
}

// TestJITPktBaseTailCall: a tail call into a program that reads the packet
// (native on amd64; through Go on arm64), after the caller read and wrote
// it.
func TestJITPktBaseTailCall(t *testing.T) {
	needJIT(t)
	body := pktRead(4)
	body = append(body, pktSum(0, asm.Word)...)
	body = append(body, asm.StoreMem(asm.R2, 0, asm.R7, asm.Byte),
		asm.Mov.Reg(asm.R1, asm.R6), asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"), asm.Mov.Imm(asm.R3, 0),
		asm.FnTailCall.Call())
	prog := func(insns asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	spec := &ebpf.CollectionSpec{
		Maps:     map[string]*ebpf.MapSpec{"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}},
		Programs: map[string]*ebpf.ProgramSpec{"main": prog(pktProg(body)), "t": prog(pktProg(pktBody()))},
	}
	spec.Programs["main"].Name, spec.Programs["t"].Name = "main", "t"
	setup := func(t *testing.T, c *Collection) {
		jmp, err := c.Map("jmp")
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Program("t")
		if err != nil {
			t.Fatal(err)
		}
		var k, v [4]byte
		binary.LittleEndian.PutUint32(v[:], p.ID())
		if err := jmp.Update(k[:], v[:], 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	pj := pktBaseDiff(t, spec, setup, 2)
	if nativeTailArch && pj.jit.Load().native == 0 {
		t.Fatal("the tail call is not native")
	}
}
