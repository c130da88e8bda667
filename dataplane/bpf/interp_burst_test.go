package bpf

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestInterpBurstMatchesRun: RunBurst of interpreted programs (burstInterp)
// gives each frame the verdict, redirect and bytes Run gives it, and reports
// the first fault, on the examples' programs and frames that pass, fail
// their checks or fault.
func TestInterpBurstMatchesRun(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "xdp", "*.o"))
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 24
	// A program that faults on frames shorter than 61 bytes: no check.
	raw, err := LoadRaw("unchecked", asmProg(
		ins(oLdxW, 2, 1, 0, 0),  // r2 = data
		ins(oLdxB, 0, 2, 60, 0), // r0 = *(u8 *)(r2 + 60)
		ins(oAnd64K, 0, 0, 0, 1),
		ins(oAdd64K, 0, 0, 0, 1), // XDP_DROP or XDP_PASS
		exitInsn), &Options{Engine: EngineInterp})
	if err != nil {
		t.Fatal(err)
	}
	progs := []*Program{raw}
	for _, file := range files {
		c, err := LoadFile(file, &Options{NumCPU: 1, Engine: EngineInterp})
		if err != nil {
			continue // needs more than its file (the examples' tests load it)
		}
		defer c.Close()
		progs = append(progs, c.Programs()...)
	}
	compared, faults := 0, 0
	for _, p := range progs {
		pkts := make([][]byte, n)
		for i := range pkts {
			f := udpFrame(uint16(rng.IntN(16)))
			switch i % 3 {
			case 1:
				f = f[:rng.IntN(len(f))]
			case 2:
				f[rng.IntN(len(f))] = byte(rng.Uint32())
			}
			pkts[i] = f
		}
		frames := make([]Frame, n)
		for i, pkt := range pkts {
			frames[i] = *newFrame(pkt)
		}
		verdicts := make([]Action, n)
		redirects := make([]Redirect, n)
		rb, rr := NewRunner(0), NewRunner(0)
		rr.rng = rb.rng
		got, first := rb.RunBurst(p, frames, verdicts, redirects)
		if got != n {
			t.Fatalf("%s: ran %d of %d", p.Name(), got, n)
		}
		wantFirst := -1
		for i, pkt := range pkts {
			f := newFrame(pkt)
			a := rr.Run(p, f)
			if a != verdicts[i] || (a == ActionRedirect && rr.redirect != redirects[i]) ||
				string(f.Buf[f.Data:f.DataEnd]) != string(frames[i].Buf[frames[i].Data:frames[i].DataEnd]) {
				t.Fatalf("%s frame %d: burst %v %+v, run %v %+v", p.Name(), i, verdicts[i], redirects[i], a, rr.redirect)
			}
			if rr.Fault() != nil && wantFirst < 0 {
				wantFirst = i
			}
		}
		if wantFirst >= 0 {
			faults++
		}
		if first != wantFirst {
			t.Errorf("%s: first fault %d, want %d", p.Name(), first, wantFirst)
		}
		compared++
	}
	if compared < 10 || faults == 0 {
		t.Errorf("only %d programs compared, %d with a fault", compared, faults)
	}
}
