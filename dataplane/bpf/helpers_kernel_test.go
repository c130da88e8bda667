package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// The differential tests of the helpers run the same small program in the
// kernel (BPF_PROG_TEST_RUN through internal/kernelxdp) and in xnic, and
// compare what the program wrote into the frame. They need root and skip
// with the oracle's reason otherwise.

func needKernel(t testing.TB) {
	t.Helper()
	if err := kernelxdp.Available(); err != nil {
		t.Skip(err)
	}
}

// csumDiffSpec is an XDP program that calls bpf_csum_diff(data+8, from,
// data+8+from, to, seed) with the u32 seed at data[0:4] and stores the u64
// result at data[4+...]: the result goes to data[8+from+to : 16+from+to].
// Frames too short for that pass untouched.
func csumDiffSpec(from, to int32) *ebpf.CollectionSpec {
	end := 16 + from + to
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, end),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R5, asm.R7, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 8),
		asm.Mov.Imm(asm.R2, from),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, 8+from),
		asm.Mov.Imm(asm.R4, to),
		asm.FnCsumDiff.Call(),
		asm.StoreMem(asm.R7, int16(end-8), asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	}
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"csum": {Name: "csum", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

// diffRun runs the program prog of spec on every frame in the kernel and in
// xnic, in the interpreter and in the JIT where there is one (helpers are
// the same calls from both), and fails on the first frames whose verdict or
// bytes differ. It returns the number of frames compared.
func diffRun(t *testing.T, spec *ebpf.CollectionSpec, prog string, frames [][]byte) int {
	t.Helper()
	k, err := kernelxdp.LoadSpec(spec.Copy(), nil)
	if err != nil {
		t.Fatalf("kernel load: %v", err)
	}
	defer k.Close()
	type engine struct {
		name string
		p    *Program
		r    *Runner
	}
	var engines []engine
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		c, err := LoadCollectionSpec(spec.Copy(), &Options{NumCPU: 1, Engine: e})
		if e == EngineJIT && err != nil {
			continue // no JIT on this platform
		}
		if err != nil {
			t.Fatalf("xnic load: %v", err)
		}
		defer c.Close()
		p, err := c.Program(prog)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, engine{map[Engine]string{EngineInterp: "interp", EngineJIT: "jit"}[e], p, NewRunner(0)})
	}
	bad := 0
	for _, fr := range frames {
		kr, err := k.Run(prog, kernelxdp.Input{Frame: fr})
		if err != nil {
			t.Fatalf("kernel run: %v", err)
		}
		for _, e := range engines {
			f := newFrame(fr)
			got := e.r.Run(e.p, f)
			out := f.Buf[f.Data:f.DataEnd]
			if uint32(got) != kr.Verdict || !bytes.Equal(out, kr.Frame) {
				t.Errorf("frame %x:\n kernel      %v %x\n xnic %-6s %v %x (fault %v)", fr, kr.Verdict, kr.Frame, e.name, got, out, e.r.Fault())
				if bad++; bad > 5 {
					t.FailNow()
				}
			}
		}
	}
	return len(frames)
}

// csumFrames are inputs for csumDiffSpec(from, to): random ones, and the
// edge cases of ones' complement sums (all zeros, all ones, zero seed
// with equal from and to, seeds 0 and 0xffffffff).
func csumFrames(rng *rand.Rand, from, to int, n int) [][]byte {
	size := 16 + from + to
	if size < 64 {
		size = 64
	}
	var out [][]byte
	fill := func(b byte, seed uint32) []byte {
		f := bytes.Repeat([]byte{b}, size)
		binary.LittleEndian.PutUint32(f, seed)
		return f
	}
	for _, seed := range []uint32{0, 0xffffffff, 0xffff, 1} {
		out = append(out, fill(0, seed), fill(0xff, seed))
		eq := fill(0, seed)
		for i := 0; i < from && i < to; i++ {
			v := byte(rng.Uint32())
			eq[8+i], eq[8+from+i] = v, v
		}
		out = append(out, eq)
	}
	for range n {
		f := make([]byte, size)
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
		switch rng.IntN(4) { // runs of 0x00 and 0xff make carries and zero sums likely
		case 0:
			for i := 8; i < size; i++ {
				f[i] = 0xff
			}
		case 1:
			for i := 8; i < 8+from+to; i++ {
				f[i] &= 0x80
			}
		}
		out = append(out, f)
	}
	return out
}

func TestCsumDiffMatchesKernel(t *testing.T) {
	needKernel(t)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 4, 8, 12, 20, 36, 40, 44, 60, 64, 68, 100, 128, 132, 252, 256, 508, 512}
	n := 0
	for i, from := range sizes {
		for j, to := range sizes {
			if (i+j)%3 != 0 && from != 0 && to != 0 {
				continue // a third of the pairs, all the one-sided ones
			}
			t.Run(fmt.Sprintf("from%d_to%d", from, to), func(t *testing.T) {
				n += diffRun(t, csumDiffSpec(int32(from), int32(to)), "csum", csumFrames(rng, from, to, 60))
			})
		}
	}
	t.Logf("%d frames compared, folded (6.13+) semantics %v", n, csumDiffFolded)
}
