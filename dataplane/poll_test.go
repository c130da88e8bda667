package dataplane

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
)

// Offset changes tweakRunner makes after the script ran (byte 17 of the
// frame): tweakHead moves the start of the frame as bpf_xdp_adjust_head
// would; the others leave offsets no program can, which the poll must
// abort whatever the verdict.
const (
	tweakNone = iota
	tweakHead
	tweakEndPast // DataEnd past the buffer
	tweakMeta    // DataMeta past Data
	tweakNeg     // DataMeta and Data negative
	numTweaks
)

// tweakRunner runs the script and then changes the offsets as byte 17 says.
type tweakRunner struct{ scriptRunner }

type tweakProg struct{ scriptProg }

func (p *tweakProg) NewRunner(int) Runner { return &tweakRunner{scriptRunner{s: &p.scriptProg}} }

func (r *tweakRunner) Run(f *bpf.Frame) bpf.Action {
	a := r.scriptRunner.Run(f)
	switch f.Buf[f.Data+17] {
	case tweakHead:
		f.Data += 4
	case tweakEndPast:
		f.DataEnd = len(f.Buf) + 1
	case tweakMeta:
		f.DataMeta = f.Data + 1
	case tweakNeg:
		f.DataMeta, f.Data = -2, -1
	}
	return a
}

// expectBurst is what a poll of frames must do.
type expectBurst struct {
	ctr        map[Counter]uint64
	tx, rd, pa [][]byte // sent on port 0, on port 1, passed to the stack
	dumped     [][]byte // every frame a capture of every verdict sees, in order
}

// expect works out, frame by frame, what the poll must do with frames.
func expect(frames [][]byte) expectBurst {
	x := expectBurst{ctr: map[Counter]uint64{}}
	for _, f := range frames {
		x.ctr[RxPackets]++
		x.ctr[RxBytes] += uint64(len(f))
		a, tw := bpf.Action(f[14]), f[17]
		if tw != tweakNone && tw != tweakHead {
			x.ctr[RxXDPAborted]++
			continue
		}
		out := bytes.Clone(f)
		if a == bpf.ActionTX {
			copy(out[0:6], f[6:12])
			copy(out[6:12], f[0:6])
		}
		if tw == tweakHead {
			out = out[4:]
		}
		x.dumped = append(x.dumped, out)
		switch a {
		case bpf.ActionDrop:
			x.ctr[RxXDPDrop]++
		case bpf.ActionTX:
			x.ctr[RxXDPTx]++
			x.ctr[TxPackets]++
			x.ctr[TxBytes] += uint64(len(out))
			x.tx = append(x.tx, out)
		case bpf.ActionRedirect:
			x.ctr[RxXDPRedirect]++
			x.rd = append(x.rd, out)
		case bpf.ActionPass:
			x.ctr[RxXDPPass]++
			x.pa = append(x.pa, out)
		default:
			x.ctr[RxXDPAborted]++
		}
	}
	return x
}

// mixBurst makes n frames of the given verdicts (each picked at random
// from acts) with offset changes at random (none mostly), then those of
// force at their index.
func mixBurst(rng *rand.Rand, n int, acts []bpf.Action, force map[int][2]byte, seq *uint32) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		a := acts[rng.IntN(len(acts))]
		tw := byte(tweakNone)
		if rng.IntN(8) == 0 {
			tw = byte(rng.IntN(numTweaks))
		}
		if fv, ok := force[i]; ok {
			a, tw = bpf.Action(fv[0]), fv[1]
		}
		*seq++
		f := frame(a, rdIfindex, 2, *seq, 64+rng.IntN(64))
		f[17] = tw
		out[i] = f
	}
	return out
}

// TestPollMixedBursts: bursts that mix every verdict, with DROP and TX
// frames in runs and alone, at the first and the last frame, and frames
// whose offsets are out of bounds anywhere among them: every frame takes
// its verdict's path (the bytes sent, redirected and passed, in order;
// a capture sees every frame in order), the counters summed per burst are
// exact after each poll, and every buffer is back in its pool.
func TestPollMixedBursts(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) { testPollMixed(t, capture) })
	}
}

func testPollMixed(t *testing.T, capture bool) {
	ps := newPorts(t, 2, memport.Config{Record: true, TxRing: 1024})
	st := &fakeStack{}
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0], Stack: st}, {Port: ps[1]}}, Program: &tweakProg{}})
	if err != nil {
		t.Fatal(err)
	}
	dump := &recAll{}
	if capture {
		e.AddCapture(dump)
	}
	all := []bpf.Action{bpf.ActionDrop, bpf.ActionTX, bpf.ActionRedirect, bpf.ActionPass, bpf.ActionAborted}
	common := []bpf.Action{bpf.ActionDrop, bpf.ActionTX}
	d, tx := byte(bpf.ActionDrop), byte(bpf.ActionTX)
	rng := rand.New(rand.NewPCG(21, 7))
	var seq uint32
	bursts := [][][]byte{
		mixBurst(rng, 64, []bpf.Action{bpf.ActionDrop}, nil, &seq),
		mixBurst(rng, 64, []bpf.Action{bpf.ActionDrop}, map[int][2]byte{63: {byte(bpf.ActionRedirect), 0}}, &seq),
		mixBurst(rng, 64, []bpf.Action{bpf.ActionDrop}, map[int][2]byte{0: {byte(bpf.ActionRedirect), 0}}, &seq),
		mixBurst(rng, 64, common, map[int][2]byte{0: {d, tweakEndPast}, 63: {tx, tweakNeg}}, &seq),
		mixBurst(rng, 64, []bpf.Action{bpf.ActionPass}, map[int][2]byte{0: {d, 0}, 63: {tx, tweakHead}}, &seq),
		mixBurst(rng, 1, []bpf.Action{bpf.ActionTX}, nil, &seq),
	}
	for range 30 {
		acts := all
		if rng.IntN(2) == 0 {
			acts = common
		}
		bursts = append(bursts, mixBurst(rng, 1+rng.IntN(64), acts, nil, &seq))
	}
	total := map[Counter]uint64{}
	for bi, in := range bursts {
		for _, f := range in {
			if !ps[0].Rx(0).Inject(f) {
				t.Fatal("inject failed")
			}
		}
		if n, err := e.PollOnce(0, 0); err != nil || n != len(in) {
			t.Fatalf("burst %d: poll took %d (%v), want %d", bi, n, err, len(in))
		}
		x := expect(in)
		for c, v := range x.ctr {
			total[c] += v
		}
		checkBurst(t, bi, e, ps, st, dump, x, total, capture)
	}
	stopAndCheck(t, e, ps...)
}

// checkBurst compares what a poll did with x (its burst's) and total (the
// counters of all bursts so far).
func checkBurst(t *testing.T, bi int, e *Engine, ps []*memport.Port, st *fakeStack, dump *recAll, x expectBurst, total map[Counter]uint64, capture bool) {
	t.Helper()
	s := e.Snapshot()
	c := s.Ports[0].Counters
	for _, cn := range []Counter{RxPackets, RxBytes, RxXDPDrop, RxXDPTx, RxXDPRedirect, RxXDPPass, RxXDPAborted, TxPackets, TxBytes} {
		if c[cn] != total[cn] {
			t.Errorf("burst %d: %s = %d, want %d", bi, cn, c[cn], total[cn])
		}
	}
	if got := s.Ports[1].Counters[TxXDPXmit]; got != total[RxXDPRedirect] {
		t.Errorf("burst %d: port 1 tx_xdp_xmit %d, want %d", bi, got, total[RxXDPRedirect])
	}
	same := func(what string, got, want [][]byte) {
		if len(got) != len(want) {
			t.Errorf("burst %d: %s %d frames, want %d", bi, what, len(got), len(want))
			return
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("burst %d: %s frame %d is %x, want %x", bi, what, i, got[i], want[i])
			}
		}
	}
	same("port 0 sent", ps[0].Tx(0).Sent(), x.tx)
	same("port 1 sent", ps[1].Tx(0).Sent(), x.rd)
	st.mu.Lock()
	passed := st.frames
	st.frames = nil
	st.mu.Unlock()
	same("the stack got", passed, x.pa)
	if capture {
		same("the capture saw", dump.take(), x.dumped)
	}
	if total[RxXDPAborted] > 0 && !strings.Contains(s.Ports[0].LastFault, "queue 0") {
		t.Errorf("burst %d: last fault %q after an abort", bi, s.Ports[0].LastFault)
	}
}

// recAll keeps every frame it is shown.
type recAll struct{ frames [][]byte }

func (d *recAll) Want(bpf.Action) bool { return true }
func (d *recAll) Dump(_, _ int, _ bpf.Action, f []byte) {
	d.frames = append(d.frames, bytes.Clone(f))
}
func (d *recAll) take() [][]byte { f := d.frames; d.frames = nil; return f }

// TestSidesPartition: each counter is published by exactly one side, so
// Snapshot, which adds the two, counts each once.
func TestSidesPartition(t *testing.T) {
	seen := map[Counter]int{}
	for _, c := range append(append([]Counter(nil), rxSide...), txSide...) {
		seen[c]++
	}
	for c := range NumCounters {
		if seen[c] != 1 {
			t.Errorf("%s is on %d sides", c, seen[c])
		}
	}
	if len(seen) != int(NumCounters) {
		t.Errorf("%d counters on the sides, want %d", len(seen), NumCounters)
	}
}
