package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// loopProg is a program calling bpf_loop(nr, cb, &counter on the stack,
// flags) with the callback body cb (r1 the index, r2 the counter's
// address; it adds index+1 to the counter first), returning r0 plus the
// counter times 1000 plus r1-r5 after the call (the interpreter keeps
// them: its callbacks run in a register file of their own).
func loopProg(nr uint64, flags int32, cb ...[]byte) []byte {
	body := asmProg(cb...)
	head := asmProg(
		ins(0xbf, 6, 1, 0, 0),   // 0: r6 = ctx
		ins(0x7a, 10, 0, -8, 0), // 1: *(u64 *)(r10 - 8) = 0
		lddw(1, 0, nr),          // 2: r1 = nr
		lddw(2, pseudoFunc, 0),  // 4: r2 = cb (patched)
		ins(0xbf, 3, 10, 0, 0),  // 6: r3 = r10
		ins(0x07, 3, 0, 0, -8),  // 7: r3 += -8
		ins(0xb7, 4, 0, 0, flags),
		ins(0xb7, 5, 0, 0, 77),  // 9: r5 = 77
		ins(0x85, 0, 0, 0, 181), // 10: call bpf_loop
		ins(0x79, 7, 10, -8, 0), // 11: r7 = counter
		ins(0x27, 7, 0, 0, 1000),
		ins(0x0f, 0, 7, 0, 0),
		ins(0x0f, 0, 1, 0, 0), ins(0x0f, 0, 2, 0, 0), ins(0x0f, 0, 3, 0, 0),
		ins(0x0f, 0, 4, 0, 0), ins(0x0f, 0, 5, 0, 0),
		exitInsn)
	cbAt := len(head) / 8
	binary.LittleEndian.PutUint32(head[4*8+4:], uint32(cbAt-5)) // relative to the lddw's next slot
	count := asmProg(
		ins(0x79, 3, 2, 0, 0), // r3 = *(u64 *)(r2 + 0)
		ins(0x0f, 3, 1, 0, 0), // r3 += r1
		ins(0x07, 3, 0, 0, 1), // r3 += 1
		ins(0x7b, 2, 3, 0, 0)) // *(u64 *)(r2 + 0) = r3
	return asmProg(head, count, body)
}

var (
	ret0 = asmProg(ins(0xb7, 0, 0, 0, 0), exitInsn)
	ret2 = asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn)
)

// retAt returns 1 (stop) at index k, else 0.
func retAt(k int32) []byte {
	return asmProg(ins(0xb7, 0, 0, 0, 0), ins(0x55, 1, 0, 1, k), ins(0xb7, 0, 0, 0, 1), exitInsn)
}

// loopCases are bpf_loop programs at the edges: counts, flags, returns,
// callbacks that leave for Go, nested loops, budget and depth.
func loopCases() []struct {
	name   string
	code   []byte
	budget int
} {
	zeros := asmProg( // the interpreter gives the callback r0, r3-r9 zero
		ins(0x0f, 0, 4, 0, 0), ins(0x0f, 0, 5, 0, 0), ins(0x0f, 0, 6, 0, 0),
		ins(0x0f, 0, 7, 0, 0), ins(0x0f, 0, 8, 0, 0), ins(0x0f, 0, 9, 0, 0),
		ins(0x15, 0, 0, 1, 0), ins(0xb7, 0, 0, 0, 1), exitInsn)
	numa := ins(0x85, 0, 0, 0, 42) // bpf_get_numa_node_id: runs in Go
	// A backward loop of n rounds in the callback, charging the budget.
	spin := func(n int32) []byte {
		return asmProg(ins(0xb7, 4, 0, 0, n), ins(0x07, 4, 0, 0, -1), ins(0x55, 4, 0, -2, 0))
	}
	// The callback calls bpf_loop(2, itself): nesting until the depth
	// limit faults.
	nest := asmProg(ins(0xbf, 3, 2, 0, 0), ins(0xb7, 1, 0, 0, 2),
		lddw(2, pseudoFunc, uint64(^uint32(0)-10)), // back to the callback's start
		ins(0xb7, 4, 0, 0, 0), ins(0x85, 0, 0, 0, 181), ins(0xb7, 0, 0, 0, 0), exitInsn)
	// A local call from the callback to a function that calls Go.
	local := asmProg(ins(0x85, 0, 1, 0, 2), ins(0xb7, 0, 0, 0, 0), exitInsn,
		ins(0xb7, 6, 0, 0, 5), numa, ins(0xbf, 0, 6, 0, 0), exitInsn)
	type tc = struct {
		name   string
		code   []byte
		budget int
	}
	cs := []tc{
		{"nr-0", loopProg(0, 0, ret0), 0},
		{"nr-1", loopProg(1, 0, ret0), 0},
		{"nr-5", loopProg(5, 0, ret0), 0},
		{"nr-max-stop", loopProg(loopMax, 0, retAt(300)), 0},
		{"nr-max-budget", loopProg(loopMax, 0, ret0), 0},
		{"nr-over-max", loopProg(loopMax+1, 0, ret0), 0},
		{"nr-huge", loopProg(1<<40, 0, ret0), 0},
		{"flags-1", loopProg(3, 1, ret0), 0},
		{"flags-over-max", loopProg(loopMax+1, 1, ret0), 0},
		{"ret-1-first", loopProg(9, 0, retAt(0)), 0},
		{"ret-1-last", loopProg(9, 0, retAt(8)), 0},
		{"ret-2", loopProg(9, 0, ret2), 0},
		{"ret-minus-1", loopProg(4, 0, asmProg(ins(0xb7, 0, 0, 0, -1), exitInsn)), 0},
		{"zeroed-registers", loopProg(3, 0, zeros), 0},
		{"helper-in-callback", loopProg(6, 0, numa, retAt(4)), 0},
		{"helper-every-round", loopProg(40, 0, numa, ret0), 0},
		{"local-call-to-go", loopProg(5, 0, local), 0},
		{"budget-exact", loopProg(10, 0, ret0), 10 * 7},
		{"budget-exact-less-1", loopProg(10, 0, ret0), 10*7 - 1},
		{"budget-mid-loop", loopProg(10, 0, ret0), 5*7 + 3},
		{"budget-in-callback", loopProg(10, 0, spin(20), ret0), 100},
		{"budget-in-callback-go", loopProg(10, 0, numa, spin(20), ret0), 150},
		{"nested-depth", loopProg(2, 0, nest), 0},
	}
	// The nested loop's lddw must point at the callback's first slot.
	for _, c := range cs {
		if c.name == "nested-depth" {
			fixNest(c.code)
		}
	}
	return cs
}

// fixNest points the callback's own lddw of a function (the second one
// in the program) at the callback's start (slot 20, after loopProg's 20
// slots of head).
func fixNest(code []byte) {
	seen := 0
	for s := 0; s+8 <= len(code); s += 8 {
		if code[s] == 0x18 && code[s+1]>>4 == pseudoFunc {
			seen++
			if seen == 2 {
				binary.LittleEndian.PutUint32(code[s+4:], uint32(int32(20-(s/8+1))))
			}
			s += 8
		}
	}
}

// loopFaults are the faults of loopCases' raw runs (none when absent).
var loopFaults = map[string]string{
	"nr-max-budget":         "instruction budget",
	"budget-exact-less-1":   "instruction budget",
	"budget-mid-loop":       "instruction budget",
	"budget-in-callback":    "instruction budget",
	"budget-in-callback-go": "instruction budget",
	"nested-depth":          "call stack deeper",
}

// TestJITLoop: bpf_loop programs give the interpreter's results, faults
// and memory through the JIT, which runs the loop natively.
func TestJITLoop(t *testing.T) {
	needJIT(t)
	for _, c := range loopCases() {
		t.Run(c.name, func(t *testing.T) {
			pi, pj, err := loadPair(t, c.name, c.code, c.budget)
			if err != nil {
				t.Fatal(err)
			}
			if j := pj.jit.Load(); j.native == 0 {
				t.Errorf("bpf_loop not compiled natively\n%s", pj.Disasm())
			}
			runBoth(t, pi, pj, udpFrame(1))
			burstBoth(t, pi, pj, udpFrame(1))
			r := NewRunner(0)
			_, err = r.RunRaw(pj, make([]byte, 8))
			if want := loopFaults[c.name]; err == nil && want != "" || err != nil && (want == "" || !strings.Contains(err.Error(), want)) {
				t.Errorf("raw run: %v, want %q", err, want)
			}
		})
	}
}

// TestJITLoopResults pins some results the differential test compares, so
// that both engines being wrong the same way fails too.
func TestJITLoopResults(t *testing.T) {
	needJIT(t)
	regs := func(nr uint64) uint64 { // r1-r5 after the call
		return nr + (regionFunc<<32 | 20) + (regionStack<<32 | (stackSize - 8)) + 0 + 77
	}
	sum := func(n uint64) uint64 { return n * (n + 1) / 2 * 1000 }
	for _, c := range []struct {
		name string
		code []byte
		want uint64
	}{
		{"nr-0", loopProg(0, 0, ret0), 0 + regs(0)},
		{"nr-5", loopProg(5, 0, ret0), 5 + sum(5) + regs(5)},
		{"ret-1-at-3", loopProg(9, 0, retAt(3)), 4 + sum(4) + regs(9)},
		{"ret-2", loopProg(9, 0, ret2), 9 + sum(9) + regs(9)},
		{"flags", loopProg(9, 1, ret0), uint64(1<<64-22) + regs(9) + 1}, // r4 keeps the flags
		{"over-max", loopProg(loopMax+1, 0, ret0), uint64(1<<64-7) + regs(loopMax+1)},
	} {
		p, err := LoadRaw(c.name, c.code, &Options{Engine: EngineJIT})
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewRunner(0).RunRaw(p, make([]byte, 8))
		if err != nil || got != c.want {
			t.Errorf("%s: r0 %#x (%v), want %#x", c.name, got, err, c.want)
		}
	}
}

// TestJITLoopMaps: a callback that looks up and updates an array map and
// a hash map (the first lookup of a value leaves for Go mid-loop) and
// writes the packet, in both engines: the same verdicts and maps.
func TestJITLoopMaps(t *testing.T) {
	needJIT(t)
	cb := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R2).WithSymbol("cb"), // the context
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R7, asm.R1),
		asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "nohit"),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, 1),
		asm.StoreMem(asm.R0, 0, asm.R3, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("hash").WithSymbol("nohit"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pkt"),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R3, 3),
		asm.StoreMem(asm.R0, 0, asm.R3, asm.DWord),
		// The packet: byte 20+i of the frame += i, when in bounds.
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word).WithSymbol("pkt"),
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Add.Reg(asm.R2, asm.R7),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 21),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R5, asm.R2, 20, asm.Byte),
		asm.Add.Reg(asm.R5, asm.R7),
		asm.StoreMem(asm.R2, 20, asm.R5, asm.Byte),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.JNE.Imm(asm.R7, 50, "ret"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return().WithSymbol("ret"),
	}
	for _, nr := range []int32{0, 1, 3, 7, 60, 100} {
		t.Run(fmt.Sprint(nr), func(t *testing.T) {
			insns := asm.Instructions{
				asm.Mov.Reg(asm.R3, asm.R1),
				asm.Mov.Imm(asm.R1, nr),
				asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc},
				asm.Mov.Imm(asm.R4, 0),
				asm.FnLoop.Call(),
				asm.JSGT.Imm(asm.R0, 55, "drop"),
				asm.Mov.Imm(asm.R0, int32(ActionPass)),
				asm.Return(),
				asm.Mov.Imm(asm.R0, int32(ActionDrop)).WithSymbol("drop"),
				asm.Return(),
			}
			insns[2].Constant = int64(len(insns) + 1 - 3) // slots: the lddw counts two
			insns = append(insns, cb...)
			ci, pi, err := loadMapProg(insns, EngineInterp)
			if err != nil {
				t.Fatal(err)
			}
			defer ci.Close()
			cj, pj, err := loadMapProg(insns, EngineJIT)
			if err != nil {
				t.Fatal(err)
			}
			defer cj.Close()
			for _, c := range []*Collection{ci, cj} {
				h, _ := c.Map("hash")
				for k := uint32(0); k < 4; k += 2 {
					if err := h.Update(u32key(k), make([]byte, 8), 0, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			ri, rj := NewRunner(0), NewRunner(0)
			for run := range 4 {
				pkt := udpFrame(uint16(run))
				fi, fj := newFrame(pkt), newFrame(pkt)
				ai, aj := ri.Run(pi, fi), rj.Run(pj, fj)
				if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("run %d: interpreter %v (%v), JIT %v (%v)", run, ai, ri.Fault(), aj, rj.Fault())
				}
				if !bytes.Equal(fi.Buf, fj.Buf) {
					t.Fatalf("run %d: frames differ", run)
				}
				if mi, mj := mapBytes(t, ci), mapBytes(t, cj); !bytes.Equal(mi, mj) {
					t.Fatalf("run %d: maps differ:\ninterp %x\njit    %x", run, mi, mj)
				}
			}
			if arr, _ := cj.Map("arr"); nr > 0 && mapU64(t, arr, 0) != 4 {
				t.Errorf("arr[0] = %d after 4 runs, want 4", mapU64(t, arr, 0))
			}
		})
	}
}

// FuzzJITLoop: bpf_loop with a random callback body (after the counter
// update), count and flags gives the same results in both engines.
func FuzzJITLoop(f *testing.F) {
	needJIT(f)
	f.Add(uint32(5), uint8(0), asmProg(ins(0x85, 0, 0, 0, 42), ins(0xb7, 0, 0, 0, 2)))
	f.Add(uint32(loopMax), uint8(0), asmProg(ins(0x07, 1, 0, 0, -7), ins(0xbf, 0, 1, 0, 0)))
	f.Add(uint32(3), uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, nr uint32, flags uint8, body []byte) {
		code := loopProg(uint64(nr)%(loopMax+2), int32(flags%2), sanitize(body))
		pi, pj, err := loadPair(t, "loopfuzz", code, 50000)
		if err != nil {
			return
		}
		runBoth(t, pi, pj, udpFrame(1))
	})
}

// BenchmarkJITLoop runs a bpf_loop of 64 iterations (the callback adds
// its index to a counter on the caller's stack, as xdp_events' sum_step
// walks its bytes) per run, in bursts: in the interpreter, through the
// JIT with the loop in Go (r2 copied from another register, which the
// native loop does not take: what the JIT did before), and natively.
func BenchmarkJITLoop(b *testing.B) {
	native := loopProg(64, 0, ret0)
	inGo := bytes.Clone(native)
	// Slot 9 (r5 = 77) becomes r2 |= 0, which hides the callback's lddw
	// from loopCallback.
	copy(inGo[9*8:], ins(0x47, 2, 0, 0, 0))
	for _, c := range []struct {
		name string
		code []byte
		e    Engine
	}{{"interp", native, EngineInterp}, {"jit-loop-in-go", inGo, EngineJIT}, {"jit-native", native, EngineJIT}} {
		b.Run(c.name, func(b *testing.B) {
			p, err := LoadRaw("loop", c.code, &Options{Engine: c.e})
			if err != nil {
				b.Fatal(err)
			}
			if v, err := NewRunner(0).RunRaw(p, make([]byte, 8)); err != nil || v == 0 {
				b.Fatalf("r0 %d (%v)", v, err)
			}
			burstCPUNs(b, p, udpFrame(1))
		})
	}
}

// burstCPUNs runs p on bursts of 32 frames holding pkt for b's iterations
// and reports (and returns) the thread's CPU time per run, as the
// kernel's test run counts only its own (the machine may be shared), with
// the first frame's verdict.
func burstCPUNs(b *testing.B, p *Program, pkt []byte) (float64, Action) {
	frames := make([]Frame, 32)
	for i := range frames {
		frames[i] = *newFrame(pkt)
	}
	verdicts := make([]Action, len(frames))
	r := NewRunner(0)
	r.RunBurst(p, frames, verdicts, nil)
	first := verdicts[0]
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu0 := threadCPU()
	for b.Loop() {
		r.RunBurst(p, frames, verdicts, nil)
	}
	ns := float64((threadCPU() - cpu0).Nanoseconds()) / float64(b.N*len(frames))
	b.ReportMetric(ns, "cpu-ns/run")
	return ns, first
}

// TestJITLoopStaleProof: a packet access the caller proved in bounds
// before a bpf_loop whose callback moves the packet's start
// (bpf_xdp_adjust_head) is checked again after the loop: the read of the
// old start faults in both engines, the read near the old end does not.
func TestJITLoopStaleProof(t *testing.T) {
	needJIT(t)
	code := func(off int16) []byte {
		c := asmProg(
			ins(0xbf, 6, 1, 0, 0),   // 0: r6 = ctx
			ins(0x61, 7, 6, 0, 0),   // 1: r7 = data
			ins(0x61, 8, 6, 4, 0),   // 2: r8 = data_end
			ins(0xbf, 1, 7, 0, 0),   // 3: r1 = r7
			ins(0x07, 1, 0, 0, 14),  // 4: r1 += 14
			ins(0x2d, 1, 8, 9, 0),   // 5: if r1 > r8 goto 15
			ins(0xb7, 1, 0, 0, 1),   // 6: r1 = 1
			lddw(2, pseudoFunc, 9),  // 7: r2 = cb (17)
			ins(0xbf, 3, 6, 0, 0),   // 9: r3 = ctx
			ins(0xb7, 4, 0, 0, 0),   // 10: r4 = 0
			ins(0x85, 0, 0, 0, 181), // 11: call bpf_loop
			ins(0x71, 0, 7, off, 0), // 12: r0 = *(u8 *)(r7 + off): proven before the call
			ins(0x57, 0, 0, 0, 1),   // 13: r0 &= 1
			ins(0x07, 0, 0, 0, 1),   // 14: r0 += 1: XDP_DROP or XDP_PASS
			exitInsn,                // 15
			exitInsn,                // 16
			ins(0xbf, 1, 2, 0, 0),   // 17: cb: r1 = ctx
			ins(0xb7, 2, 0, 0, 40),  // 18: r2 = 40
			ins(0x85, 0, 0, 0, 44),  // 19: call bpf_xdp_adjust_head
			ins(0xb7, 0, 0, 0, 0),   // 20: r0 = 0
			exitInsn)                // 21
		return c
	}
	for _, c := range []struct {
		off   int16
		fault bool
	}{{0, true}, {13, true}, {50, false}} {
		pi, pj, err := loadPair(t, "stale", code(c.off), 0)
		if err != nil {
			t.Fatal(err)
		}
		runBoth(t, pi, pj, udpFrame(1))
		r := NewRunner(0)
		a := r.Run(pj, newFrame(udpFrame(1)))
		if got := r.Fault() != nil; got != c.fault || c.fault && a != ActionAborted {
			t.Errorf("offset %d: %v (%v), want a fault: %v", c.off, a, r.Fault(), c.fault)
		}
	}
}
