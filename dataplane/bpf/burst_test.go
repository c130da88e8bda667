package bpf

import (
	"errors"
	"strings"
	"testing"
)

// TestRunBurst: a burst gives each frame the verdict Run gives it, stores
// where REDIRECT verdicts go, reports the first fault of the burst (not the
// last run's) and does not allocate.
func TestRunBurst(t *testing.T) {
	c := loadTestdata(t, "parse.o", nil)
	parse, err := c.DefaultXDP()
	if err != nil {
		t.Fatal(err)
	}
	pkts := [][]byte{udpFrame(53), udpFrame(9), udpFrame(9), udpFrame(80)}
	frames := make([]Frame, len(pkts)+2)
	for i, pk := range pkts {
		frames[i] = *newFrame(pk)
	}
	// Two frames with offsets outside their buffer: aborted.
	frames[4] = *newFrame(udpFrame(53))
	frames[4].DataEnd = len(frames[4].Buf) + 1
	frames[5] = *newFrame(udpFrame(53))
	frames[5].Data = frames[5].DataEnd + 1
	want := make([]Action, len(frames))
	r := NewRunner(0)
	for i := range frames {
		f := frames[i]
		want[i] = r.Run(parse, &f)
	}
	if want[0] != ActionPass || want[1] != ActionDrop || want[4] != ActionAborted || want[5] != ActionAborted {
		t.Fatalf("Run verdicts %v", want)
	}
	verdicts := make([]Action, len(frames))
	n, first := r.RunBurst(parse, frames, verdicts, nil)
	if n != len(frames) || first != 4 {
		t.Errorf("ran %d, first fault %d; want %d, 4", n, first, len(frames))
	}
	for i := range want {
		if verdicts[i] != want[i] {
			t.Errorf("frame %d: %v, Run gives %v", i, verdicts[i], want[i])
		}
	}
	var fe *Fault
	if err := r.Fault(); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "invalid frame") {
		t.Errorf("Fault after the burst: %v", err)
	}
	// Fewer verdict slots than frames: only that many run.
	if n, first := r.RunBurst(parse, frames, verdicts[:2], nil); n != 2 || first != -1 || r.Fault() != nil {
		t.Errorf("short burst: %d %d %v", n, first, r.Fault())
	}
	if n, _ := r.RunBurst(parse, frames, verdicts, make([]Redirect, 3)); n != 3 {
		t.Errorf("burst bounded by redirects: ran %d, want 3", n)
	}
	if a := testing.AllocsPerRun(100, func() { r.RunBurst(parse, frames[:4], verdicts, nil) }); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}

	// Redirects: each REDIRECT verdict's target lands in its slot.
	red, err := LoadRaw("redirect", asmProg(
		ins(0x61, 1, 1, 12, 0), // r1 = ctx->ingress_ifindex
		ins(0x07, 1, 0, 0, 100),
		ins(0xb7, 2, 0, 0, 0),
		ins(0x85, 0, 0, 0, 23), // call redirect
		exitInsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frames[:3] {
		frames[i] = *newFrame(udpFrame(9))
		frames[i].IngressIfindex = uint32(i + 1)
	}
	rds := make([]Redirect, 3)
	if n, first := r.RunBurst(red, frames[:3], verdicts, rds); n != 3 || first != -1 {
		t.Fatalf("redirect burst: %d %d %v", n, first, r.Fault())
	}
	for i, rd := range rds {
		if verdicts[i] != ActionRedirect || rd.Kind != RedirectIfindex || rd.Ifindex != uint32(i+101) {
			t.Errorf("frame %d: %v %+v", i, verdicts[i], rd)
		}
	}
}

// TestRunBurstRecovers: an internal panic of the interpreter (here forced by
// breaking the Runner's region table) aborts the frames it hits, is reported
// as an internal error and never escapes RunBurst or Run.
func TestRunBurstRecovers(t *testing.T) {
	p, err := LoadRaw("pass", asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	frames := []Frame{*newFrame(udpFrame(9)), *newFrame(udpFrame(9)), *newFrame(udpFrame(9))}
	verdicts := []Action{ActionPass, ActionPass, ActionPass}
	good := r.regions
	r.regions = nil // every run now panics on the packet region
	n, first := r.RunBurst(p, frames, verdicts, nil)
	if n != 3 || first != 0 {
		t.Errorf("ran %d, first fault %d; want 3, 0", n, first)
	}
	for i, v := range verdicts {
		if v != ActionAborted {
			t.Errorf("frame %d: %v, want XDP_ABORTED", i, v)
		}
	}
	var fe *Fault
	if err := r.Fault(); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "internal error") {
		t.Errorf("Fault: %v", err)
	}
	if runs, aborted := r.Runs(); runs != 3 || aborted != 3 {
		t.Errorf("runs %d aborted %d", runs, aborted)
	}
	if a := r.Run(p, &frames[0]); a != ActionAborted {
		t.Errorf("Run: %v", a)
	}
	r.regions = good
	if n, first := r.RunBurst(p, frames, verdicts, nil); n != 3 || first != -1 || verdicts[2] != ActionPass {
		t.Errorf("after repair: %d %d %v", n, first, verdicts)
	}
}

// TestRegistersClearedBetweenRuns: the Runner's register files are reused,
// but a run never sees the registers an earlier run (of another program)
// left: r0 and r3-r9 start at zero.
func TestRegistersClearedBetweenRuns(t *testing.T) {
	var set [][]byte
	for reg := byte(0); reg <= 9; reg++ {
		set = append(set, ins(0xb7, reg, 0, 0, 77)) // rN = 77
	}
	writer, err := LoadRaw("writer", asmProg(append(set, exitInsn)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	var sum [][]byte
	sum = append(sum, ins(0xbf, 1, 0, 0, 0)) // r1 = r0 (r0 before any write)
	for reg := byte(3); reg <= 9; reg++ {
		sum = append(sum, ins(0x0f, 1, reg, 0, 0)) // r1 += rN
	}
	sum = append(sum, ins(0xbf, 0, 1, 0, 0), exitInsn) // r0 = r1
	reader, err := LoadRaw("reader", asmProg(sum...), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(9))
	if ret, ok := r.RunFrame(writer, f); !ok || ret != 77 {
		t.Fatalf("writer: %d %v", ret, ok)
	}
	if ret, ok := r.RunFrame(reader, f); !ok || ret != 0 {
		t.Errorf("reader saw %d from the last run's registers, want 0", ret)
	}
}
