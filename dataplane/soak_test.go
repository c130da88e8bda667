package dataplane_test

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
)

// verdictProgram is an XDP program whose verdict is byte 14 of the frame (the
// first byte after the Ethernet header); for XDP_REDIRECT it calls
// bpf_redirect(byte 15, 0). Frames shorter than 16 bytes are dropped.
func verdictProgram(t testing.TB) *bpf.Program {
	t.Helper()
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 16),
		asm.JGT.Reg(asm.R4, asm.R3, "drop"),
		asm.LoadMem(asm.R0, asm.R2, 14, asm.Byte),
		asm.JNE.Imm(asm.R0, int32(bpf.ActionRedirect), "out"),
		asm.LoadMem(asm.R1, asm.R2, 15, asm.Byte),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return().WithSymbol("out"),
		asm.Mov.Imm(asm.R0, int32(bpf.ActionDrop)).WithSymbol("drop"),
		asm.Return(),
	}
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"xdp_verdict": {Name: "xdp_verdict", Type: ebpf.XDP, SectionName: "xdp", Instructions: insns, License: "MIT"},
	}, Maps: map[string]*ebpf.MapSpec{}}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("xdp_verdict")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// verdictFrame is a UDP frame of size bytes whose byte 14 is the verdict
// (overwriting the IPv4 version field: the frame is only a carrier).
func verdictFrame(t testing.TB, act bpf.Action, target byte, size int) []byte {
	f := pktgen.DefaultFlow()
	f.Size = size
	b, err := f.UDP()
	if err != nil {
		t.Fatal(err)
	}
	b[14], b[15] = byte(act), target
	return b
}

// soakFrames is how many frames TestSoak sends through each verdict.
var soakFrames = 1_000_000

// TestSoak sends a million frames of random sizes through each verdict, then
// checks that every counter adds up and every buffer is back in its pool.
func TestSoak(t *testing.T) {
	n := soakFrames
	if testing.Short() {
		n = 50_000
	}
	b := newSoakBed(t, 2)
	st := &countStack{}
	e := start(t, dataplane.Config{
		Ports:   []dataplane.PortConfig{{Port: b.Ports()[0], Stack: st}, {Port: b.Ports()[1]}},
		Program: dataplane.BPF(verdictProgram(t)),
	})
	// 64 distinct sizes from 60 to 1514, cycled in random order.
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 64)
	for i := range sizes {
		sizes[i] = 60 + rng.IntN(1514-60+1)
	}
	acts := []bpf.Action{bpf.ActionDrop, bpf.ActionPass, bpf.ActionTX, bpf.ActionRedirect, bpf.ActionAborted}
	start := time.Now()
	var wantBytes uint64
	for _, act := range acts {
		frames := make([][]byte, len(sizes))
		for i, s := range sizes {
			frames[i] = verdictFrame(t, act, 2, s)
		}
		for i := 0; i < n; i++ {
			f := frames[rng.IntN(len(frames))]
			wantBytes += uint64(len(f))
			b.Inject(0, f)
		}
	}
	total := uint64(n * len(acts))
	waitCounter(t, e, 0, dataplane.RxPackets, total)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	s := e.Snapshot()
	c0, c1 := s.Ports[0].Counters, s.Ports[1].Counters
	t.Logf("%d frames in %v (%.2f Mpps including injection)", total, el, float64(total)/el.Seconds()/1e6)
	if c0[dataplane.RxPackets] != total || c0[dataplane.RxBytes] != wantBytes {
		t.Errorf("rx %d frames %d bytes, want %d %d", c0[dataplane.RxPackets], c0[dataplane.RxBytes], total, wantBytes)
	}
	sum := c0[dataplane.RxXDPDrop] + c0[dataplane.RxXDPPass] + c0[dataplane.RxXDPTx] + c0[dataplane.RxXDPRedirect] + c0[dataplane.RxXDPAborted]
	if sum != c0[dataplane.RxPackets] {
		t.Errorf("drop+pass+tx+redirect+aborted = %d, rx = %d", sum, c0[dataplane.RxPackets])
	}
	for _, k := range []dataplane.Counter{dataplane.RxXDPDrop, dataplane.RxXDPPass, dataplane.RxXDPTx, dataplane.RxXDPRedirect, dataplane.RxXDPAborted} {
		if c0[k] != uint64(n) {
			t.Errorf("%s = %d, want %d", k, c0[k], n)
		}
	}
	if got := c0[dataplane.TxPackets] + c0[dataplane.RxXDPTxErrors]; got != uint64(n) || b.SentCount(0) != c0[dataplane.TxPackets] {
		t.Errorf("XDP_TX: sent %d + errors %d (wire %d), want %d", c0[dataplane.TxPackets], c0[dataplane.RxXDPTxErrors], b.SentCount(0), n)
	}
	// A redirected frame is copied into a buffer of the target's pool (the
	// ports have separate DMA memory); with none free (all on a TX ring the
	// device has not finished) it is dropped and counted in no_buffer.
	if got := c1[dataplane.TxXDPXmit] + c1[dataplane.TxXDPXmitErrors] + c0[dataplane.NoBuffer]; got != uint64(n) || b.SentCount(1) != c1[dataplane.TxXDPXmit] {
		t.Errorf("redirect: xmit %d + errors %d + no buffer %d (wire %d), want %d", c1[dataplane.TxXDPXmit], c1[dataplane.TxXDPXmitErrors], c0[dataplane.NoBuffer], b.SentCount(1), n)
	}
	if st.n.Load() != uint64(n) {
		t.Errorf("stack got %d, want %d", st.n.Load(), n)
	}
	if !strings.Contains(s.Ports[0].LastFault, "XDP_ABORTED") {
		t.Errorf("last fault %q, want the program's XDP_ABORTED", s.Ports[0].LastFault)
	}
	b.Close(t)
}

type countStack struct{ n atomic.Uint64 }

func (s *countStack) Deliver([]byte) error { s.n.Add(1); return nil }

// TestE2EProgramFault: a program that reads past data_end is stopped by the
// interpreter; the frame is dropped as XDP_ABORTED, counted, and the fault is
// kept as the port's last fault.
func TestE2EProgramFault(t *testing.T) {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R0, asm.R2, 4000, asm.Byte),
		asm.Mov.Imm(asm.R0, int32(bpf.ActionPass)),
		asm.Return(),
	}
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"xdp_oob": {Name: "xdp_oob", Type: ebpf.XDP, SectionName: "xdp", Instructions: insns, License: "MIT"},
	}, Maps: map[string]*ebpf.MapSpec{}}
	c, err := bpf.LoadCollectionSpec(spec, &bpf.Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.Program("xdp_oob")
	if err != nil {
		t.Fatal(err)
	}
	b := newBed(t, 1)
	st := &countStack{}
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: st}}, Program: dataplane.BPF(p)})
	for _, f := range udpFrames(t, 100, 64) {
		b.Inject(0, f)
	}
	waitCounter(t, e, 0, dataplane.RxXDPAborted, 100)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot().Ports[0]
	if s.Counters[dataplane.RxPackets] != 100 || s.Counters[dataplane.RxXDPPass] != 0 || st.n.Load() != 0 {
		t.Errorf("counters %v, stack %d: want all 100 aborted", s.Counters.Map(), st.n.Load())
	}
	if !strings.Contains(s.LastFault, "program fault") || !strings.Contains(s.LastFault, "xdp_oob") {
		t.Errorf("last fault %q: want the interpreter's reason", s.LastFault)
	}
	t.Logf("last fault: %s", s.LastFault)
	b.Close(t)
}
