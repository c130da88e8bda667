package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Tests of bpf_csum_diff over 64 bytes and more (csumRounds): every size
// from 0 to 512 bytes in steps of 4, from in the packet and to on the
// stack (the whole 512 bytes of it at the largest) and the reverse, odd
// seeds, either side empty, under both kernels' semantics: the
// interpreter's results.

// csum64Prog fills the stack with rng's words and calls bpf_csum_diff on
// from (at the packet's start, or the stack's bottom when swap) and to
// (the other one), then returns r0 with r1-r5 mixed in (kept by the call).
func csum64Prog(rng *rand.Rand, from, to int32, seed uint32, swap bool) asm.Instructions {
	out := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
	}
	for off := -512; off < 0; off += 8 {
		out = append(out, asm.LoadImm(asm.R2, int64(rng.Uint64()), asm.DWord), asm.StoreMem(asm.RFP, int16(off), asm.R2, asm.DWord))
	}
	pkt, stk := asm.R1, asm.R3
	if swap {
		pkt, stk = asm.R3, asm.R1
	}
	out = append(out,
		asm.Mov.Reg(pkt, asm.R7),
		asm.Mov.Reg(stk, asm.RFP), asm.Add.Imm(stk, -512),
		asm.Mov.Imm(asm.R2, from), asm.Mov.Imm(asm.R4, to),
		asm.Mov.Imm(asm.R5, int32(seed)), asm.FnCsumDiff.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.Xor.Reg(asm.R9, asm.R2), asm.Xor.Reg(asm.R9, asm.R4), asm.Xor.Reg(asm.R9, asm.R5),
		asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
	return out
}

func TestJITCsumDiffLong(t *testing.T) {
	needJIT(t)
	old := csumDiffFolded
	defer func() { csumDiffFolded = old }()
	rng := rand.New(rand.NewPCG(64, 512))
	pkt := make([]byte, 1024)
	for i := range pkt {
		pkt[i] = byte(rng.Uint32())
	}
	step := 4
	if testing.Short() {
		step = 12
	}
	runs := 0
	for n := 0; n <= 512; n += step {
		for k, sizes := range [][2]int32{{int32(n), 0}, {0, int32(n)}, {int32(n), int32(512 - n)}, {int32(n), int32(n)}} {
			folded := k%2 == 0 || n%8 == 0
			csumDiffFolded = folded
			seed := rng.Uint32() | 1
			if k == 1 {
				seed = 0xffffffff
			}
			insns := csum64Prog(rng, sizes[0], sizes[1], seed, n%8 == 4)
			pi, err := loadCsumProg(insns, EngineInterp)
			if err != nil {
				t.Fatal(err)
			}
			pj, err := loadCsumProg(insns, EngineJIT)
			if err != nil {
				t.Fatal(err)
			}
			if nativeCsumArch == 1 && pj.jit.Load().native == 0 {
				t.Fatal("bpf_csum_diff not compiled natively")
			}
			ri, rj := NewRunner(0), NewRunner(0)
			vi, oki := ri.RunFrame(pi, newFrame(pkt))
			vj, okj := rj.RunFrame(pj, newFrame(pkt))
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("from %d to %d seed %#x (folded %v): interpreter %#x %v (%v), JIT %#x %v (%v)",
					sizes[0], sizes[1], seed, folded, vi, oki, ri.Fault(), vj, okj, rj.Fault())
			}
			runs++
		}
	}
	t.Log(runs, "calls compared")
}

// TestCsumPartialRounds pins csumPartial over 64 bytes and more against a
// sum computed another way: the ones' complement sum of the 16-bit words
// folds to the same value.
func TestCsumPartialRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 64; n <= 512; n += 4 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		var ref uint64
		for i := 0; i < n; i += 2 {
			ref += uint64(b[i]) | uint64(b[i+1])<<8
		}
		for ref>>16 != 0 {
			ref = ref&0xffff + ref>>16
		}
		got := uint64(csumFrom32to16(csumPartial(b, 0)))
		if got != ref && !(got == 0 && ref == 0xffff || got == 0xffff && ref == 0) {
			t.Fatalf("%d bytes: %#x, want %#x", n, got, ref)
		}
	}
}

// BenchmarkJITCsumDiff runs one bpf_csum_diff of n bytes of the packet
// (from empty: a checksum of new bytes, as xdp_adjust_tail's ICMP reply
// sums its 112-byte quote) per run, in bursts, in each engine.
func BenchmarkJITCsumDiff(b *testing.B) {
	pkt := make([]byte, 600)
	for _, n := range []int32{112, 512} {
		insns := asm.Instructions{
			asm.LoadMem(asm.R3, asm.R1, 0, asm.Word),
			asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
			asm.Mov.Imm(asm.R1, 0), asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Imm(asm.R4, n), asm.Mov.Imm(asm.R5, 1), asm.FnCsumDiff.Call(),
			asm.And.Imm(asm.R0, 1), asm.Add.Imm(asm.R0, 1), asm.Return(), // XDP_DROP or _PASS
		}
		for _, e := range []Engine{EngineInterp, EngineJIT} {
			b.Run(fmt.Sprintf("%d/%v", n, e), func(b *testing.B) {
				p, err := loadCsumProg(insns, e)
				if err != nil {
					b.Fatal(err)
				}
				if _, v := burstCPUNs(b, p, pkt); v != ActionDrop && v != ActionPass {
					b.Fatalf("verdict %v", v)
				}
			})
		}
	}
}
