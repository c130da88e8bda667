package bpf

import (
	"testing"
)

// TestJITRunEntry covers the cases runJIT hands to runGuarded or handles on
// its own, in both engines, with one Runner going from case to case as a
// poll loop's does: a nil or malformed frame, a zero Runner, programs of two
// collections in turn (the region table is rebound), a verdict that is no
// XDP action, a redirect left by the run before, and a run that returns for
// a helper. Every case must give the interpreter's verdict, fault and
// counters.
func TestJITRunEntry(t *testing.T) {
	needJIT(t)
	// r0 = *(u8 *)(data + 12): the packet region must be the frame's.
	loadByte := asmProg(ins(0x61, 2, 1, 0, 0), ins(0x71, 0, 2, 12, 0), exitInsn)
	redirect := asmProg(ins(0xb7, 1, 0, 0, 7), ins(0xb7, 2, 0, 0, 0),
		ins(0x85, 0, 0, 0, helperRedirect), exitInsn)
	progs := map[string][]byte{
		"pass":     asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn),
		"action9":  asmProg(ins(0xb7, 0, 0, 0, 9), exitInsn),
		"load":     loadByte,
		"redirect": redirect,
	}
	type pair struct{ i, j *Program }
	ps := map[string]pair{}
	for name, code := range progs {
		pi, pj, err := loadPair(t, name, code, 0)
		if err != nil {
			t.Fatal(err)
		}
		ps[name] = pair{pi, pj}
	}
	pkt := udpFrame(9)
	good := func() *Frame { return newFrame(pkt) }
	bad := func() *Frame { f := newFrame(pkt); f.Data = f.DataEnd + 1; return f }
	short := func() *Frame { f := newFrame(pkt); f.DataEnd = f.Data + 4; return f }
	steps := []struct {
		prog  string
		frame func() *Frame
	}{
		{"load", good}, {"pass", nil}, {"load", bad}, {"load", short}, {"redirect", good},
		{"pass", good}, {"action9", good}, {"load", good}, {"redirect", good}, {"load", good},
		{"pass", good}, {"load", short}, {"load", good},
	}
	ri, rj := NewRunner(0), NewRunner(0)
	var zi, zj Runner // not made by NewRunner: no region table
	for n, s := range steps {
		p := ps[s.prog]
		var fi, fj *Frame
		if s.frame != nil {
			fi, fj = s.frame(), s.frame()
		}
		ai, aj := ri.Run(p.i, fi), rj.Run(p.j, fj)
		if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) || ri.Redirect() != rj.Redirect() {
			t.Errorf("step %d (%s): interpreter %v %v %+v, JIT %v %v %+v", n, s.prog,
				ai, ri.Fault(), ri.Redirect(), aj, rj.Fault(), rj.Redirect())
		}
		if s.prog == "load" && s.frame != nil && aj != ActionAborted && aj != Action(pkt[12]) {
			t.Errorf("step %d: loaded %d, want the frame's byte 12 (%d)", n, aj, pkt[12])
		}
		ni, abi := ri.Runs()
		nj, abj := rj.Runs()
		if ni != nj || abi != abj || nj != uint64(n+1) {
			t.Errorf("step %d: counters interpreter %d/%d, JIT %d/%d", n, ni, abi, nj, abj)
		}
		zai, zaj := zi.Run(p.i, fi), zj.Run(p.j, fj)
		if zai != zaj || errString(zi.Fault()) != errString(zj.Fault()) {
			t.Errorf("step %d (%s), zero Runner: interpreter %v %v, JIT %v %v", n, s.prog, zai, zi.Fault(), zaj, zj.Fault())
		}
	}
	// The JIT's own results, not only agreement: the action-9 program is
	// aborted with the interpreter's reason, and a redirect is recorded and
	// then cleared by the next run.
	r := NewRunner(0)
	if a := r.Run(ps["action9"].j, good()); a != ActionAborted || r.faultKind != faultBadAction {
		t.Errorf("action 9: %v, %v", a, r.Fault())
	}
	if a := r.Run(ps["redirect"].j, good()); a != ActionRedirect || r.Redirect().Ifindex != 7 {
		t.Errorf("redirect: %v %+v", a, r.Redirect())
	}
	if a := r.Run(ps["pass"].j, good()); a != ActionPass || r.Redirect().Kind != RedirectNone || r.Fault() != nil {
		t.Errorf("pass after redirect: %v %+v %v", a, r.Redirect(), r.Fault())
	}
	if a := r.Run(ps["pass"].j, nil); a != ActionAborted || r.faultKind != faultBadFrame {
		t.Errorf("nil frame: %v %v", a, r.Fault())
	}
}

// TestJITRunEntryNoAlloc: the lean entry and the one that returns for a
// helper allocate nothing.
func TestJITRunEntryNoAlloc(t *testing.T) {
	needJIT(t)
	for name, code := range map[string][]byte{
		"pass":   asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn),
		"helper": asmProg(ins(0x85, 0, 0, 0, helperGetSmpProcessor), ins(0xb7, 0, 0, 0, 2), exitInsn),
	} {
		_, pj, err := loadPair(t, name, code, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(0)
		f := newFrame(udpFrame(9))
		if n := testing.AllocsPerRun(1000, func() { r.Run(pj, f) }); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
}

// TestJITCtxFields: loads of xdp_md's scalar fields (ingress_ifindex and
// rx_queue_index, which the amd64 code reads from the Frame; the others,
// narrow loads and forged context pointers without a frame, which go to
// the slow path) give the interpreter's values and faults.
func TestJITCtxFields(t *testing.T) {
	needJIT(t)
	ld := func(dst, src byte, off int16) []byte { return ins(0x61, dst, src, off, 0) } // ldxw
	progs := map[string][]byte{
		"ingress": asmProg(ld(0, 1, 12), exitInsn),
		"queue":   asmProg(ld(0, 1, 16), exitInsn),
		"egress":  asmProg(ld(0, 1, 20), exitInsn),
		// Both, through a copy of the context moved by 4 (ctx+16, ctx+12).
		"moved": asmProg(ins(0xbf, 6, 1, 0, 0), ins(0x07, 6, 0, 0, 4), ld(2, 6, 12), ld(3, 6, 8),
			ins(0x67, 2, 0, 0, 16), ins(0x4f, 2, 3, 0, 0), ins(0xbf, 0, 2, 0, 0), exitInsn),
		"narrow":    asmProg(ins(0x69, 0, 1, 16, 0), exitInsn), // ldxh
		"past":      asmProg(ld(0, 1, 24), exitInsn),
		"unaligned": asmProg(ld(0, 1, 13), exitInsn),
	}
	for name, code := range progs {
		pi, pj, err := loadPair(t, name, code, 0)
		if err != nil {
			t.Fatal(err)
		}
		ri, rj := NewRunner(0), NewRunner(0)
		for _, q := range []uint32{0, 3, 0xfffffffe} {
			fi, fj := newFrame(udpFrame(9)), newFrame(udpFrame(9))
			fi.RxQueueIndex, fj.RxQueueIndex = q, q
			fi.IngressIfindex, fj.IngressIfindex = q^0x55, q^0x55
			vi, oki := ri.RunFrame(pi, fi)
			vj, okj := rj.RunFrame(pj, fj)
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Errorf("%s, queue %#x: interpreter %#x %v (%v), JIT %#x %v (%v)", name, q, vi, oki, ri.Fault(), vj, okj, rj.Fault())
			}
			switch name {
			case "ingress":
				if vj != q^0x55 {
					t.Errorf("ingress_ifindex %#x, want %#x", vj, q^0x55)
				}
			case "queue":
				if vj != q {
					t.Errorf("rx_queue_index %#x, want %#x", vj, q)
				}
			}
		}
		// A bare run: r1 is the memory, not the context; a forged context
		// pointer finds no frame.
		for _, mem := range [][]byte{nil, make([]byte, 32)} {
			gi, ei := ri.RunRaw(pi, mem)
			gj, ej := rj.RunRaw(pj, mem)
			if gi != gj || errString(ei) != errString(ej) {
				t.Errorf("%s raw: interpreter %#x (%v), JIT %#x (%v)", name, gi, ei, gj, ej)
			}
		}
	}
	forged := asmProg(ins(0x18, 1, 0, 0, 16), ins(0, 0, 0, 0, regionCtx), ld(0, 1, 0), exitInsn)
	pi, pj, err := loadPair(t, "forged", forged, 0)
	if err != nil {
		t.Fatal(err)
	}
	gi, ei := NewRunner(0).RunRaw(pi, nil)
	gj, ej := NewRunner(0).RunRaw(pj, nil)
	if gi != gj || errString(ei) != errString(ej) || ej == nil {
		t.Errorf("forged context pointer, no frame: interpreter %#x (%v), JIT %#x (%v)", gi, ei, gj, ej)
	}
}
