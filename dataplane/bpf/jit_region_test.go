//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the region bookkeeping of native lookups (valueRegion in
// jit_*_maps.go) at its edges: many lookups in one run, lookups of two
// maps alternating, region tables of different lengths from frame to frame
// of a burst, and entries past the table's end or in the search window
// that describe the same value but differ in one field, which must not be
// reused. The interpreter's addRegion is the oracle: the same region
// numbers (stored into the values, where the maps show them), the same
// table and the same faults.

// bumpArr is the lookup of arr with the key in r6, then, when the value
// exists, its first word incremented and the pointer's region number
// stored at off.
func bumpArr(off int16) asm.Instructions { return bump("arr", off) }

// bump is bumpArr on map m.
func bump(m string, off int16) asm.Instructions {
	return append(lookupKey(m, asm.R6),
		asm.JEq.Imm(asm.R0, 0, fmt.Sprintf("nil%s%d", m, off)),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.R0, off, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R1, 0).WithSymbol(fmt.Sprintf("nil%s%d", m, off)))
}

// regionLoopProg looks up arr n times with the key i*mul%8, and pcpu after each
// (key i&3) when alternate is set, its region number stored in arr's
// value at 8.
func regionLoopProg(n, mul int32, alternate bool) asm.Instructions {
	body := asm.Instructions{
		asm.Mov.Imm(asm.R7, 0),
		asm.Mov.Reg(asm.R6, asm.R7).WithSymbol("loop"),
		asm.Mul.Imm(asm.R6, mul),
		asm.And.Imm(asm.R6, 7),
	}
	body = append(body, bumpArr(4)...)
	body = append(body, asm.Mov.Reg(asm.R8, asm.R0))
	if alternate {
		body = append(body, asm.Mov.Reg(asm.R6, asm.R7), asm.And.Imm(asm.R6, 3))
		body = append(body, lookupKey("pcpu", asm.R6)...)
		body = append(body,
			asm.JEq.Imm(asm.R8, 0, "next"),
			asm.RSh.Imm(asm.R0, 32),
			asm.StoreMem(asm.R8, 8, asm.R0, asm.Word))
	}
	body = append(body,
		asm.Add.Imm(asm.R7, 1).WithSymbol("next"),
		asm.JLT.Imm(asm.R7, n, "loop"),
		asm.Mov.Imm(asm.R0, 2), asm.Return())
	return body
}

// regionShape is what a region table entry says apart from its buffer's
// address (which differs between two collections).
func regionShape(rs []region) string {
	s := ""
	for _, rg := range rs {
		s += fmt.Sprintf("[%d %d %d %d]", len(rg.buf), rg.lo, rg.hi, rg.whi)
	}
	return s
}

// diffRuns runs insns in both engines, runs times each on one Runner per
// engine, and compares return values, faults, region tables and maps.
func diffRuns(t *testing.T, insns asm.Instructions, runs int, poke func(r *Runner)) {
	t.Helper()
	diffRunsCPU(t, insns, runs, 0, poke)
}

// diffRunsCPU is diffRuns on Runners of CPU cpu.
func diffRunsCPU(t *testing.T, insns asm.Instructions, runs, cpu int, poke func(r *Runner)) {
	t.Helper()
	ci, pi := loadLookup(t, insns, EngineInterp)
	cj, pj := loadLookup(t, insns, EngineJIT)
	for _, c := range []*Collection{ci, cj} { // hash key 1 present
		m, err := c.Map("hash")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update([]byte{1, 0, 0, 0}, make([]byte, 8), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if pj.jit.Load().native == 0 {
		t.Fatal("no lookup compiled natively")
	}
	ri, rj := NewRunner(cpu), NewRunner(cpu)
	for run := 0; run < runs; run++ {
		if poke != nil && run > 0 {
			poke(ri)
			poke(rj)
		}
		fi, fj := newFrame(udpFrame(9)), newFrame(udpFrame(9))
		vi, oki := ri.RunFrame(pi, fi)
		vj, okj := rj.RunFrame(pj, fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("run %d: interpreter %#x %v (%v), JIT %#x %v (%v)", run, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if si, sj := regionShape(ri.regions[:cap(ri.regions)]), regionShape(rj.regions[:cap(rj.regions)]); len(ri.regions) != len(rj.regions) || si != sj {
			t.Fatalf("run %d: region tables of %d and %d entries\ninterp %s\njit    %s", run, len(ri.regions), len(rj.regions), si, sj)
		}
		mi := append(lookupBytes(t, ci), mustMap(t, ci, "pcpu").Bytes()...)
		mj := append(lookupBytes(t, cj), mustMap(t, cj, "pcpu").Bytes()...)
		hi, hj := hashValue(t, ci), hashValue(t, cj)
		mi, mj = append(mi, hi...), append(mj, hj...)
		if !bytes.Equal(mi, mj) {
			t.Fatalf("run %d: maps differ\ninterp %x\njit    %x", run, mi, mj)
		}
	}
}

// TestJITRegionLoop: 1000 lookups in one run, of 8 values in turn (each
// new to the last 4 entries: the table grows by 1000), of 2 values (found
// in the window), and of arr and pcpu alternating (each map's value is 2
// entries back); three runs, so the later ones reuse the entries past the
// end that the first left.
func TestJITRegionLoop(t *testing.T) {
	needJIT(t)
	for _, tc := range []struct {
		name      string
		mul       int32
		alternate bool
	}{{"8 values", 1, false}, {"2 values", 4, false}, {"same value", 0, false},
		{"alternating maps", 1, true}, {"alternating, 2 values", 4, true}} {
		t.Run(tc.name, func(t *testing.T) { diffRuns(t, regionLoopProg(1000, tc.mul, tc.alternate), 3, nil) })
	}
}

// TestJITRegionNotReused changes, between runs, one field of the entry the
// last run's first lookup left past the table's fixed part (or leaves the
// table no room past its end):
// an entry of the same buffer that differs in length, bounds or
// writability is not the value's region, and using it would fault where
// the interpreter does not (or the reverse).
func TestJITRegionNotReused(t *testing.T) {
	needJIT(t)
	// Two lookups of arr key 1: the second finds the first's region (arr
	// has a static in the window: valueRegion's search); the same of pcpu,
	// which has none (jitArray.first: the constant region).
	progs := map[string]asm.Instructions{
		"arr":  prog(movKey(1), bumpArr(4), movKey(1), bumpArr(8)),
		"pcpu": prog(movKey(1), bump("pcpu", 4), movKey(1), bump("pcpu", 0)),
		"hash": prog(movKey(1), bump("hash", 4), movKey(1), bump("hash", 0), bumpArr(4)),
	}
	past := func(f func(rg *region)) func(r *Runner) {
		return func(r *Runner) {
			f(&r.regions[:cap(r.regions)][r.fixed]) // what the next run's first lookup reuses
			r.jit.first = 0                         // as every write of Go to it does (jit_first.go)
		}
	}
	for name, poke := range map[string]func(r *Runner){
		"read-only": past(func(rg *region) { rg.whi = 0 }),
		"lo":        past(func(rg *region) { rg.lo = 1 }),
		"hi":        past(func(rg *region) { rg.hi = 4 }),
		"whi":       past(func(rg *region) { rg.whi = 4 }),
		"short buf": past(func(rg *region) { rg.buf = rg.buf[:4] }),
		"other buf": past(func(rg *region) { rg.buf = make([]byte, 12) }),
		"invalid":   past(func(rg *region) { *rg = region{lo: 1} }),
		"no room":   func(r *Runner) { r.regions = r.regions[:r.fixed:r.fixed] },
	} {
		for pn, insns := range progs {
			t.Run(pn+" "+name, func(t *testing.T) { diffRuns(t, insns, 5, poke) })
		}
	}
}

// TestJITRegionWindow puts into the search window (as the entry at
// regionStatic, where bind would put global data) the value's own buffer
// with the other writability, or the right one: only the latter is the
// region the lookup returns.
func TestJITRegionWindow(t *testing.T) {
	needJIT(t)
	insns := prog(movKey(2), bumpArr(4))
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprint("writable ", writable), func(t *testing.T) {
			ci, pi := loadLookup(t, insns, EngineInterp)
			cj, pj := loadLookup(t, insns, EngineJIT)
			ri, rj := NewRunner(0), NewRunner(0)
			for run := 0; run < 3; run++ {
				for _, x := range []struct {
					r *Runner
					c *Collection
					p *Program
				}{{ri, ci, pi}, {rj, cj, pj}} {
					x.r.bind(x.c)
					v := lookupArr(t, mustMap(t, x.c, "arr"), 2)
					w := uint64(0)
					if writable {
						w = uint64(len(v))
					}
					x.r.regions = append(x.r.regions[:regionStatic], region{buf: v, hi: uint64(len(v)), whi: w})
					x.r.fixed = regionStatic + 1
				}
				fi, fj := newFrame(udpFrame(9)), newFrame(udpFrame(9))
				vi, oki := ri.RunFrame(pi, fi)
				vj, okj := rj.RunFrame(pj, fj)
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("run %d: interpreter %#x %v (%v), JIT %#x %v (%v)", run, vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				if len(ri.regions) != len(rj.regions) || regionShape(ri.regions) != regionShape(rj.regions) {
					t.Fatalf("run %d: tables %s and %s", run, regionShape(ri.regions), regionShape(rj.regions))
				}
				if mi, mj := lookupBytes(t, ci), lookupBytes(t, cj); !bytes.Equal(mi, mj) {
					t.Fatalf("run %d: maps differ\ninterp %x\njit    %x", run, mi, mj)
				}
				want := uint32(regionStatic + 1)
				if writable {
					want = regionStatic
				}
				if got := lookupArr(t, mustMap(t, cj, "arr"), 2)[4]; uint32(got) != want {
					t.Fatalf("run %d: the lookup's region %d, want %d", run, got, want)
				}
			}
		})
	}
}

// TestJITRegionBurst runs bursts whose frames look up 0 to 3 values (the
// count in the frame's first byte), so that the table each frame starts
// from (reset to its fixed part) has past its end what an earlier frame
// left, longer or shorter, of the same values or others.
func TestJITRegionBurst(t *testing.T) {
	needJIT(t)
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R9, 0),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 2),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R8, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.And.Imm(asm.R8, 3),
		asm.JEq.Imm(asm.R8, 0, "out").WithSymbol("loop"),
		asm.Mov.Reg(asm.R6, asm.R7), asm.Add.Reg(asm.R6, asm.R8), asm.And.Imm(asm.R6, 7),
	}
	insns = append(insns, bumpArr(4)...)
	insns = append(insns,
		asm.Sub.Imm(asm.R8, 1),
		asm.Ja.Label("loop"),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	ci, pi := loadLookup(t, insns, EngineInterp)
	cj, pj := loadLookup(t, insns, EngineJIT)
	ri, rj := NewRunner(0), NewRunner(0)
	const n = 16
	for burst := 0; burst < 8; burst++ {
		pkts := make([][]byte, n)
		for i := range pkts {
			pkt := udpFrame(9)
			pkt[0] = byte((i*7 + burst*3) % 5) // 0-4 lookups' count, 4 as 0
			pkt[1] = byte(i + burst)
			pkts[i] = pkt
		}
		diffBurst(t, [2]*Runner{ri, rj}, [2]*Program{pi, pj}, burst, pkts)
		if mi, mj := lookupBytes(t, ci), lookupBytes(t, cj); !bytes.Equal(mi, mj) {
			t.Fatalf("burst %d: maps differ\ninterp %x\njit    %x", burst, mi, mj)
		}
	}
}

// mustMap is map name of c as a *maps.Array.
func mustMap(t *testing.T, c *Collection, name string) *maps.Array {
	t.Helper()
	m, err := c.Map(name)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*maps.Array)
}

// lookupArr is the value of key k in m (its memory, as the helper's).
func lookupArr(t *testing.T, m *maps.Array, k uint32) []byte {
	t.Helper()
	v := m.Lookup(binary.LittleEndian.AppendUint32(nil, k), 0)
	if v == nil {
		t.Fatalf("no value for key %d", k)
	}
	return v
}

// BenchmarkJITRegion is the native lookup's region bookkeeping per frame:
// "pcpu once" is xdp_drop_count's shape (one per-CPU value looked up and
// incremented: the entry past the fixed part reused), "arr 16x" looks up
// the same value 16 times a frame (each found one entry back); through
// RunBurst, 32 frames a burst, cpu-ns/run per frame.
func BenchmarkJITRegion(b *testing.B) {
	needJIT(b)
	pcpu := append(append(movKey(1), lookupKey("pcpu", asm.R6)...),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	for _, bc := range []struct {
		name  string
		insns asm.Instructions
	}{{"pcpu once", pcpu}, {"arr 16x", regionLoopProg(16, 0, false)}} {
		b.Run(bc.name, func(b *testing.B) {
			_, p := loadLookup(b, bc.insns, EngineJIT)
			r := NewRunner(0)
			const burst = 32
			frames := make([]Frame, burst)
			for i := range frames {
				frames[i] = *newFrame(udpFrame(9))
			}
			verdicts := make([]Action, burst)
			if n, first := r.RunBurst(p, frames, verdicts, nil); n != burst || first >= 0 || verdicts[0] != ActionPass {
				b.Fatalf("verdicts %v, fault %v", verdicts, r.Fault())
			}
			cpuBenchN(b, burst, func() { r.RunBurst(p, frames, verdicts, nil) })
		})
	}
}

// TestJITRegionFirst checks jitArray.first: a per-CPU array (no static)
// has the first entry past the statics, a plain array whose first value
// is a static in the search window has none (its key 0 is that static's
// region, which the search finds).
func TestJITRegionFirst(t *testing.T) {
	c, _ := loadLookup(t, prog(), EngineInterp)
	env := jitEnv{coll: c}
	for name, want := range map[string]int32{"pcpu": int32(regionStatic + len(c.statics)), "arr": 0, "ro": 0} {
		a, ok := env.arrayFor(uint32(c.mapIndex[name]))
		if !ok || a.first != want {
			t.Errorf("%s: first %d (ok %v), want %d", name, a.first, ok, want)
		}
	}
	if h, ok := env.hashFor(uint32(c.mapIndex["hash"])); ok && h.first != int32(regionStatic+len(c.statics)) {
		t.Errorf("hash: first %d, want %d", h.first, regionStatic+len(c.statics))
	}
}

// hashValue is the value of key 1 in c's hash (nil when absent).
func hashValue(t *testing.T, c *Collection) []byte {
	t.Helper()
	m, err := c.Map("hash")
	if err != nil {
		t.Fatal(err)
	}
	return m.Lookup([]byte{1, 0, 0, 0}, 0)
}

// diffBurst runs one burst of pkts with the interpreter's Runner and
// program (r[0], p[0]) and the JIT's (r[1], p[1]), and fails unless both
// finish as many frames with the same first fault and verdicts.
func diffBurst(t *testing.T, r [2]*Runner, p [2]*Program, burst int, pkts [][]byte) {
	t.Helper()
	var got [2]string
	for e := range 2 {
		fs := make([]Frame, len(pkts))
		for i, pkt := range pkts {
			fs[i] = *newFrame(pkt)
		}
		vs := make([]Action, len(fs))
		n, ff := r[e].RunBurst(p[e], fs, vs, nil)
		got[e] = fmt.Sprint(n, ff, vs)
	}
	if got[0] != got[1] {
		t.Fatalf("burst %d: interpreter %s, JIT %s", burst, got[0], got[1])
	}
}
