package bpf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native refusals of bpf_perf_event_output (jit_perf.go,
// jit_amd64_perf.go, jit_arm64_perf.go): random programs of outputs with
// flags in and out of the masks, every kind of index, frame lengths around
// the frame's, data the program may or may not read, on Runners of CPUs
// with and without a ring, give the interpreter's results, faults and
// records (loss records included, which carry the refusals' count); the
// room check is exact at every size around the room left, with and without
// a loss record owed; and a Go reader reading while native code writes
// sees every output either as a sample or in a loss count.

const perfTestRing = 4096

// loadPerfProg loads insns with "ev", a perf event array of 3 slots whose
// reader rings are CPU 0's (slot 0) and CPU 1's (slot 1); slot 2 is empty.
func loadPerfProg(insns asm.Instructions, e Engine) (*Program, *maps.PerfEventArray, *maps.PerfReader, error) {
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"ev": {Name: "ev", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 3}},
		Programs: map[string]*ebpf.ProgramSpec{
			"pp": {Name: "pp", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 3, InsnBudget: 100000, Engine: e})
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := c.Program("pp")
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := c.Map("ev")
	if err != nil {
		return nil, nil, nil, err
	}
	a, _ := m.(*maps.PerfEventArray)
	if a == nil {
		return nil, nil, nil, fmt.Errorf("ev is a %T", m)
	}
	rd, err := maps.NewPerfReader(a, perfTestRing)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := a.Delete([]byte{2, 0, 0, 0}); err != nil {
		return nil, nil, nil, err
	}
	return p, a, rd, nil
}

// genPerfProg is a program of n bpf_perf_event_output calls; r9 folds
// their results.
func genPerfProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0), asm.Mov.Reg(asm.R6, asm.R1)}
	for off := -64; off < 0; off += 4 {
		out = append(out, asm.StoreImm(asm.RFP, int16(off), int64(int32(rng.Uint32())), asm.Word))
	}
	index := []uint64{0, 0, 0, 1, 2, 3, 0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe}
	ctxLen := []uint64{0, 0, 1, 14, 63, 64, 65, 0xfffff}
	extra := []uint64{0, 0, 0, 0, 0, 0, 1 << 52, 1 << 63}
	sizes := []int64{0, 1, 7, 8, 9, 60, 64, 100, 500, 512, 513, 1 << 32, -1}
	for range n {
		if rng.IntN(10) == 0 {
			out = append(out, asm.Mov.Reg(asm.R1, asm.RFP)) // not the context: the fault
		} else {
			out = append(out, asm.Mov.Reg(asm.R1, asm.R6))
		}
		flags := index[rng.IntN(len(index))] | ctxLen[rng.IntN(len(ctxLen))]<<32 | extra[rng.IntN(len(extra))]
		at := []int32{-64, -8, -512, -1}[rng.IntN(4)]
		out = append(out, asm.LoadMapPtr(asm.R2, 0).WithReference("ev"),
			asm.LoadImm(asm.R3, int64(flags), asm.DWord),
			asm.Mov.Reg(asm.R4, asm.RFP), asm.Add.Imm(asm.R4, at),
			asm.LoadImm(asm.R5, sizes[rng.IntN(len(sizes))], asm.DWord),
			asm.FnPerfEventOutput.Call(),
			asm.Mul.Imm(asm.R9, 31), asm.Add.Reg(asm.R9, asm.R0))
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.RSh.Imm(asm.R0, 32), asm.Xor.Reg(asm.R0, asm.R9), asm.Return())
}

// perfSameRecords polls up to n records (n < 0: all) from both readers and
// fails unless they are the same.
func perfSameRecords(t *testing.T, ri, rj *maps.PerfReader, n int, what string) int {
	t.Helper()
	got := 0
	for ; n < 0 || got < n; got++ {
		a, oka := ri.Poll()
		b, okb := rj.Poll()
		if oka != okb || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: record %d: interpreter %+v %v, JIT %+v %v", what, got, a, oka, b, okb)
		}
		if !oka {
			break
		}
	}
	return got
}

func TestJITPerfDifferential(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(25, 2026))
	n := 150
	if testing.Short() {
		n = 40
	}
	native, refusals := 0, map[uint64]int{}
	for i := range n {
		insns := genPerfProg(rng, 1+rng.IntN(6))
		pi, _, rdi, err := loadPerfProg(insns, EngineInterp)
		if err != nil {
			t.Fatalf("program %d: %v\n%v", i, err, insns)
		}
		pj, _, rdj, err := loadPerfProg(insns, EngineJIT)
		if err != nil {
			t.Fatalf("the interpreter loads it, the JIT does not: %v", err)
		}
		native += pj.jit.Load().native
		cpu := []int{0, 0, 0, 1, 2, 5}[rng.IntN(6)]
		ri, rj := NewRunner(cpu), NewRunner(cpu)
		for run := range 30 {
			vi, oki := ri.RunFrame(pi, newFrame(udpFrame(uint16(run))))
			vj, okj := rj.RunFrame(pj, newFrame(udpFrame(uint16(run))))
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("program %d (CPU %d) run %d: interpreter %#x %v (%v), JIT %#x %v (%v)\n%v", i, cpu, run, vi, oki, ri.Fault(), vj, okj, rj.Fault(), insns)
			}
			perfSameRecords(t, rdi, rdj, rng.IntN(4), fmt.Sprintf("program %d run %d", i, run))
		}
		perfSameRecords(t, rdi, rdj, -1, fmt.Sprintf("program %d", i))
		refusals[uint64(cpu)]++
	}
	if jitArch && native == 0 {
		t.Fatal("no native perf output")
	}
	t.Logf("%d programs, %d native calls, CPUs %v", n, native, refusals)
}

// perfSizedCall outputs r5 = the frame's first word bytes of the stack with
// flags the frame's second and third words give (low, high): r0 its result.
func perfSizedCall() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 12),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R5, asm.R7, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R7, 4, asm.Word),
		asm.LoadMem(asm.R8, asm.R7, 8, asm.Word),
		asm.LSh.Imm(asm.R8, 32),
		asm.Or.Reg(asm.R3, asm.R8),
		asm.LoadMapPtr(asm.R2, 0).WithReference("ev"),
		asm.Mov.Reg(asm.R4, asm.RFP),
		asm.Add.Imm(asm.R4, -512),
		asm.FnPerfEventOutput.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 7).WithSymbol("out"),
		asm.Return(),
	}
}

// TestJITPerfEdges fills slot 0's ring from Go with samples of one size
// (the positions wrap the ring at many offsets), owes a loss record of 0,
// 1 or 3 refusals or not, frees a few samples, then has the program output
// every size around the room left, from the stack alone and with frame
// bytes: the native refusals and the slow path's outputs agree with the
// interpreter's to the record, loss counts included.
func TestJITPerfEdges(t *testing.T) {
	needJIT(t)
	pi, ai, rdi, err := loadPerfProg(perfSizedCall(), EngineInterp)
	if err != nil {
		t.Fatal(err)
	}
	pj, aj, rdj, err := loadPerfProg(perfSizedCall(), EngineJIT)
	if err != nil {
		t.Fatal(err)
	}
	if jitArch && pj.jit.Load().native != 1 {
		t.Fatal("the output is not native")
	}
	ri, rj := NewRunner(0), NewRunner(0)
	fill := make([]byte, 512)
	sample := func(n int) int { return 8 + (n+11)&^7 } // perfSampleSize
	runs, refused := 0, 0
	for _, s1 := range []int{0, 52, 100, 501} {
		k := (perfTestRing - 1) / sample(s1)
		for _, lost := range []int{0, 1, 3} {
			for _, freed := range []int{0, 1, 2} {
				room := perfTestRing - (k-freed)*sample(s1)
				if lost != 0 {
					room -= 24
				}
				for _, ctx := range []int{0, 64} {
					for d := -24; d <= 24; d++ {
						s2 := room - 12 - ctx + d
						if s2 < 0 || s2 > 512 {
							continue
						}
						// An empty ring owing no loss record: a first
						// output pays what the last case left owed.
						perfSameRecords(t, rdi, rdj, -1, "drain")
						for _, a := range []*maps.PerfEventArray{ai, aj} {
							if err := a.Output(0, 0, nil, nil); err != nil {
								t.Fatal(err)
							}
						}
						perfSameRecords(t, rdi, rdj, -1, "drain")
						for _, a := range []*maps.PerfEventArray{ai, aj} {
							for range k {
								if err := a.Output(0, 0, fill[:s1], nil); err != nil {
									t.Fatal(err)
								}
							}
							for range lost {
								if err := a.Output(0, 0, fill[:s1], nil); !errors.Is(err, errNoSpaceTest) {
									t.Fatalf("a full ring: %v", err)
								}
							}
						}
						perfSameRecords(t, rdi, rdj, freed, "free")
						pkt := udpFrame(9)
						putLE32(pkt[0:], uint32(s2))
						putLE32(pkt[4:], 0)
						putLE32(pkt[8:], uint32(ctx))
						vi, oki := ri.RunFrame(pi, newFrame(pkt))
						vj, okj := rj.RunFrame(pj, newFrame(pkt))
						runs++
						what := fmt.Sprintf("samples of %d, %d lost, %d freed, size %d+%d", s1, lost, freed, s2, ctx)
						if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
							t.Fatalf("%s: interpreter %#x %v (%v), JIT %#x %v (%v)", what, vi, oki, ri.Fault(), vj, okj, rj.Fault())
						}
						if int32(vi) == -28 {
							refused++
						}
						perfSameRecords(t, rdi, rdj, -1, what)
					}
				}
			}
		}
	}
	if refused == 0 || refused == runs {
		t.Fatalf("%d of %d outputs refused: the edge was not crossed", refused, runs)
	}
	t.Logf("%d runs, %d refused", runs, refused)
}

var errNoSpaceTest = syscall.ENOSPC

// TestJITPerfConcurrent: native outputs on a small ring while a Go reader
// reads (blocking in Read, woken by the outputs that fit): every output is
// read, as a sample or in a loss record's count, and the program's own
// count of refusals is the losses reported.
func TestJITPerfConcurrent(t *testing.T) {
	needJIT(t)
	p, _, rd, err := loadPerfProg(perfSizedCall(), EngineJIT)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 20000
	var ok, refused int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := NewRunner(0)
		pkt := udpFrame(9)
		putLE32(pkt[0:], 40)
		putLE32(pkt[4:], 0xffffffff)
		putLE32(pkt[8:], 16)
		for i := range runs {
			v, good := r.RunFrame(p, newFrame(pkt))
			switch {
			case !good:
				t.Errorf("run %d: %v", i, r.Fault())
				return
			case v == 0:
				ok++
			case int32(v) == -28:
				refused++
			default:
				t.Errorf("run %d: %d", i, int32(v))
				return
			}
		}
		// The last output that fits carries the losses before it.
		for range 2000 {
			if v, _ := r.RunFrame(p, newFrame(pkt)); v == 0 {
				ok++
				return
			}
			refused++
			time.Sleep(time.Millisecond)
		}
		t.Error("the reader never made room")
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var samples, lost int
	for finished := false; ; {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		rec, err := rd.Read(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			if finished {
				break
			}
			select {
			case <-done:
				finished = true
			default:
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.RawSample == nil {
			lost += int(rec.LostSamples)
			continue
		}
		if len(rec.RawSample) != 60 || rec.FrameOffset != 40 || rec.FrameLen != 16 {
			t.Fatalf("record %+v", rec)
		}
		samples++
	}
	if samples != ok || lost != refused {
		t.Fatalf("read %d samples and %d lost, the program had %d and %d", samples, lost, ok, refused)
	}
	t.Logf("%d samples, %d refused", samples, refused)
}
