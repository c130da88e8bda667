package bpf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// burstMixProg is a program whose path each frame picks (its first byte):
// 1 moves the head by minus the second byte's low nibble with
// bpf_xdp_adjust_head and returns the new first byte's low two bits (or
// the helper's error, a fault as a verdict); 2 redirects to the ifindex of
// the second byte; 3 returns the second byte's low three bits (5-7: an
// unknown action, a fault); 4 loads at data plus the second byte without a
// check (past the end: a load fault); anything else returns the first
// byte's low two bits. Frames shorter than two bytes pass.
var burstMixProg = asmProg(
	ins(0xbf, 6, 1, 0, 0),  // 0: r6 = r1
	ins(0x61, 2, 1, 0, 0),  // 1: r2 = data
	ins(0x61, 3, 1, 4, 0),  // 2: r3 = data_end
	ins(0xbf, 4, 2, 0, 0),  // 3: r4 = r2
	ins(0x07, 4, 0, 0, 2),  // 4: r4 += 2
	ins(0x2d, 4, 3, 34, 0), // 5: if r4 > r3 goto 40
	ins(0x71, 7, 2, 0, 0),  // 6: r7 = data[0]
	ins(0x71, 8, 2, 1, 0),  // 7: r8 = data[1]
	ins(0x55, 7, 0, 14, 1), // 8: if r7 != 1 goto 23
	ins(0xbf, 1, 6, 0, 0),  // 9: r1 = ctx
	ins(0xbf, 2, 8, 0, 0),  // 10: r2 = r8
	ins(0x57, 2, 0, 0, 15), // 11: r2 &= 15
	ins(0x87, 2, 0, 0, 0),  // 12: r2 = -r2
	ins(0x85, 0, 0, 0, helperXdpAdjustHead),
	ins(0x55, 0, 0, 7, 0),  // 14: if r0 != 0 goto 22
	ins(0x61, 2, 6, 0, 0),  // 15: r2 = data
	ins(0x61, 3, 6, 4, 0),  // 16: r3 = data_end
	ins(0xbf, 4, 2, 0, 0),  // 17: r4 = r2
	ins(0x07, 4, 0, 0, 1),  // 18: r4 += 1
	ins(0x2d, 4, 3, 20, 0), // 19: if r4 > r3 goto 40
	ins(0x71, 0, 2, 0, 0),  // 20: r0 = data[0]
	ins(0x57, 0, 0, 0, 3),  // 21: r0 &= 3
	exitInsn,               // 22
	ins(0x55, 7, 0, 4, 2),  // 23: if r7 != 2 goto 28
	ins(0xbf, 1, 8, 0, 0),  // 24: r1 = r8
	ins(0xb7, 2, 0, 0, 0),  // 25: r2 = 0
	ins(0x85, 0, 0, 0, helperRedirect),
	exitInsn,              // 27
	ins(0x55, 7, 0, 3, 3), // 28: if r7 != 3 goto 32
	ins(0xbf, 0, 8, 0, 0), // 29: r0 = r8
	ins(0x57, 0, 0, 0, 7), // 30: r0 &= 7
	exitInsn,              // 31
	ins(0x55, 7, 0, 4, 4), // 32: if r7 != 4 goto 37
	ins(0x0f, 2, 8, 0, 0), // 33: r2 += r8
	ins(0x71, 0, 2, 0, 0), // 34: r0 = *(u8 *)r2
	ins(0x57, 0, 0, 0, 3), // 35: r0 &= 3
	exitInsn,              // 36
	ins(0xbf, 0, 7, 0, 0), // 37: r0 = r7
	ins(0x57, 0, 0, 0, 3), // 38: r0 &= 3
	exitInsn,              // 39
	ins(0xb7, 0, 0, 0, 2), // 40: r0 = XDP_PASS
	exitInsn,              // 41
)

// burstFrames makes n frames of random paths for burstMixProg: random
// lengths (some shorter than two bytes), and some frames whose offsets are
// invalid (the run aborts without running).
func burstFrames(rng *rand.Rand, n int) []Frame {
	frames := make([]Frame, n)
	for i := range frames {
		pkt := make([]byte, rng.IntN(80))
		for j := range pkt {
			pkt[j] = byte(rng.UintN(256))
		}
		if len(pkt) > 0 {
			pkt[0] = byte(rng.IntN(7))
		}
		frames[i] = *newFrame(pkt)
		frames[i].IngressIfindex = uint32(i)
		switch rng.IntN(20) {
		case 0:
			frames[i].DataEnd = len(frames[i].Buf) + 1
		case 1:
			frames[i].DataMeta = frames[i].Data + 1
		}
	}
	return frames
}

func cloneFrames(in []Frame) []Frame {
	out := make([]Frame, len(in))
	for i, f := range in {
		out[i] = f
		out[i].Buf = bytes.Clone(f.Buf)
	}
	return out
}

// TestJITBurstMatchesRun: RunBurst of native code, which runs frames in
// native bursts and finishes in Go the ones that need it (helpers, faults,
// redirects, invalid frames) before going on natively, gives every frame
// what the interpreter's Run gives it: verdict, redirect, the frame's bytes
// and offsets; the burst reports the first fault, and counts as many runs
// and aborts.
func TestJITBurstMatchesRun(t *testing.T) {
	needJIT(t)
	ip, jp, err := loadPair(t, "burstmix", burstMixProg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if jp.Engine() != EngineJIT {
		t.Fatalf("engine %v", jp.Engine())
	}
	rng := rand.New(rand.NewPCG(21, 1))
	for round := 0; round < 50; round++ {
		frames := burstFrames(rng, 1+rng.IntN(100))
		want := cloneFrames(frames)
		ri, rj := NewRunner(0), NewRunner(0)
		wantV := make([]Action, len(want))
		wantR := make([]Redirect, len(want))
		wantFirst := -1
		var wantErr error
		for i := range want {
			wantV[i] = ri.Run(ip, &want[i])
			if wantV[i] == ActionRedirect {
				wantR[i] = ri.Redirect()
			}
			if err := ri.Fault(); err != nil && wantFirst < 0 {
				wantFirst, wantErr = i, err
			}
		}
		got := cloneFrames(frames)
		gotV := make([]Action, len(got))
		gotR := make([]Redirect, len(got))
		first := -1
		// Several bursts of random sizes, as poll loops make them.
		for at := 0; at < len(got); {
			k := min(len(got)-at, 1+rng.IntN(40))
			n, f := rj.RunBurst(jp, got[at:at+k], gotV[at:at+k], gotR[at:at+k])
			if n != k {
				t.Fatalf("round %d: ran %d of %d", round, n, k)
			}
			if f >= 0 && first < 0 {
				first = at + f
				if gotErr := rj.Fault(); gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() {
					t.Errorf("round %d: first fault %v, interpreter %v", round, gotErr, wantErr)
				}
			}
			at += k
		}
		if first != wantFirst {
			t.Errorf("round %d: first fault at %d, interpreter %d", round, first, wantFirst)
		}
		for i := range got {
			if gotV[i] != wantV[i] || gotR[i] != wantR[i] {
				t.Errorf("round %d frame %d: %v %+v, interpreter %v %+v", round, i, gotV[i], gotR[i], wantV[i], wantR[i])
			}
			g, w := got[i], want[i]
			if g.DataMeta != w.DataMeta || g.Data != w.Data || g.DataEnd != w.DataEnd || !bytes.Equal(g.Buf, w.Buf) {
				t.Errorf("round %d frame %d: frame %d/%d/%d, interpreter %d/%d/%d (or bytes differ)",
					round, i, g.DataMeta, g.Data, g.DataEnd, w.DataMeta, w.Data, w.DataEnd)
			}
		}
		gr, ga := rj.Runs()
		wr, wa := ri.Runs()
		if gr != wr || ga != wa {
			t.Errorf("round %d: runs %d aborted %d, interpreter %d %d", round, gr, ga, wr, wa)
		}
	}
	var fe *Fault
	if r := NewRunner(0); !errors.As(r.Fault(), &fe) && r.Fault() != nil {
		t.Errorf("a new Runner reports %v", r.Fault())
	}
}

// TestJITBurstNoAllocs: a native burst allocates nothing.
func TestJITBurstNoAllocs(t *testing.T) {
	needJIT(t)
	_, jp, err := loadPair(t, "burstmix", burstMixProg, 0)
	if err != nil {
		t.Fatal(err)
	}
	frames := burstFrames(rand.New(rand.NewPCG(3, 4)), 64)
	verdicts := make([]Action, len(frames))
	rds := make([]Redirect, len(frames))
	r := NewRunner(0)
	work := cloneFrames(frames)
	if a := testing.AllocsPerRun(100, func() {
		for i := range work {
			work[i].DataMeta, work[i].Data, work[i].DataEnd = frames[i].DataMeta, frames[i].Data, frames[i].DataEnd
		}
		r.RunBurst(jp, work, verdicts, rds)
	}); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
}
