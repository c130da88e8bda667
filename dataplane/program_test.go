package dataplane

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// scriptFrame is a frame for scriptProg with verdict act (redirects go to
// ifindex target).
func scriptFrame(act byte, target byte) bpf.Frame {
	d := make([]byte, 64)
	d[14], d[15], d[16] = act, rdIfindex, target
	return bpf.Frame{Buf: d, DataEnd: len(d)}
}

// TestLoopRunnerBurst: a Runner without RunBurst runs a burst frame by frame
// with the BurstRunner contract: verdicts and redirect targets per frame, the
// first aborted frame as firstFault with its own Fault (nil when the program
// returned XDP_ABORTED itself), no allocation.
func TestLoopRunnerBurst(t *testing.T) {
	r := burstRunner((&scriptProg{}).NewRunner(0))
	if _, ok := r.(*loopRunner); !ok {
		t.Fatalf("scriptRunner wrapped as %T, want *loopRunner", r)
	}
	if _, ok := burstRunner(BPF(nil).NewRunner(0)).(*bpfRunner); !ok {
		t.Fatal("the interpreter's runner was wrapped instead of used as is")
	}
	frames := []bpf.Frame{
		scriptFrame(byte(bpf.ActionDrop), 0),
		scriptFrame(byte(bpf.ActionRedirect), 5),
		scriptFrame(0xEE, 0), // faults
		scriptFrame(byte(bpf.ActionRedirect), 9),
		scriptFrame(7, 0), // invalid verdict
	}
	verdicts := make([]bpf.Action, len(frames))
	rds := make([]bpf.Redirect, len(frames))
	n, first := r.RunBurst(frames, verdicts, rds)
	if n != len(frames) || first != 2 {
		t.Fatalf("ran %d, first fault %d; want %d, 2", n, first, len(frames))
	}
	want := []bpf.Action{bpf.ActionDrop, bpf.ActionRedirect, bpf.ActionAborted, bpf.ActionRedirect, 7}
	for i := range want {
		if verdicts[i] != want[i] {
			t.Errorf("frame %d: verdict %v, want %v", i, verdicts[i], want[i])
		}
	}
	if rds[1].Ifindex != 5 || rds[3].Ifindex != 9 || rds[1].Kind != bpf.RedirectIfindex {
		t.Errorf("redirect targets %+v %+v, want ifindex 5 and 9", rds[1], rds[3])
	}
	if err := r.Fault(); !errors.Is(err, errTestFault) {
		t.Errorf("Fault after the burst %v, want the first fault %v", err, errTestFault)
	}

	// The program's own XDP_ABORTED first: it is firstFault, with no fault.
	frames[0] = bpf.Frame{Buf: make([]byte, 8), DataEnd: 8} // too short: ABORTED
	if _, first := r.RunBurst(frames, verdicts, rds); first != 0 || r.Fault() != nil {
		t.Errorf("first fault %d (%v), want 0 with no fault", first, r.Fault())
	}
	// Bounded by the shortest slice; a clean burst has no fault.
	if n, first := r.RunBurst(frames[1:], verdicts, rds[:1]); n != 1 || first != -1 || r.Fault() != nil {
		t.Errorf("short burst: ran %d, first fault %d (%v); want 1, -1", n, first, r.Fault())
	}
	if a := testing.AllocsPerRun(100, func() { r.RunBurst(frames[1:2], verdicts, rds) }); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
}
