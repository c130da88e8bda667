package bpf

import (
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Tests of the native bpf_csum_diff (jit_amd64_csum.go): random calls on
// the stack, the packet and non-pointers, with sizes in and out of what
// the native code takes (0 to 68 bytes, multiples of 4 and not, the
// 40-byte chain), under both kernels' semantics, give the interpreter's
// results and faults.

// genCsumProg is a program of n bpf_csum_diff calls over a random stack.
func genCsumProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{
		asm.Mov.Imm(asm.R9, 0),
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
	}
	for off := -128; off < 0; off += 4 {
		out = append(out, asm.StoreImm(asm.RFP, int16(off), int64(int32(rng.Uint32())), asm.Word))
	}
	sizes := []int32{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 3, 6, 2}
	ptr := func(dst asm.Register) asm.Instructions {
		switch rng.IntN(6) {
		case 0, 1, 2:
			return asm.Instructions{asm.Mov.Reg(dst, asm.RFP), asm.Add.Imm(dst, -int32(rng.IntN(140)))}
		case 3, 4:
			return asm.Instructions{asm.Mov.Reg(dst, asm.R7), asm.Add.Imm(dst, int32(rng.IntN(40)))}
		}
		return asm.Instructions{asm.Mov.Imm(dst, int32(rng.Uint32()))}
	}
	for range n {
		out = append(out, ptr(asm.R1)...)
		out = append(out, ptr(asm.R3)...)
		from, to := sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))]
		if rng.IntN(3) == 0 {
			from = 0
		}
		out = append(out, asm.Mov.Imm(asm.R2, from), asm.Mov.Imm(asm.R4, to),
			asm.Mov.Imm(asm.R5, int32(rng.Uint32())), asm.FnCsumDiff.Call(),
			asm.Mul.Imm(asm.R9, 31), asm.Add.Reg(asm.R9, asm.R0))
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.RSh.Imm(asm.R0, 32), asm.Xor.Reg(asm.R0, asm.R9), asm.Return())
}

func loadCsumProg(insns asm.Instructions, e Engine) (*Program, error) {
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"cs": {Name: "cs", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, InsnBudget: 100000, Engine: e})
	if err != nil {
		return nil, err
	}
	return c.Program("cs")
}

func TestJITCsumDiffDifferential(t *testing.T) {
	needJIT(t)
	old := csumDiffFolded
	defer func() { csumDiffFolded = old }()
	rng := rand.New(rand.NewPCG(21, 13))
	n := 400
	if testing.Short() {
		n = 60
	}
	native, loaded := 0, 0
	for i := range n {
		csumDiffFolded = i%2 == 0
		insns := genCsumProg(rng, 1+rng.IntN(8))
		pi, err := loadCsumProg(insns, EngineInterp)
		if err != nil {
			continue
		}
		loaded++
		pj, err := loadCsumProg(insns, EngineJIT)
		if err != nil {
			t.Fatalf("the interpreter loads it, the JIT does not: %v", err)
		}
		if pj.jit.Load() != nil {
			native += pj.jit.Load().native
		}
		pkt := udpFrame(uint16(i))[:20+rng.IntN(45)]
		ri, rj := NewRunner(0), NewRunner(0)
		for run := range 2 {
			vi, oki := ri.RunFrame(pi, newFrame(pkt))
			vj, okj := rj.RunFrame(pj, newFrame(pkt))
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("program %d run %d (folded %v): interpreter %#x %v (%v), JIT %#x %v (%v)\n%v", i, run, csumDiffFolded, vi, oki, ri.Fault(), vj, okj, rj.Fault(), insns)
			}
		}
	}
	if loaded < n/2 {
		t.Fatalf("only %d of %d programs loaded", loaded, n)
	}
	if nativeCsumArch == 1 && native == 0 {
		t.Fatal("no native csum_diff")
	}
	t.Logf("%d programs, %d native calls", loaded, native)
}
