//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/asm"
)

// Tests of the native lookups' tag of the entry past the table's fixed
// part (jit_first.go) and of the map checks native code leaves out
// (mapChecksProof).

// firstHolds reports where r breaks the tag's invariant: a tag set while
// the entry at Runner.fixed is not the value it names, as addRegion
// makes it.
func firstHolds(r *Runner) error {
	tag := r.jit.first
	if tag == 0 {
		return nil
	}
	all := r.regions[:cap(r.regions)]
	if r.fixed >= len(all) {
		return fmt.Errorf("tag %#x with no entry past the fixed part (cap %d)", tag, cap(r.regions))
	}
	rg := all[r.fixed]
	n := uint64(len(rg.buf))
	if n == 0 || rg.lo != 0 || rg.hi != n || rg.whi != 0 && rg.whi != n {
		return fmt.Errorf("tag %#x of entry %d, which is [%d %d %d %d]", tag, r.fixed, n, rg.lo, rg.hi, rg.whi)
	}
	want := uint64(uintptr(unsafe.Pointer(&rg.buf[0]))) | n<<48
	if rg.whi != 0 {
		want |= 1
	}
	if want != tag {
		return fmt.Errorf("tag %#x, entry %d's is %#x", tag, r.fixed, want)
	}
	return nil
}

// firstTagProg looks up, by the frame's first byte: with bit 0, arr with
// the key at the frame's bytes 4-7 (a key in the packet: the lookup runs
// in Go, whose addRegion appends the value's entry); then always pcpu with
// key byte 1 & 3 (native, the entry past the fixed part); with bit 1, arr
// with key byte 1 & 7 (native). Each value found has its first word
// incremented and its region number stored (bump).
func firstTagProg() asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2), asm.Add.Imm(asm.R4, 8),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R8, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.Mov.Reg(asm.R4, asm.R8), asm.And.Imm(asm.R4, 1),
		asm.JEq.Imm(asm.R4, 0, "native"),
		asm.Add.Imm(asm.R2, 4),
		asm.LoadMapPtr(asm.R1, 0).WithReference("arr"),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "native"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word), asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R6, asm.R7).WithSymbol("native"), asm.And.Imm(asm.R6, 3),
	}
	insns = append(insns, bump("pcpu", 4)...)
	insns = append(insns, asm.Mov.Reg(asm.R4, asm.R8), asm.And.Imm(asm.R4, 2),
		asm.JEq.Imm(asm.R4, 0, "out"),
		asm.Mov.Reg(asm.R6, asm.R7), asm.And.Imm(asm.R6, 7))
	insns = append(insns, bumpArr(8)...)
	return append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
}

// firstFrame is firstTagProg's frame: mode, native key, Go key.
func firstFrame(mode, key, goKey byte) []byte {
	pkt := udpFrame(9)
	pkt[0], pkt[1] = mode, key
	copy(pkt[4:8], []byte{goKey, 0, 0, 0})
	return pkt
}

// TestJITFirstTag runs firstTagProg in both engines, frame by frame and in
// bursts, on frames that mix Go's appends of other values' entries (the
// arr lookup in Go) with native lookups of pcpu values past the fixed
// part, and checks after every run the tag's invariant (firstHolds) along
// with the verdicts and maps. Were a Go append not to clear the tag, the
// next native lookup of the tagged value would take arr's entry for it:
// firstHolds fails at frame 3 (the Go append).
func TestJITFirstTag(t *testing.T) {
	needJIT(t)
	insns := firstTagProg()
	ci, pi := loadLookup(t, insns, EngineInterp)
	cj, pj := loadLookup(t, insns, EngineJIT)
	if n := pj.jit.Load().native; n != 3 {
		t.Fatalf("%d lookups native, want 3", n)
	}
	ri, rj := NewRunner(0), NewRunner(0)
	tagged := 0
	check := func(what string) {
		t.Helper()
		if err := firstHolds(rj); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if mi, mj := append(lookupBytes(t, ci), mustMap(t, ci, "pcpu").Bytes()...), append(lookupBytes(t, cj), mustMap(t, cj, "pcpu").Bytes()...); !bytes.Equal(mi, mj) {
			t.Fatalf("%s: maps differ\ninterp %x\njit    %x", what, mi, mj)
		}
		if rj.jit.first != 0 {
			tagged++
		}
	}
	// One frame at a time: the tag set, then a Go append at the entry.
	for i, f := range [][]byte{
		firstFrame(0, 1, 0), firstFrame(0, 1, 0), firstFrame(0, 1, 0), // tag pcpu[1]
		firstFrame(1, 1, 2), // go append: arr[2] at the entry
		firstFrame(0, 1, 0), firstFrame(0, 1, 0),
		firstFrame(0, 2, 0), firstFrame(2, 1, 0), firstFrame(3, 1, 1), firstFrame(0, 1, 0),
	} {
		vi, oki := ri.RunFrame(pi, newFrame(f))
		vj, okj := rj.RunFrame(pj, newFrame(f))
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("frame %d: interpreter %#x %v (%v), JIT %#x %v (%v)", i, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		check(fmt.Sprintf("frame %d", i))
	}
	// Bursts whose frames leave one another other entries there.
	const n = 16
	for burst := 0; burst < 12; burst++ {
		pkts := make([][]byte, n)
		for i := range pkts {
			pkts[i] = firstFrame(byte((i*5+burst)%4), byte(i/3+burst), byte(i+burst*7))
		}
		diffBurst(t, [2]*Runner{ri, rj}, [2]*Program{pi, pj}, burst, pkts) // jit_region_test.go
		check(fmt.Sprintf("burst %d", burst))
	}
	if tagged == 0 {
		t.Error("the tag was never set: its path was not exercised")
	}
	// Go's writes clear it: binding another collection.
	other, _ := loadLookup(t, insns, EngineJIT)
	for i := 0; i < 2; i++ { // the first may append the entry in Go
		if _, ok := rj.RunFrame(pj, newFrame(firstFrame(0, 1, 0))); !ok {
			t.Fatal(rj.Fault())
		}
	}
	if rj.jit.first == 0 {
		t.Fatal("no tag after two native-only frames")
	}
	rj.bind(other)
	if rj.jit.first != 0 {
		t.Errorf("tag %#x kept across a change of collection", rj.jit.first)
	}
}

// TestJITMapChecksUnreachable covers mapChecksProof: a handle loaded on
// two paths is no native lookup (TestJITArrayLookup's "handle on two
// paths" counts none), and one Runner running the programs of two
// collections of the same maps in turn, frame by frame and in bursts,
// with native lookups and, every other run, one in Go first (a key in the
// packet), updates
// each collection's own maps as the interpreter does: native code of one
// collection never runs while the Runner is bound to the other, where its
// compile-time map and the helper's would differ.
func TestJITMapChecksUnreachable(t *testing.T) {
	needJIT(t)
	insns := firstTagProg()
	var colls [2][2]*Collection // [engine][collection]
	var progs [2][2]*Program
	for e, engine := range []Engine{EngineInterp, EngineJIT} {
		for k := range 2 {
			colls[e][k], progs[e][k] = loadLookup(t, insns, engine)
		}
	}
	rs := [2]*Runner{NewRunner(0), NewRunner(0)}
	for round := 0; round < 24; round++ {
		k := round % 2
		if round%3 == 2 {
			k = 1 - k
		}
		mode := byte(round % 4)                               // the Go lookup every other run
		pkt := firstFrame(mode, byte(round/8), byte(round%8)) // keys repeat: entries reused
		var got [2]string
		for e := range 2 {
			r, p := rs[e], progs[e][k]
			if round%5 == 4 {
				fs := []Frame{*newFrame(pkt), *newFrame(pkt), *newFrame(pkt)}
				vs := make([]Action, len(fs))
				n, ff := r.RunBurst(p, fs, vs, nil)
				got[e] = fmt.Sprint(n, ff, vs)
			} else {
				v, ok := r.RunFrame(p, newFrame(pkt))
				got[e] = fmt.Sprint(v, ok, errString(r.Fault()))
			}
		}
		if got[0] != got[1] {
			t.Fatalf("round %d: interpreter %s, JIT %s", round, got[0], got[1])
		}
		for c := range 2 {
			mi := append(lookupBytes(t, colls[0][c]), mustMap(t, colls[0][c], "pcpu").Bytes()...)
			mj := append(lookupBytes(t, colls[1][c]), mustMap(t, colls[1][c], "pcpu").Bytes()...)
			if !bytes.Equal(mi, mj) {
				t.Fatalf("round %d, collection %d: maps differ\ninterp %x\njit    %x", round, c, mi, mj)
			}
		}
	}
}

// TestJITUncheckedStub enters the re-entry stub after a lookup's slow path
// (leaveStubs) with r0 naming entries Go's helper never makes for that
// lookup: one shorter than the value, one read-only for a writable value,
// one at an offset. The value's accesses after it are unchecked on amd64
// (jit_value.go), so the stub must leave them to Go (a slow exit at the
// instruction after the call; arm64 checks at the access instead); the
// value's own entry runs through natively.
func TestJITUncheckedStub(t *testing.T) {
	needJIT(t)
	insns := append(movKey(1), lookupKey("arr", asm.R6)...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.Word), // the value's last 4 bytes
		asm.StoreMem(asm.R0, 8, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R0, asm.R1).WithSymbol("out"), asm.Return())
	c, p := loadLookup(t, insns, EngineJIT)
	j, call := nativeCall(t, p)
	v := lookupArr(t, mustMap(t, c, "arr"), 1)
	copy(v[8:], []byte{0x11, 0x22, 0x33, 0x44})
	for _, tc := range []struct {
		name string
		rg   region
		r0   uint64 // offset added to the region's pointer
		ok   bool
	}{
		{"the value's", region{buf: v, hi: 12, whi: 12}, 0, true},
		{"short", region{buf: v, hi: 8, whi: 8}, 0, false},
		{"read-only", region{buf: v, hi: 12}, 0, false},
		{"offset", region{buf: v, hi: 12, whi: 12}, 4, false},
		{"lo", region{buf: v, lo: 4, hi: 12, whi: 12}, 0, false},
	} {
		r := NewRunner(0)
		if _, ok := r.RunFrame(p, newFrame(udpFrame(9))); !ok {
			t.Fatal(r.Fault())
		}
		reg := directEntry(r, p, newFrame(udpFrame(9)))
		n := len(r.regions)
		r.regions = append(r.regions, tc.rg)
		reg[0] = uint64(n)<<32 | tc.r0
		reg[10] = regionStack<<32 | stackSize
		e := jitRun(r, reg, j.addr(call+1))
		done := e&0xff == jitExitDone
		if done != tc.ok {
			t.Errorf("%s: exit %#x (done %v, want %v), r0 %#x", tc.name, e, done, tc.ok, reg[0])
			continue
		}
		if !done && (int(e>>8) <= call || int(e>>8) > call+3) {
			t.Errorf("%s: slow exit at %d, want between %d and %d", tc.name, e>>8, call+1, call+3)
		}
		if done && reg[0] != 0x44332211 {
			t.Errorf("%s: r0 %#x, want the value's word", tc.name, reg[0])
		}
	}
}

// TestJITLookupMapEdges runs native lookups at the edges of their maps in
// both engines (diffRunsCPU: verdicts, faults, region tables, maps, five
// runs on one Runner each, so later runs find the entries and the tag the
// earlier ones left): keys 0, max-1, max and 0xffffffff of an array and a
// per-CPU array, on Runners whose CPU is in range, the last one, at the
// collection's CPU count (2) and beyond (3, and -1); two maps and the same
// map twice in one run, interleaved. Each value found is incremented and
// its region number stored in it (bump). The tag's invariant holds after
// every run.
func TestJITLookupMapEdges(t *testing.T) {
	needJIT(t)
	keys := func(m string, ks ...int32) asm.Instructions {
		var out asm.Instructions
		for i, k := range ks {
			out = append(out, movKey(k)...)
			off := int16(4) // the last word of pcpu's value
			if i > 0 {
				off = int16(4 + i) // past it: faults as the interpreter's
			}
			out = append(out, bump(m, off)...)
		}
		return out
	}
	cases := map[string]asm.Instructions{
		"arr 7":          prog(movKey(7), bumpArr(4)),
		"arr 8":          prog(movKey(8), bumpArr(4)),
		"arr 0xffffffff": prog(movKey(-1), bumpArr(4)),
		"arr 0":          prog(movKey(0), bumpArr(8)),
		"pcpu 3":         prog(movKey(3), bump("pcpu", 4)),
		"pcpu 4":         prog(movKey(4), bump("pcpu", 4)),
		"pcpu 0xfffff":   prog(movKey(-1), bump("pcpu", 4)),
		"pcpu 0":         prog(movKey(0), bump("pcpu", 0)),
		"two maps": prog(movKey(1), bump("pcpu", 4), movKey(1), bumpArr(4),
			movKey(1), bump("pcpu", 0), movKey(2), bumpArr(8)),
		"same map":   prog(movKey(3), bump("pcpu", 4), movKey(2), bump("pcpu", 0)),
		"past value": prog(keys("pcpu", 1, 2)),
	}
	for name, insns := range cases {
		for _, cpu := range []int{0, 1, 2, 3, -1} {
			t.Run(fmt.Sprintf("%s cpu %d", name, cpu), func(t *testing.T) {
				diffRunsCPU(t, insns, 5, cpu, func(r *Runner) {
					if err := firstHolds(r); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// TestJITUncheckedStubAfterContext is TestJITUncheckedStub for ctxLenProg,
// whose access at the value's last word comes after context loads that
// take the scratch registers: with the loads after the first access, that
// access finds the buffer from r0's region number with no check, which
// holds only because the stub proved the entry (jitUnchecked.stale); with
// the loads first, nothing is unchecked and the access checks the entry.
// Either way an entry shorter than the value or read-only leaves the run
// to Go, and the value's own runs through; with the loads after the first
// access, so do one at an offset and one with lo above 0 (the stub checks
// them; a checked access checks only the limit, which keeps it in the
// buffer).
func TestJITUncheckedStubAfterContext(t *testing.T) {
	needJIT(t)
	for _, early := range []bool{false, true} {
		c, p := loadLookup(t, ctxLenProg("arr", 1, 8, early, false), EngineJIT)
		j, call := nativeCall(t, p)
		v := lookupArr(t, mustMap(t, c, "arr"), 1)
		for _, tc := range []struct {
			name string
			rg   region
			r0   uint64
			ok   bool
			stub bool // only the stub checks it
		}{
			{"the value's", region{buf: v, hi: 12, whi: 12}, 0, true, false},
			{"short", region{buf: v, hi: 8, whi: 8}, 0, false, false},
			{"read-only", region{buf: v, hi: 12}, 0, false, false},
			{"offset", region{buf: v, hi: 12, whi: 12}, 4, false, true},
			{"lo", region{buf: v, lo: 4, hi: 12, whi: 12}, 0, false, true},
		} {
			if early && tc.stub {
				continue
			}
			r := NewRunner(0)
			f := newFrame(udpFrame(9))
			if _, ok := r.RunFrame(p, f); !ok {
				t.Fatal(r.Fault())
			}
			reg := directEntry(r, p, f)
			n := len(r.regions)
			r.regions = append(r.regions, tc.rg)
			reg[0] = uint64(n)<<32 | tc.r0
			reg[7] = regionCtx << 32
			reg[10] = regionStack<<32 | stackSize
			e := jitRun(r, reg, j.addr(call+1))
			if done := e&0xff == jitExitDone; done != tc.ok {
				t.Errorf("early %v, %s: exit %#x (done %v, want %v)", early, tc.name, e, done, tc.ok)
			}
		}
	}
}
