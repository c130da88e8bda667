package bpf

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

// needJIT skips on platforms without a JIT backend (there the interpreter is
// the only engine and the other tests cover it).
func needJIT(t testing.TB) {
	t.Helper()
	if !JITAvailable() {
		t.Skip("no JIT on this platform")
	}
}

// loadPair loads code twice: for the interpreter and for the JIT.
func loadPair(t testing.TB, name string, code []byte, budget int) (interp, jit *Program, err error) {
	t.Helper()
	interp, err = LoadRaw(name, code, &Options{InsnBudget: budget, Engine: EngineInterp})
	if err != nil {
		return nil, nil, err
	}
	jit, err = LoadRaw(name, code, &Options{InsnBudget: budget, Engine: EngineJIT})
	if err != nil {
		t.Fatalf("%s: the interpreter loads it, the JIT does not: %v", name, err)
	}
	if interp.Engine() != EngineInterp || jit.Engine() != EngineJIT {
		t.Fatalf("%s: engines %v and %v", name, interp.Engine(), jit.Engine())
	}
	return interp, jit, nil
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestJITConformance runs the bpf_conformance corpus through the JIT and the
// interpreter: the same r0 or the same error text for every test, and the
// corpus's expected result.
func TestJITConformance(t *testing.T) {
	needJIT(t)
	cases := readCorpus(t)
	if len(cases) != 313 {
		t.Errorf("corpus has %d tests, want 313", len(cases))
	}
	ri, rj := NewRunner(0), NewRunner(0)
	pass := 0
	for _, c := range cases {
		code, err := hex.DecodeString(c.ProgramHex)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		mem, err := hex.DecodeString(c.MemHex)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		pi, pj, err := loadPair(t, c.Name, code, 0)
		if err != nil {
			if c.Error == "" {
				t.Errorf("%s: load: %v", c.Name, err)
			} else {
				pass++
			}
			continue
		}
		memI, memJ := bytes.Clone(mem), bytes.Clone(mem)
		gi, ei := ri.RunRaw(pi, memI)
		gj, ej := rj.RunRaw(pj, memJ)
		if gi != gj || errString(ei) != errString(ej) || !bytes.Equal(memI, memJ) {
			t.Errorf("%s: interpreter %#x, %v; JIT %#x, %v", c.Name, gi, ei, gj, ej)
			continue
		}
		if c.Error != "" {
			if ej == nil {
				t.Errorf("%s: ran to %#x, want error %q", c.Name, gj, c.Error)
				continue
			}
		} else if ej != nil || gj != c.Result {
			t.Errorf("%s: JIT r0 = %#x (%v), want %#x", c.Name, gj, ej, c.Result)
			continue
		}
		pass++
	}
	t.Logf("conformance through the JIT: %d/%d passed", pass, len(cases))
}

// runBoth runs the pair on copies of pkt as XDP programs and as raw
// programs, and fails unless every observable result is the same: verdict,
// raw return value, fault text, frame bytes and offsets, raw memory.
func runBoth(t *testing.T, pi, pj *Program, pkt []byte) {
	t.Helper()
	ri, rj := NewRunner(0), NewRunner(0)
	ri.rng, rj.rng = 12345, 12345 // the same bpf_get_prandom_u32 sequence
	fi, bigI := guardedFrame(pkt)
	fj, bigJ := guardedFrame(pkt)
	ai := ri.Run(pi, fi)
	aj := rj.Run(pj, fj)
	if rj.faulted && rj.faultKind == faultInternal {
		t.Fatalf("JIT run hit an internal fault: %v\n%s", rj.Fault(), pj.Disasm())
	}
	if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("verdict: interpreter %v (%v), JIT %v (%v)\n%s", ai, ri.Fault(), aj, rj.Fault(), pj.Disasm())
	}
	if !bytes.Equal(bigI, bigJ) || fi.DataMeta != fj.DataMeta || fi.Data != fj.Data || fi.DataEnd != fj.DataEnd {
		t.Fatalf("frames differ after the run\n%s", pj.Disasm())
	}
	if !canariesIntact(bigJ) {
		t.Fatalf("JIT changed memory outside the frame\n%s", pj.Disasm())
	}
	if ai == ActionRedirect && ri.Redirect() != rj.Redirect() {
		t.Fatalf("redirect: interpreter %+v, JIT %+v", ri.Redirect(), rj.Redirect())
	}
	// RunFrame: the raw 32-bit value.
	resetGuarded(fi, bigI, pkt)
	resetGuarded(fj, bigJ, pkt)
	vi, oki := ri.RunFrame(pi, fi)
	vj, okj := rj.RunFrame(pj, fj)
	if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("RunFrame: interpreter %#x %v (%v), JIT %#x %v (%v)\n%s", vi, oki, ri.Fault(), vj, okj, rj.Fault(), pj.Disasm())
	}
	// Raw: r1 = memory, r2 = its length.
	mi, mj := bytes.Clone(pkt), bytes.Clone(pkt)
	gi, ei := ri.RunRaw(pi, mi)
	gj, ej := rj.RunRaw(pj, mj)
	if gi != gj || errString(ei) != errString(ej) || !bytes.Equal(mi, mj) {
		t.Fatalf("raw: interpreter %#x (%v), JIT %#x (%v)\n%s", gi, ei, gj, ej, pj.Disasm())
	}
}

func resetGuarded(f *Frame, big, pkt []byte) {
	for i := range big {
		big[i] = 0xa5
	}
	clear(f.Buf)
	copy(f.Buf[testHeadroom:], pkt)
	f.DataMeta, f.Data, f.DataEnd = testHeadroom, testHeadroom, testHeadroom+len(pkt)
}

// jitDiff loads a sanitised random program in both engines and compares
// them on pkt.
func jitDiff(t *testing.T, prog, pkt []byte) {
	code := deterministic(sanitize(prog))
	pi, pj, err := loadPair(t, "fuzz", code, 20000)
	if err != nil {
		return
	}
	runBoth(t, pi, pj, pkt)
}

// deterministic replaces calls of the clock helpers, whose results differ
// from run to run, with bpf_get_smp_processor_id.
func deterministic(code []byte) []byte {
	for i := 0; i+8 <= len(code); i += 8 {
		if code[i] != 0x85 || code[i+1]>>4 != 0 {
			continue
		}
		switch int32(binary.LittleEndian.Uint32(code[i+4:])) {
		case helperKtimeGetNs, helperKtimeGetBootNs, helperKtimeGetCoarseNs, helperKtimeGetTaiNs:
			binary.LittleEndian.PutUint32(code[i+4:], uint32(helperGetSmpProcessor))
		}
	}
	return code
}

// FuzzJIT: random programs on random frames give identical results in the
// interpreter and the JIT (verdict, frame bytes, fault reason, raw r0 and
// memory), and the JIT never touches memory outside the frame.
func FuzzJIT(f *testing.F) {
	needJIT(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, prog, pkt []byte) {
		jitDiff(t, prog, pkt)
	})
}

// TestJITRandom is FuzzJIT on a fixed set of random inputs, so that every
// test run compares the engines on many programs.
func TestJITRandom(t *testing.T) {
	needJIT(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		prog := make([]byte, 8*(1+rng.IntN(64)))
		for j := range prog {
			prog[j] = byte(rng.Uint32())
		}
		pkt := udpFrame(uint16(rng.IntN(100)))
		if rng.IntN(4) == 0 {
			pkt = make([]byte, rng.IntN(200))
			for j := range pkt {
				pkt[j] = byte(rng.Uint32())
			}
		}
		jitDiff(t, prog, pkt)
	}
}

// TestJITLoops covers what random programs rarely reach: the budget on
// backward jumps (plain and with a fused move in front), local calls and
// their depth limit, division by zero, shifts by a register through every
// register.
func TestJITLoops(t *testing.T) {
	needJIT(t)
	progs := map[string][]byte{
		"endless": asmProg(ins(0xb7, 0, 0, 0, 1), ins(0x05, 0, 0, -1, 0), exitInsn),
		"endless-cond": asmProg(ins(0xb7, 1, 0, 0, 0),
			ins(0x07, 1, 0, 0, 1), ins(0x55, 1, 0, -2, 0x7fffffff), exitInsn),
		// wX = K; if r1 != 0 goto back: the interpreter fuses the move
		// and the jump, charging from the move.
		"fused-move": asmProg(ins(0xb7, 1, 0, 0, 1),
			ins(0x07, 1, 0, 0, 1), ins(0xb4, 0, 0, 0, 2), ins(0x55, 1, 0, -3, 0), exitInsn),
		"recurse": asmProg(ins(0x85, 0, 1, 0, -1), exitInsn),
		"div0": asmProg(ins(0xb7, 0, 0, 0, 7), ins(0xb7, 1, 0, 0, 0),
			ins(0x3f, 0, 1, 0, 0), ins(0x07, 0, 0, 0, 5), ins(0x9f, 0, 1, 0, 0), exitInsn),
		"sdiv-min": asmProg(ins(0x18, 0, 0, 0, 0), ins(0, 0, 0, 0, -0x80000000),
			ins(0x3f, 0, 0, 1, 0), exitInsn),
		"loop-call": asmProg(ins(0xb7, 6, 0, 0, 100),
			ins(0x85, 0, 1, 0, 3), ins(0x07, 6, 0, 0, -1), ins(0x55, 6, 0, -3, 0), exitInsn,
			ins(0xbf, 0, 6, 0, 0), exitInsn),
	}
	for r := byte(0); r <= 9; r++ {
		for s := byte(0); s <= 9; s++ {
			progs[fmt.Sprintf("shift-r%d-r%d", r, s)] = asmProg(
				ins(0xb7, r, 0, 0, -3), ins(0xb7, s, 0, 0, 35), ins(0xb7, 4, 0, 0, 7),
				ins(0x6f, r, s, 0, 0), ins(0xcc, r, s, 0, 0), ins(0x7c, r, s, 0, 0),
				ins(0xbf, 0, r, 0, 0), ins(0x0f, 0, 4, 0, 0), exitInsn)
		}
	}
	for name, code := range progs {
		pi, pj, err := loadPair(t, name, code, 5000)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runBoth(t, pi, pj, udpFrame(7))
	}
}

// TestJITReference runs the reference parser through both engines on
// frames it passes, drops and mangles.
func TestJITReference(t *testing.T) {
	needJIT(t)
	ci := loadTestdata(t, "parse.o", &Options{Engine: EngineInterp})
	cj := loadTestdata(t, "parse.o", &Options{Engine: EngineJIT})
	pi, _ := ci.DefaultXDP()
	pj, _ := cj.DefaultXDP()
	if pj.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		pkt := udpFrame(uint16(rng.IntN(80)))
		if i%3 == 0 {
			pkt[rng.IntN(len(pkt))] ^= byte(rng.Uint32())
			pkt = pkt[:rng.IntN(len(pkt)+1)]
		}
		runBoth(t, pi, pj, pkt)
	}
}

// TestJITWX: the code mapping is never writable once sealed, and Close
// unmaps it (the program then runs in the interpreter, with the same
// results).
func TestJITWX(t *testing.T) {
	needJIT(t)
	c, err := LoadFile("testdata/parse.o", &Options{NumCPU: 2, Engine: EngineJIT})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.DefaultXDP()
	j := p.jit.Load()
	if j == nil {
		t.Fatal("no native code")
	}
	perm := mappingPerm(t, j.base)
	if perm != "r-xp" {
		t.Fatalf("code mapping is %q, want r-xp", perm)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(53))
	before := r.Run(p, f)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Engine() != EngineInterp {
		t.Fatal("native code still attached after Close")
	}
	if perm := mappingPerm(t, j.base); perm != "" {
		t.Fatalf("code still mapped (%s) after Close", perm)
	}
	resetFrame(f, udpFrame(53))
	if after := r.Run(p, f); after != before {
		t.Fatalf("after Close: %v, before %v", after, before)
	}
}

// mappingPerm returns the permissions of the mapping holding addr in
// /proc/self/maps, or "" when none does.
func mappingPerm(t *testing.T, addr uintptr) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var lo, hi uintptr
		var perm string
		if _, err := fmt.Sscanf(line, "%x-%x %s", &lo, &hi, &perm); err != nil {
			continue
		}
		if addr >= lo && addr < hi {
			return perm
		}
	}
	return ""
}

// TestJITNoAlloc: runs through native code do not allocate, helpers and
// map lookups included.
func TestJITNoAlloc(t *testing.T) {
	needJIT(t)
	c := loadTestdata(t, "parse.o", &Options{Engine: EngineJIT})
	p, _ := c.DefaultXDP()
	r := NewRunner(0)
	f := newFrame(udpFrame(53))
	pkt := udpFrame(53)
	if n := testing.AllocsPerRun(1000, func() {
		resetFrame(f, pkt)
		r.Run(p, f)
	}); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// BenchmarkReferenceEngines is BenchmarkReference in each engine.
func BenchmarkReferenceEngines(b *testing.B) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		b.Run(e.String(), func(b *testing.B) {
			if e == EngineJIT {
				needJIT(b)
			}
			c := loadTestdata(b, "parse.o", &Options{Engine: e})
			p, _ := c.DefaultXDP()
			r := NewRunner(0)
			f := newFrame(udpFrame(53))
			if r.Run(p, f) != ActionPass {
				b.Fatal("wrong verdict")
			}
			cpuBench(b, func() { r.Run(p, f) })
		})
	}
}

// BenchmarkOverheadEngines is BenchmarkRunOverhead in each engine.
func BenchmarkOverheadEngines(b *testing.B) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		b.Run(e.String(), func(b *testing.B) {
			if e == EngineJIT {
				needJIT(b)
			}
			p, err := LoadRaw("pass", asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), &Options{Engine: e})
			if err != nil {
				b.Fatal(err)
			}
			r := NewRunner(0)
			f := newFrame(udpFrame(1))
			cpuBench(b, func() { r.Run(p, f) })
		})
	}
}

// BenchmarkHelperEngines is the cost of a helper call in each engine: a
// program of 4 calls of bpf_get_smp_processor_id (per run).
func BenchmarkHelperEngines(b *testing.B) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		b.Run(e.String(), func(b *testing.B) {
			if e == EngineJIT {
				needJIT(b)
			}
			call := ins(0x85, 0, 0, 0, helperGetSmpProcessor)
			p, err := LoadRaw("calls", asmProg(call, call, call, call, ins(0xb7, 0, 0, 0, 2), exitInsn), &Options{Engine: e})
			if err != nil {
				b.Fatal(err)
			}
			r := NewRunner(0)
			f := newFrame(udpFrame(1))
			cpuBench(b, func() { r.Run(p, f) })
		})
	}
}

// TestJITDivision compares every division and modulo form in both engines
// on edge values (zero, -1, INT_MIN of both widths, large values), with
// the operands in every register pair that involves r0 and r3 (RAX and RDX
// on amd64, which DIV uses) and others.
func TestJITDivision(t *testing.T) {
	needJIT(t)
	vals := []int64{0, 1, -1, 5, -5, 7, -7, 0x7fffffff, -0x80000000, 0x80000000, 0xffffffff,
		math.MaxInt64, math.MinInt64, 0x123456789abcdef}
	type form struct {
		code byte // opcode with the source bit clear (K)
		off  int16
	}
	var forms []form
	for _, cls := range []byte{0x07, 0x04} { // ALU64, ALU
		for _, opc := range []byte{0x30, 0x90} { // div, mod
			for _, off := range []int16{0, 1} { // unsigned, signed
				forms = append(forms, form{cls | opc, off})
			}
		}
	}
	pairs := [][2]byte{{0, 3}, {3, 0}, {0, 0}, {3, 3}, {1, 2}, {4, 0}, {3, 4}, {6, 3}, {9, 8}}
	n := 0
	for _, f := range forms {
		for _, a := range vals {
			for _, b := range vals {
				for _, rp := range pairs {
					d, s := rp[0], rp[1]
					load := func(r byte, v int64) []byte {
						return asmProg(ins(0x18, r, 0, 0, int32(uint32(v))), ins(0, 0, 0, 0, int32(uint32(uint64(v)>>32))))
					}
					// Canaries in the other registers: they must survive.
					prog := asmProg(load(0, 0x1111), load(3, 0x3333), load(4, 0x4444), load(9, 0x9999),
						load(s, b), load(d, a))
					if d == s {
						prog = asmProg(load(0, 0x1111), load(3, 0x3333), load(4, 0x4444), load(9, 0x9999), load(d, a))
					}
					var k []byte
					if len(k) == 0 && int64(int32(b)) == b {
						k = ins(f.code, d, 0, f.off, int32(b)) // K form
					}
					// r0 = dst ^ (r0 .. r9 mixed), so that every register counts.
					tail := asmProg(ins(0xbf, 7, d, 0, 0),
						ins(0xaf, 7, 0, 0, 0), ins(0x27, 7, 0, 0, 3), ins(0xaf, 7, 3, 0, 0),
						ins(0x27, 7, 0, 0, 5), ins(0xaf, 7, 4, 0, 0), ins(0x27, 7, 0, 0, 7), ins(0xaf, 7, 9, 0, 0),
						ins(0xbf, 0, 7, 0, 0), exitInsn)
					for _, variant := range [][]byte{ins(f.code|0x08, d, s, f.off, 0), k} {
						if variant == nil {
							continue
						}
						code := asmProg(prog, variant, tail)
						pi, pj, err := loadPair(t, "div", code, 0)
						if err != nil {
							t.Fatalf("%v", err)
						}
						gi, ei := NewRunner(0).RunRaw(pi, nil)
						gj, ej := NewRunner(0).RunRaw(pj, nil)
						if gi != gj || errString(ei) != errString(ej) {
							t.Fatalf("op %#x off %d r%d=%#x r%d=%#x: interpreter %#x (%v), JIT %#x (%v)", f.code, f.off, d, a, s, b, gi, ei, gj, ej)
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d division programs agree", n)
}

// TestJITAtomics compares every atomic operation of both widths in both
// engines, aligned, misaligned and out of the stack, with the source in r0
// (cmpxchg's implicit register), r3 and r5.
func TestJITAtomics(t *testing.T) {
	needJIT(t)
	ops := []int32{atomicAdd, atomicOr, atomicAnd, atomicXor, atomicAdd | atomicFetch, atomicOr | atomicFetch,
		atomicAnd | atomicFetch, atomicXor | atomicFetch, atomicXchg, atomicCmpXchg}
	n := 0
	for _, size := range []byte{0xc3, 0xdb} { // STX|ATOMIC|W, |DW
		for _, op := range ops {
			for _, off := range []int16{-16, -24, -15, -12, -4, -2, 0, 8} {
				for _, src := range []byte{0, 3, 5} {
					for _, r0 := range []int64{0x0f0f, 0x5a5a5a5a, 0x112233445a5a5a5a, 0x777777775a5a5a5a} {
						setR0 := asmProg(ins(0x18, 0, 0, 0, int32(uint32(r0))), ins(0, 0, 0, 0, int32(uint32(uint64(r0)>>32))))
						code := asmProg(
							ins(0x18, 1, 0, 0, 0x5a5a5a5a), ins(0, 0, 0, 0, 0x11223344),
							ins(0x7b, 10, 1, -16, 0), ins(0x7b, 10, 1, -24, 0), ins(0x7b, 10, 1, -8, 0),
							ins(0xb7, 3, 0, 0, 0x3333), ins(0xb7, 5, 0, 0, 0x5555),
							ins(0xb7, src, 0, 0, 0x0ff00ff0),
							setR0,
							// Through r2 = r10 + off: the loader cannot see the alignment.
							ins(0xbf, 2, 10, 0, 0), ins(0x07, 2, 0, 0, int32(off)),
							ins(size, 2, src, 0, op),
							// r0 ^= the stack words and r3, r5 shifted in.
							ins(0x79, 1, 10, -16, 0), ins(0xaf, 0, 1, 0, 0),
							ins(0x79, 1, 10, -24, 0), ins(0x27, 0, 0, 0, 3), ins(0xaf, 0, 1, 0, 0),
							ins(0x79, 1, 10, -8, 0), ins(0x27, 0, 0, 0, 5), ins(0xaf, 0, 1, 0, 0),
							ins(0x27, 0, 0, 0, 7), ins(0xaf, 0, 3, 0, 0),
							ins(0x27, 0, 0, 0, 11), ins(0xaf, 0, 5, 0, 0),
							exitInsn)
						pi, pj, err := loadPair(t, "atomic", code, 0)
						if err != nil {
							t.Fatalf("size %#x op %#x off %d src r%d: %v", size, op, off, src, err)
						}
						gi, ei := NewRunner(0).RunRaw(pi, nil)
						gj, ej := NewRunner(0).RunRaw(pj, nil)
						if gi != gj || errString(ei) != errString(ej) {
							t.Fatalf("size %#x op %#x off %d src r%d: interpreter %#x (%v), JIT %#x (%v)", size, op, off, src, gi, ei, gj, ej)
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d atomic programs agree", n)
}

// TestJITLargeProgram: programs past the size where arm64 switches to long
// branches (4000 slots), with jumps, budget checks, slow-path exits and
// out-of-line region checks thousands of instructions away.
func TestJITLargeProgram(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{3000, 4500, 9000} {
		var parts [][]byte
		parts = append(parts, ins(0xbf, 6, 1, 0, 0), ins(0xb7, 7, 0, 0, 3)) // r6 = mem, r7 = loop count
		body := n - 8
		loopTop := len(parts)
		for i := 0; len(parts) < body; i++ {
			switch rng.IntN(8) {
			case 0:
				parts = append(parts, ins(0x07, byte(rng.IntN(6)), 0, 0, int32(rng.Uint32())))
			case 1:
				parts = append(parts, ins(0x2f, byte(rng.IntN(6)), byte(rng.IntN(6)), 0, 0))
			case 2: // stack store and load
				off := -8 * int16(1+rng.IntN(60))
				parts = append(parts, ins(0x7b, 10, byte(rng.IntN(6)), off, 0), ins(0x79, byte(rng.IntN(6)), 10, off, 0))
			case 3: // memory load (in range: the program runs to its end)
				parts = append(parts, ins(0x71, byte(rng.IntN(6)), 6, int16(rng.IntN(64)), 0))
			case 4: // forward jump over up to 2000 slots
				skip := rng.IntN(2000)
				if len(parts)+1+skip >= body {
					skip = 0
				}
				parts = append(parts, ins(0x25, byte(rng.IntN(6)), 0, int16(skip), int32(rng.Uint32())))
			case 5:
				parts = append(parts, ins(0x3f, byte(rng.IntN(6)), byte(rng.IntN(6)), 0, 0)) // div
			case 6:
				parts = append(parts, ins(0x85, 0, 0, 0, helperGetSmpProcessor))
			default:
				parts = append(parts, ins(0xaf, 0, byte(1+rng.IntN(5)), 0, 0))
			}
		}
		// Loop back to the top three times: a backward jump of ~n slots;
		// then a load out of range, whose fault is far from the code's
		// start, when r0 is odd.
		parts = append(parts, ins(0x07, 7, 0, 0, -1), ins(0x55, 7, 0, int16(loopTop-len(parts)-2), 0),
			ins(0x45, 0, 0, 1, 1), exitInsn, ins(0x71, 1, 6, 64, 0), exitInsn)
		code := asmProg(parts...)
		for _, budget := range []int{0, 5000} {
			pi, pj, err := loadPair(t, "large", code, budget)
			if err != nil {
				t.Fatalf("%d slots: %v", n, err)
			}
			mem := make([]byte, 64)
			for i := range mem {
				mem[i] = byte(i * 7)
			}
			mi, mj := bytes.Clone(mem), bytes.Clone(mem)
			gi, ei := NewRunner(0).RunRaw(pi, mi)
			gj, ej := NewRunner(0).RunRaw(pj, mj)
			if gi != gj || errString(ei) != errString(ej) || !bytes.Equal(mi, mj) {
				t.Fatalf("%d slots, budget %d: interpreter %#x (%v), JIT %#x (%v)", n, budget, gi, ei, gj, ej)
			}
			t.Logf("%d slots, budget %d: %#x, %v", n, budget, gj, ej)
		}
	}
}

// TestJITUnderGCAndPreemption runs long native loops (about a million
// instructions a run, with helper calls and map-value-free stack traffic)
// on several goroutines while others force garbage collections, allocate
// and ask for preemption: results stay the interpreter's and nothing
// crashes (signals that land in native code are not async safe points, so
// the runtime preempts the goroutine at its next Go safe point instead).
func TestJITUnderGCAndPreemption(t *testing.T) {
	needJIT(t)
	code := asmProg(
		ins(0xb7, 6, 0, 0, 200000), // r6 = iterations
		ins(0xb7, 7, 0, 0, 0),
		ins(0x7b, 10, 6, -8, 0), // loop: *(u64 *)(r10-8) = r6
		ins(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10-8)
		ins(0x0f, 7, 1, 0, 0),   // r7 += r1
		ins(0x07, 6, 0, 0, -1),  // r6--
		ins(0x55, 6, 0, -5, 0),  // if r6 != 0 goto loop
		ins(0x85, 0, 0, 0, helperGetSmpProcessor),
		ins(0x0f, 0, 7, 0, 0),
		exitInsn)
	pi, pj, err := loadPair(t, "long", code, 2_000_000)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewRunner(0).RunRaw(pi, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 4)
	for g := 0; g < 3; g++ {
		go func() {
			r := NewRunner(0)
			for i := 0; i < 100; i++ {
				got, err := r.RunRaw(pj, nil)
				if err != nil || got != want {
					done <- fmt.Errorf("run %d: %#x (%v), want %#x", i, got, err, want)
					return
				}
			}
			done <- nil
		}()
	}
	go func() {
		var keep [][]byte
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			keep = append(keep, make([]byte, 1<<12))
			if len(keep) > 256 {
				keep = keep[:0]
			}
			runtime.Gosched()
		}
	}()
	for g := 0; g < 3; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	close(stop)
}
