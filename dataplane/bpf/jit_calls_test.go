package bpf

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// callRecursion is f(n) = n(n+1) computed recursively with a local call
// per level, each level keeping its argument in r6 and on its own stack
// frame; with helper set, each level also calls bpf_get_numa_node_id
// (which runs in Go) before recursing. n = 7 needs a ninth frame: a call
// depth fault.
func callRecursion(n int32, helper bool) []byte {
	h := ins(0xb7, 2, 0, 0, 0) // r2 = 0, or the helper call
	if helper {
		h = ins(0x85, 0, 0, 0, 42) // call bpf_get_numa_node_id
	}
	return asmProg(
		ins(0xb7, 1, 0, 0, n),   // 0: r1 = n
		ins(0x85, 0, 1, 0, 1),   // 1: call f (3)
		exitInsn,                // 2
		ins(0x15, 1, 0, 9, 0),   // 3: f: if r1 == 0 goto 13
		ins(0xbf, 6, 1, 0, 0),   // 4: r6 = r1
		ins(0x7b, 10, 1, -8, 0), // 5: *(u64 *)(r10 - 8) = r1
		ins(0x17, 1, 0, 0, 1),   // 6: r1 -= 1
		h,                       // 7
		ins(0x85, 0, 1, 0, -6),  // 8: call f (3): backward
		ins(0x79, 1, 10, -8, 0), // 9: r1 = *(u64 *)(r10 - 8)
		ins(0x0f, 0, 1, 0, 0),   // 10: r0 += r1
		ins(0x0f, 0, 6, 0, 0),   // 11: r0 += r6
		exitInsn,                // 12
		ins(0xb7, 0, 0, 0, 0),   // 13: r0 = 0
		exitInsn)                // 14
}

// callCases are programs with bpf-to-bpf calls that the JIT compiles to
// native calls (no tail call in them), with their r0 as raw programs (0:
// they fault).
var callCases = []struct {
	name   string
	code   []byte
	budget int
	want   uint64
}{
	{"callee-saved", asmProg(
		ins(0xb7, 6, 0, 0, 6), ins(0xb7, 7, 0, 0, 7), ins(0xb7, 8, 0, 0, 8), ins(0xb7, 9, 0, 0, 9),
		ins(0x7a, 10, 0, -8, 1), // *(u64 *)(r10 - 8) = 1
		ins(0x85, 0, 1, 0, 7),   // call f (13)
		ins(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10 - 8)
		ins(0x0f, 0, 1, 0, 0),   // r0 += r1
		ins(0x0f, 0, 6, 0, 0), ins(0x0f, 0, 7, 0, 0), ins(0x0f, 0, 8, 0, 0), ins(0x0f, 0, 9, 0, 0),
		exitInsn,
		// f: its own frame; clobbers r6-r9 and its stack down to the
		// combined limit of 512 bytes the kernel allows.
		ins(0x7a, 10, 0, -8, 50), ins(0x7a, 10, 0, -496, 3),
		ins(0xb7, 6, 0, 0, 0), ins(0xb7, 7, 0, 0, 0), ins(0xb7, 8, 0, 0, 0), ins(0xb7, 9, 0, 0, 0),
		ins(0x79, 0, 10, -8, 0), ins(0x79, 1, 10, -496, 0), ins(0x0f, 0, 1, 0, 0),
		exitInsn), 0, 53 + 1 + 6 + 7 + 8 + 9},
	{"caller-stack-pointer", asmProg(
		ins(0x7a, 10, 0, -8, 3), // *(u64 *)(r10 - 8) = 3
		ins(0xbf, 1, 10, 0, 0),  // r1 = r10
		ins(0x07, 1, 0, 0, -8),  // r1 += -8
		ins(0x85, 0, 1, 0, 2),   // call f (6)
		ins(0x79, 0, 10, -8, 0), // r0 = *(u64 *)(r10 - 8)
		exitInsn,
		ins(0x79, 2, 1, 0, 0),  // f: r2 = *(u64 *)(r1 + 0)
		ins(0x27, 2, 0, 0, 10), // r2 *= 10
		ins(0x7b, 1, 2, 0, 0),  // *(u64 *)(r1 + 0) = r2
		ins(0xb7, 0, 0, 0, 0),
		exitInsn), 0, 30},
	{"helper-in-callee", asmProg(
		ins(0xb7, 6, 0, 0, 7),   // 0: r6 = 7
		ins(0x85, 0, 1, 0, 2),   // 1: call g (4)
		ins(0x0f, 0, 6, 0, 0),   // 2: r0 += r6
		exitInsn,                // 3
		ins(0xb7, 6, 0, 0, 100), // 4: g: r6 = 100
		ins(0x85, 0, 0, 0, 42),  // 5: call bpf_get_numa_node_id (Go)
		ins(0x85, 0, 1, 0, 2),   // 6: call h (9), after Go took the frames
		ins(0x0f, 0, 6, 0, 0),   // 7: r0 += r6
		exitInsn,                // 8
		ins(0xb7, 6, 0, 0, 1),   // 9: h: r6 = 1
		ins(0xb7, 0, 0, 0, 5),   // 10: r0 = 5
		exitInsn), 0, 112},
	{"call-in-bpf_loop-callback", asmProg(
		ins(0xb7, 1, 0, 0, 3),   // 0: r1 = 3
		lddw(2, pseudoFunc, 5),  // 1: r2 = &cb (7)
		ins(0xb7, 3, 0, 0, 0),   // 3: r3 = 0
		ins(0xb7, 4, 0, 0, 0),   // 4: r4 = 0
		ins(0x85, 0, 0, 0, 181), // 5: call bpf_loop (native: jit_loop.go)
		exitInsn,                // 6: r0 = 3 iterations
		ins(0x85, 0, 1, 0, 2),   // 7: cb: call g (10)
		ins(0xb7, 0, 0, 0, 0),   // 8: r0 = 0: go on
		exitInsn,                // 9
		ins(0xb7, 6, 0, 0, 5),   // 10: g: r6 = 5
		ins(0x85, 0, 0, 0, 42),  // 11: call bpf_get_numa_node_id
		ins(0xbf, 0, 6, 0, 0),   // 12: r0 = r6
		exitInsn), 0, 3},
	{"chain-4", callChain(4), 0, 2},
	{"chain-8-depth", callChain(8), 0, 0},
	{"recursion-6", callRecursion(6, false), 0, 42},
	{"recursion-6-helpers", callRecursion(6, true), 0, 42},
	{"recursion-7-depth", callRecursion(7, false), 0, 0},
	{"recursion-7-depth-helpers", callRecursion(7, true), 0, 0},
	{"recursion-budget", callRecursion(6, false), 30, 0},
	{"recursion-budget-helpers", callRecursion(6, true), 30, 0},
}

// TestJITCalls: programs with bpf-to-bpf calls give the interpreter's
// results, faults (call depth, budget) and memory through the JIT, whose
// backends compile their calls natively.
func TestJITCalls(t *testing.T) {
	needJIT(t)
	for _, c := range callCases {
		t.Run(c.name, func(t *testing.T) {
			pi, pj, err := loadPair(t, c.name, c.code, c.budget)
			if err != nil {
				t.Fatal(err)
			}
			if j := pj.jit.Load(); j.calls == 0 {
				t.Errorf("no call compiled natively")
			}
			got, err := NewRunner(0).RunRaw(pj, make([]byte, 8))
			if c.want != 0 && (got != c.want || err != nil) {
				t.Errorf("r0 %d (%v), want %d", got, err, c.want)
			}
			if c.want == 0 && err == nil {
				t.Errorf("r0 %d, want a fault", got)
			}
			runBoth(t, pi, pj, udpFrame(1))
			burstBoth(t, pi, pj, udpFrame(1))
		})
	}
}

// burstBoth runs a burst of frames through RunBurst with the JIT and Run
// with the interpreter: the same verdicts.
func burstBoth(t *testing.T, pi, pj *Program, pkt []byte) {
	t.Helper()
	frames := make([]Frame, 8)
	for i := range frames {
		frames[i] = *newFrame(pkt)
	}
	verdicts := make([]Action, len(frames))
	NewRunner(0).RunBurst(pj, frames, verdicts, nil)
	ri := NewRunner(0)
	for i := range frames {
		if a := ri.Run(pi, newFrame(pkt)); a != verdicts[i] {
			t.Errorf("frame %d: burst %v, interpreter %v", i, verdicts[i], a)
		}
	}
}

// callChain is main calling f1, f1 calling f2, ... fn: each level keeps
// its argument in r6 and on its stack frame, passes it plus one on and
// adds both to what the next returns; the verdict is XDP_PASS. (The
// kernel refuses recursion, so its benchmark needs distinct functions.)
func callChain(n int) []byte {
	code := asmProg(
		ins(0xb7, 1, 0, 0, 1), // r1 = 1
		ins(0x85, 0, 1, 0, 3), // call f1 (5)
		ins(0x57, 0, 0, 0, 1), // r0 &= 1
		ins(0x07, 0, 0, 0, 2), // r0 += 2: XDP_PASS
		exitInsn)
	for range n - 1 {
		code = append(code, asmProg(
			ins(0xbf, 6, 1, 0, 0),   // r6 = r1
			ins(0x7b, 10, 1, -8, 0), // *(u64 *)(r10 - 8) = r1
			ins(0x07, 1, 0, 0, 1),   // r1 += 1
			ins(0x85, 0, 1, 0, 4),   // call the next function
			ins(0x0f, 0, 6, 0, 0),   // r0 += r6
			ins(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10 - 8)
			ins(0x0f, 0, 1, 0, 0),   // r0 += r1
			exitInsn)...)
	}
	return append(code, asmProg(ins(0xbf, 0, 1, 0, 0), exitInsn)...) // fn: r0 = r1
}

// BenchmarkCalls runs callChain(4) (four local calls and returns per run,
// each with a stack frame) through the interpreter and the JIT in bursts,
// and in the kernel with BPF_PROG_TEST_RUN (as root) on the same bytes and
// frame: ns per run of each, and the ratio to the kernel.
func BenchmarkCalls(b *testing.B) {
	code := callChain(4)
	pkt := udpFrame(1)
	kernelNs := 0.0
	if kernelxdp.Available() == nil {
		fd, err := kernelLoad(code)
		if err != nil {
			b.Fatalf("kernel: %v", err)
		}
		kp, err := ebpf.NewProgramFromFD(fd)
		if err != nil {
			b.Fatal(err)
		}
		defer kp.Close()
		per, ret, err := kernelxdp.Bench(kp, pkt, 1000000)
		if err != nil || ret != uint32(ActionPass) {
			b.Fatalf("kernel: %v, r0 %d", err, ret)
		}
		kernelNs = float64(per.Nanoseconds())
	}
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		b.Run(e.String(), func(b *testing.B) {
			p, err := LoadRaw("calls", code, &Options{Engine: e})
			if err != nil {
				b.Fatal(err)
			}
			ns, v := burstCPUNs(b, p, pkt) // jit_loop_test.go
			if v != ActionPass {
				b.Fatalf("verdict %v", v)
			}
			if kernelNs > 0 {
				b.ReportMetric(kernelNs, "kernel-ns/run")
				b.ReportMetric(ns/kernelNs, "xnic/kernel")
			}
		})
	}
}

// TestJITCallsMatchKernel runs the call programs the kernel accepts in the kernel with BPF_PROG_TEST_RUN and through
// xnic's JIT on the same frame: the same raw return value.
func TestJITCallsMatchKernel(t *testing.T) {
	needJIT(t)
	if err := kernelxdp.Available(); err != nil {
		t.Skipf("no kernel test run: %v", err)
	}
	pkt := udpFrame(1)
	compared := 0
	for _, c := range callCases {
		// The kernel refuses recursion, and callbacks without BTF
		// func_info, which raw bytes lack.
		if c.want == 0 || strings.HasPrefix(c.name, "recursion") || strings.Contains(c.name, "bpf_loop") {
			continue
		}
		compared++
		fd, err := kernelLoad(c.code)
		if err != nil {
			t.Errorf("%s: kernel refuses it: %v", c.name, err)
			continue
		}
		kp, err := ebpf.NewProgramFromFD(fd)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kp.Run(&ebpf.RunOptions{Data: pkt})
		kp.Close()
		if err != nil {
			t.Fatalf("%s: kernel run: %v", c.name, err)
		}
		p, err := LoadRaw(c.name, c.code, &Options{Engine: EngineJIT})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := NewRunner(0).RunFrame(p, newFrame(pkt))
		if !ok || got != want {
			t.Errorf("%s: xnic %d (%v), kernel %d", c.name, got, ok, want)
		}
	}
	if compared < 4 {
		t.Errorf("compared %d programs with the kernel, want 4", compared)
	}
}
