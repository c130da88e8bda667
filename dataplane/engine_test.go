package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/dma"
)

func newPorts(t *testing.T, n int, cfg memport.Config) []*memport.Port {
	t.Helper()
	var ps []*memport.Port
	for i := 0; i < n; i++ {
		c := cfg
		c.Name = "mem" + string(rune('0'+i))
		p, err := memport.New(c)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func stopAndCheck(t *testing.T, e *Engine, ports ...*memport.Port) {
	t.Helper()
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, p := range ports {
		_ = p.Close()
		if err := p.CheckIdle(); err != nil {
			t.Errorf("buffer lost: %v", err)
		}
		for q := 0; q < p.NumQueues(); q++ {
			if _, _, _, bad := p.Tx(q).Counts(); bad != 0 {
				t.Errorf("%s: %d buffers sent by a non-owner", p.Name(), bad)
			}
		}
	}
}

func TestEveryVerdict(t *testing.T) {
	ps := newPorts(t, 2, memport.Config{Record: true})
	st0, st1 := &fakeStack{}, &fakeStack{}
	devmap := newArrayMap("tx_port", 4, 4)
	var k, v [4]byte
	binary.LittleEndian.PutUint32(k[:], 1)
	binary.LittleEndian.PutUint32(v[:], 2) // entry 1 -> ifindex 2 (port 1)
	_ = devmap.Update(k[:], v[:], 0, -1)
	prog := &scriptProg{devmap: devmap}
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0], Stack: st0}, {Port: ps[1], Stack: st1}}, Program: prog})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	in := [][]byte{
		frame(bpf.ActionDrop, 0, 0, 1, 64),
		frame(bpf.ActionTX, 0, 0, 2, 100),
		frame(bpf.ActionRedirect, rdIfindex, 2, 3, 64),
		frame(bpf.ActionRedirect, rdDevMap, 1, 4, 128),
		frame(bpf.ActionPass, 0, 0, 5, 70),
		frame(bpf.ActionAborted, 0, 0, 6, 64),
		frame(bpf.ActionRedirect, rdIfindex, 9, 8, 64), // no port 9
	}
	for _, f := range in {
		if !ps[0].Rx(0).Inject(f) {
			t.Fatal("inject failed")
		}
	}
	waitFor(t, "all frames counted", func() bool {
		s := e.Snapshot()
		return s.Ports[0].Counters[RxPackets] == uint64(len(in)) && s.Ports[1].Counters[TxXDPXmit] == 2
	})
	if f := e.Snapshot().Ports[0].LastFault; f != "queue 0: XDP_ABORTED" {
		t.Errorf("last fault %q, want the program's own XDP_ABORTED", f)
	}
	// A fault, then an invalid verdict, each in a poll of its own.
	ps[0].Rx(0).Inject(frame(0xEE, 0, 0, 7, 64))
	waitFor(t, "fault recorded", func() bool { return strings.Contains(e.Snapshot().Ports[0].LastFault, errTestFault.Error()) })
	ps[0].Rx(0).Inject(frame(7, 0, 0, 9, 64))
	waitFor(t, "invalid verdict recorded", func() bool { return strings.Contains(e.Snapshot().Ports[0].LastFault, "invalid verdict 7") })
	s := e.Snapshot()
	c := s.Ports[0].Counters
	want := map[Counter]uint64{
		RxPackets: 9, RxXDPDrop: 1, RxXDPTx: 1, RxXDPRedirect: 3, RxXDPRedirectErrors: 1,
		RxXDPPass: 1, RxXDPAborted: 3, TxPackets: 1, TxBytes: 100,
	}
	for cn, w := range want {
		if c[cn] != w {
			t.Errorf("port0 %s = %d, want %d", cn, c[cn], w)
		}
	}
	if sum := c[RxXDPDrop] + c[RxXDPPass] + c[RxXDPTx] + c[RxXDPRedirect] + c[RxXDPAborted]; sum != c[RxPackets] {
		t.Errorf("verdicts add up to %d, rx_packets %d", sum, c[RxPackets])
	}
	if c1 := s.Ports[1].Counters; c1[TxXDPXmit] != 2 || c1[TxPackets] != 2 || c1[TxBytes] != 64+128 {
		t.Errorf("port1 xmit %d tx %d bytes %d, want 2 2 192", c1[TxXDPXmit], c1[TxPackets], c1[TxBytes])
	}
	// Byte-exact: the TX frame comes back MAC-swapped, the redirected ones as
	// they were, the PASS frame reaches port 0's stack only.
	tx0 := ps[0].Tx(0).Sent()
	wantTX := frame(bpf.ActionTX, 0, 0, 2, 100)
	copy(wantTX[0:6], in[1][6:12])
	copy(wantTX[6:12], in[1][0:6])
	if len(tx0) != 1 || !bytes.Equal(tx0[0], wantTX) {
		t.Errorf("port0 sent %x, want one frame %x", tx0, wantTX)
	}
	tx1 := ps[1].Tx(0).Sent()
	if len(tx1) != 2 || !bytes.Equal(tx1[0], in[2]) || !bytes.Equal(tx1[1], in[3]) {
		t.Errorf("port1 sent %d frames, want the two redirected ones byte for byte", len(tx1))
	}
	if got := st0.got(); len(got) != 1 || !bytes.Equal(got[0], in[4]) {
		t.Errorf("stack 0 got %d frames, want the PASS frame", len(got))
	}
	if got := st1.got(); len(got) != 0 {
		t.Errorf("stack 1 got %d frames, want none", len(got))
	}
	stopAndCheck(t, e, ps...)
}

func TestRedirectBulkAndErrors(t *testing.T) {
	ps := newPorts(t, 2, memport.Config{TxRing: 40, Hold: true})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}, {Port: ps[1]}}, Program: &scriptProg{}})
	if err != nil {
		t.Fatal(err)
	}
	// One poll by hand (no goroutines): 50 redirects to port 1 whose ring has
	// room for 40.
	pl := e.pollers[0]
	for i := 0; i < 50; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdIfindex, 2, uint32(i), 64))
	}
	if n := pl.poll(); n != 50 {
		t.Fatalf("poll took %d, want 50", n)
	}
	pk, _, tails, _ := ps[1].Tx(0).Counts()
	if pk != 40 || tails != 3 {
		t.Errorf("port1 got %d frames in %d tail writes, want 40 in 3 (bulks of 16, 16, 18->8)", pk, tails)
	}
	s := e.Snapshot()
	if c := s.Ports[1].Counters; c[TxXDPXmit] != 40 || c[TxXDPXmitErrors] != 10 {
		t.Errorf("xmit %d errors %d, want 40 10", c[TxXDPXmit], c[TxXDPXmitErrors])
	}
	// Link down: everything redirected there fails.
	ps[1].Tx(0).Complete()
	ps[1].SetLink(false)
	e.RefreshLinks()
	for i := 0; i < 5; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdIfindex, 2, uint32(i), 64))
	}
	pl.poll()
	s = e.Snapshot()
	if c := s.Ports[1].Counters; c[TxXDPXmitErrors] != 15 {
		t.Errorf("after link down: errors %d, want 15", c[TxXDPXmitErrors])
	}
	// XDP_TX on a full ring: rx_xdp_tx_errors; one tail write for the burst.
	ps[0].Tx(0).Complete()
	for i := 0; i < 45; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionTX, 0, 0, uint32(i), 64))
	}
	_, _, tailsBefore, _ := ps[0].Tx(0).Counts()
	pl.poll()
	_, _, tailsAfter, _ := ps[0].Tx(0).Counts()
	if tailsAfter-tailsBefore != 1 {
		t.Errorf("XDP_TX burst took %d tail writes, want 1", tailsAfter-tailsBefore)
	}
	s = e.Snapshot()
	if c := s.Ports[0].Counters; c[RxXDPTx] != 45 || c[RxXDPTxErrors] != 5 || c[TxPackets] != 40 {
		t.Errorf("tx %d tx_errors %d tx_packets %d, want 45 5 40", c[RxXDPTx], c[RxXDPTxErrors], c[TxPackets])
	}
	ps[0].Tx(0).Complete()
	ps[1].Tx(0).Complete()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		_ = p.Close()
		if err := p.CheckIdle(); err != nil {
			t.Error(err)
		}
	}
}

func TestCPUMap(t *testing.T) {
	ps := newPorts(t, 2, memport.Config{Record: true})
	st := &fakeStack{}
	cpumap := newArrayMap("cpu_map", 4, 8)
	setEntry := func(key, qsize, prog uint32) {
		var k [4]byte
		v := make([]byte, 8)
		binary.LittleEndian.PutUint32(k[:], key)
		binary.LittleEndian.PutUint32(v, qsize)
		binary.LittleEndian.PutUint32(v[4:], prog)
		_ = cpumap.Update(k[:], v, 0, -1)
	}
	setEntry(0, 64, 0) // no program: pass
	setEntry(1, 64, 7) // program 7: the script (redirects by the frame's bytes)
	prog := &scriptProg{cpumap: cpumap}
	// Program 7 on the worker sees the same frame: byte 14 says REDIRECT cpumap,
	// which a cpumap program may not do. Use a second script that forwards to
	// port 1 instead.
	fwd := ProgramFunc(func(cpu int) Runner { return &fwdRunner{ifindex: 2} })
	e, err := New(Config{
		Ports:      []PortConfig{{Port: ps[0], Stack: st}, {Port: ps[1]}},
		Program:    prog,
		CPUWorkers: 3,
		CPUMapProgram: func(id uint32) (Program, error) {
			if id == 7 {
				return fwd, nil
			}
			return nil, errors.New("no such program")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.cfg.NumSlots(); got != 5 {
		t.Errorf("NumSlots %d, want 5 (2 pollers + 3 workers)", got)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdCPUMap, 0, uint32(i), 64))
	}
	for i := 0; i < 10; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdCPUMap, 1, uint32(100+i), 80))
	}
	ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdCPUMap, 2, 200, 64)) // entry 2 empty
	// Every frame handled: the empty entry's error counted too.
	waitFor(t, "cpumap frames handled", func() bool {
		s := e.Snapshot()
		return len(st.got()) == 20 && s.Ports[1].Counters[TxXDPXmit] == 10 && s.Ports[0].Counters[RxXDPRedirectErrors] == 1
	})
	for i, f := range st.got() {
		if !bytes.Equal(f, frame(bpf.ActionRedirect, rdCPUMap, 0, uint32(i), 64)) {
			t.Errorf("stack frame %d differs", i)
			break
		}
	}
	for i, f := range ps[1].Tx(0).Sent() {
		if !bytes.Equal(f, frame(bpf.ActionRedirect, rdCPUMap, 1, uint32(100+i), 80)) {
			t.Errorf("port1 frame %d differs", i)
			break
		}
	}
	s := e.Snapshot()
	if c := s.Ports[0].Counters; c[RxXDPRedirect] != 31 || c[RxXDPRedirectErrors] != 1 {
		t.Errorf("redirect %d errors %d, want 31 1", c[RxXDPRedirect], c[RxXDPRedirectErrors])
	}
	if w := s.Workers; w[0].Pass != 20 || w[1].Redirect != 10 || w[2].Processed != 0 {
		t.Errorf("workers %+v", w)
	}
	stopAndCheck(t, e, ps...)
}

// fwdRunner redirects everything to an ifindex.
type fwdRunner struct{ ifindex uint32 }

func (f *fwdRunner) Run(*bpf.Frame) bpf.Action { return bpf.ActionRedirect }
func (f *fwdRunner) Redirect() bpf.Redirect {
	return bpf.Redirect{Kind: bpf.RedirectIfindex, Ifindex: f.ifindex}
}
func (f *fwdRunner) Fault() error { return nil }

func TestXSKConsumer(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{Record: true})
	xskmap := newArrayMap("xsks", 4, 4)
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{xskmap: xskmap}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.BindXSK(xskmap, 0, 0, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.BindXSK(xskmap, 0, 0, 0, 8); err == nil {
		t.Error("second XSK on the same entry accepted")
	}
	if _, err := e.BindXSK(xskmap, 1, 0, 0, 6); err == nil {
		t.Error("ring of 6 accepted")
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// 12 frames into a ring of 8 nobody reads: 8 arrive, 4 are dropped.
	for i := 0; i < 12; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdXSKMap, 0, uint32(i), 64+i))
	}
	waitFor(t, "12 frames", func() bool { return e.Snapshot().Ports[0].Counters[RxPackets] == 12 })
	s := e.Snapshot()
	if c := s.Ports[0].Counters; c[RingFull] != 4 || s.XSKs[0].Rx != 8 || s.XSKs[0].RingFull != 4 {
		t.Errorf("ring_full %d xsk %+v, want 4 drops and 8 received", c[RingFull], s.XSKs[0])
	}
	bufs := make([]*dma.Buf, 16)
	n := x.Recv(bufs, time.Second)
	if n != 8 {
		t.Fatalf("Recv %d, want 8", n)
	}
	for i, b := range bufs[:n] {
		if b.Owner() != dma.OwnerApp || !bytes.Equal(b.Data(), frame(bpf.ActionRedirect, rdXSKMap, 0, uint32(i), 64+i)) {
			t.Fatalf("frame %d: owner %v, bytes differ", i, b.Owner())
		}
	}
	// Send four back (the consumer's own TX), release the rest.
	if sent := x.Send(bufs[:4]); sent != 4 {
		t.Errorf("Send took %d, want 4", sent)
	}
	x.Release(bufs[4:n]...)
	// A frame the consumer makes itself.
	b := x.Alloc()
	b.Len = copy(b.Mem[b.Off:], frame(bpf.ActionDrop, 0, 0, 99, 64))
	if x.Send([]*dma.Buf{b}) != 1 {
		t.Error("own frame not sent")
	}
	if got := ps[0].Tx(0).Sent(); len(got) != 5 || !bytes.Equal(got[4], frame(bpf.ActionDrop, 0, 0, 99, 64)) {
		t.Errorf("port sent %d frames, want 5 ending with the consumer's own", len(got))
	}
	// Now the ring has room: a waiting Recv gets the next frame.
	go func() {
		time.Sleep(20 * time.Millisecond)
		ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdXSKMap, 0, 50, 64))
	}()
	if n := x.Recv(bufs, 2*time.Second); n != 1 {
		t.Fatalf("blocking Recv got %d, want 1", n)
	}
	x.Release(bufs[0])
	if n := x.Recv(bufs, 10*time.Millisecond); n != 0 {
		t.Errorf("Recv on an empty ring got %d", n)
	}
	// Leave one frame on the ring: Stop must free it.
	ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdXSKMap, 0, 51, 64))
	waitFor(t, "frame 51", func() bool { return e.Snapshot().XSKs[0].Rx == 10 })
	x.Close()
	ps[0].Rx(0).Inject(frame(bpf.ActionRedirect, rdXSKMap, 0, 52, 64))
	waitFor(t, "frame 52 refused", func() bool { return e.Snapshot().Ports[0].Counters[RxXDPRedirectErrors] == 1 })
	stopAndCheck(t, e, ps...)
}

func TestIdleWakesOnInterrupt(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}, IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let it go idle, sleeping on the IRQ
	start := time.Now()
	ps[0].Rx(0).Inject(frame(bpf.ActionDrop, 0, 0, 1, 64))
	waitFor(t, "frame seen", func() bool { return e.Snapshot().Ports[0].Counters[RxXDPDrop] == 1 })
	// Without the interrupt the loop would sleep out its 2 s timeout; the
	// bound leaves room for a loaded machine.
	if d := time.Since(start); d > time.Second {
		t.Errorf("frame handled after %v: the interrupt did not wake the loop", d)
	}
	stopAndCheck(t, e, ps...)
}

func TestPinning(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}, CPUs: []int{0}, BusyPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatalf("pinning to CPU 0: %v", err)
	}
	ps[0].Rx(0).Inject(frame(bpf.ActionDrop, 0, 0, 1, 64))
	waitFor(t, "busy poll sees the frame", func() bool { return e.Snapshot().Ports[0].Counters[RxXDPDrop] == 1 })
	stopAndCheck(t, e, ps...)

	e2, _ := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}, CPUs: []int{5000}})
	if err := e2.Start(); err == nil {
		t.Error("pinning to CPU 5000 succeeded")
	}
}

func TestConfigErrors(t *testing.T) {
	ps := newPorts(t, 2, memport.Config{})
	for name, cfg := range map[string]Config{
		"no ports":    {Program: &scriptProg{}},
		"no program":  {Ports: []PortConfig{{Port: ps[0]}}},
		"too many q":  {Ports: []PortConfig{{Port: ps[0], Queues: 3}}, Program: &scriptProg{}},
		"dup ifindex": {Ports: []PortConfig{{Port: ps[0], Ifindex: 4}, {Port: ps[1], Ifindex: 4}}, Program: &scriptProg{}},
		"budget":      {Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}, Budget: 100000},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
}

func TestPollNoAllocs(t *testing.T) {
	ps := newPorts(t, 2, memport.Config{TxRing: 4096})
	devmap := newArrayMap("tx_port", 4, 4)
	var k, v [4]byte
	binary.LittleEndian.PutUint32(v[:], 2)
	_ = devmap.Update(k[:], v[:], 0, -1)
	st := &nullStack{}
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0], Stack: st}, {Port: ps[1]}}, Program: &scriptProg{devmap: devmap}})
	if err != nil {
		t.Fatal(err)
	}
	pl := e.pollers[0]
	frames := [][]byte{
		frame(bpf.ActionDrop, 0, 0, 1, 64), frame(bpf.ActionTX, 0, 0, 2, 64),
		frame(bpf.ActionRedirect, rdDevMap, 0, 3, 64), frame(bpf.ActionRedirect, rdIfindex, 2, 4, 64),
		frame(bpf.ActionPass, 0, 0, 5, 64), frame(bpf.ActionAborted, 0, 0, 6, 64),
	}
	allocs := testing.AllocsPerRun(200, func() {
		for i := 0; i < 64; i++ {
			ps[0].Rx(0).Inject(frames[i%len(frames)])
		}
		pl.poll()
		ps[0].Tx(0).Reclaim()
		ps[1].Tx(0).Reclaim()
	})
	// One fault record per poll with an abort is allowed (not per packet).
	if allocs > 1 {
		t.Errorf("%.1f allocations per poll of 64 frames, want at most 1 (the fault record)", allocs)
	}
	frames = frames[:5]
	allocs = testing.AllocsPerRun(200, func() {
		for i := 0; i < 64; i++ {
			ps[0].Rx(0).Inject(frames[i%len(frames)])
		}
		pl.poll()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per poll without aborts, want 0", allocs)
	}
}

type nullStack struct{ n int }

func (s *nullStack) Deliver([]byte) error { s.n++; return nil }
