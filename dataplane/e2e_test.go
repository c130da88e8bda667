package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/nic"
)

// bed is a set of ports with a link partner on each: the test injects frames
// on the wire and reads what each port sent. newBed makes one on the igb model
// (igbsim) when it is built, else on the in-memory port.
type bed interface {
	Ports() []nic.Port
	// Inject puts a frame on port i's wire (the port receives it).
	Inject(i int, frame []byte)
	// Sent returns what port i put on its wire since the last call, waiting
	// up to 2 s for at least want frames.
	Sent(t *testing.T, i, want int) [][]byte
	// SetLink plugs or unplugs port i's cable.
	SetLink(i int, up bool)
	// SentCount is how many frames port i put on its wire in all.
	SentCount(i int) uint64
	// Close stops the ports and checks that every buffer is back in its pool.
	Close(t *testing.T)
}

// loadExample loads an example object with numCPU per-CPU slots.
func loadExample(t testing.TB, name string, numCPU int) *bpf.Collection {
	t.Helper()
	obj, err := examples.Object(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bpf.LoadBytes(obj, &bpf.Options{NumCPU: numCPU})
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func setU32(t testing.TB, m maps.Map, key uint32, vals ...uint32) {
	t.Helper()
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	v := make([]byte, 4*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint32(v[4*i:], x)
	}
	if err := m.Update(k[:], v, maps.UpdateAny, -1); err != nil {
		t.Fatalf("%s[%d] = %v: %v", m.Spec().Name, key, vals, err)
	}
}

func perCPUSum(t testing.TB, m maps.Map, key uint32) uint64 {
	t.Helper()
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	if !maps.IsPerCPU(m.Spec().Type) {
		v := m.Lookup(k[:], 0)
		if v == nil {
			return 0
		}
		return binary.LittleEndian.Uint64(v)
	}
	vs, err := maps.LookupPerCPU(m, k[:])
	if err != nil {
		t.Fatal(err)
	}
	var s uint64
	for _, v := range vs {
		s += binary.LittleEndian.Uint64(v)
	}
	return s
}

func mustMap(t testing.TB, c *bpf.Collection, name string) maps.Map {
	t.Helper()
	m, err := c.Map(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustProg(t testing.TB, c *bpf.Collection, name string) *bpf.Program {
	t.Helper()
	p, err := c.Program(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func udpFrames(t testing.TB, n, size int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		f := pktgen.DefaultFlow()
		f.Size = size
		f.SrcPort = uint16(1000 + i)
		b, err := f.UDP()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func swapped(f []byte) []byte {
	g := append([]byte(nil), f...)
	copy(g[0:6], f[6:12])
	copy(g[6:12], f[0:6])
	return g
}

type recStack struct {
	mu     sync.Mutex
	frames [][]byte
}

func (s *recStack) Deliver(f []byte) error {
	s.mu.Lock()
	s.frames = append(s.frames, append([]byte(nil), f...))
	s.mu.Unlock()
	return nil
}

func (s *recStack) got() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.frames...)
}

func start(t *testing.T, cfg dataplane.Config) *dataplane.Engine {
	t.Helper()
	e, err := dataplane.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	return e
}

func waitCounter(t *testing.T, e *dataplane.Engine, port int, c dataplane.Counter, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := e.Snapshot().Ports[port].Counters[c]
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %d %s = %d after 5 s, want %d", port, c, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestE2EMacSwapTX(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_macswap_tx", 2)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0]}}, Program: dataplane.BPF(mustProg(t, c, "xdp_macswap_tx"))})
	in := udpFrames(t, 100, 64)
	for _, f := range in {
		b.Inject(0, f)
	}
	out := b.Sent(t, 0, len(in))
	if len(out) != len(in) {
		t.Fatalf("port sent %d frames, want %d", len(out), len(in))
	}
	for i := range in {
		if !bytes.Equal(out[i], swapped(in[i])) {
			t.Fatalf("frame %d: sent %x, want %x", i, out[i], swapped(in[i]))
		}
	}
	if n := perCPUSum(t, mustMap(t, c, "rxcnt"), pktgen.ProtoUDP); n != 100 {
		t.Errorf("rxcnt[UDP] = %d, want 100", n)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot()
	if cs := s.Ports[0].Counters; cs[dataplane.RxXDPTx] != 100 || cs[dataplane.TxPackets] != 100 || cs[dataplane.TxBytes] != 6400 {
		t.Errorf("counters %v", cs.Map())
	}
	b.Close(t)
}

func TestE2EDropCount(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_drop_count", 2)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0]}}, Program: dataplane.BPF(mustProg(t, c, "xdp_drop_count"))})
	for _, f := range udpFrames(t, 500, 64) {
		b.Inject(0, f)
	}
	waitCounter(t, e, 0, dataplane.RxXDPDrop, 500)
	if out := b.Sent(t, 0, 0); len(out) != 0 {
		t.Errorf("drop program sent %d frames", len(out))
	}
	if n := perCPUSum(t, mustMap(t, c, "rxcnt"), pktgen.ProtoUDP); n != 500 {
		t.Errorf("rxcnt[UDP] = %d, want 500", n)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	b.Close(t)
}

func TestE2ERedirectMap(t *testing.T) {
	b := newBed(t, 2)
	c := loadExample(t, "xdp_redirect_map", 4)
	e, err := dataplane.New(dataplane.Config{
		Ports:   []dataplane.PortConfig{{Port: b.Ports()[0]}, {Port: b.Ports()[1]}},
		Program: dataplane.BPF(mustProg(t, c, "xdp_redirect_map")),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.WireMaps(c)
	var k, v [4]byte
	binary.LittleEndian.PutUint32(v[:], 7)
	if err := mustMap(t, c, "tx_port").Update(k[:], v[:], maps.UpdateAny, -1); err == nil {
		t.Error("devmap accepted ifindex 7, which no port has")
	}
	setU32(t, mustMap(t, c, "tx_port"), 0, 2) // -> ifindex 2 = port 1
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	in := udpFrames(t, 200, 64)
	for _, f := range in {
		b.Inject(0, f)
	}
	out := b.Sent(t, 1, len(in))
	if len(out) != len(in) {
		t.Fatalf("port 1 sent %d frames, want %d", len(out), len(in))
	}
	for i := range in {
		if !bytes.Equal(out[i], swapped(in[i])) {
			t.Fatalf("frame %d: sent %x, want %x", i, out[i], swapped(in[i]))
		}
	}
	if out0 := b.Sent(t, 0, 0); len(out0) != 0 {
		t.Errorf("port 0 sent %d frames", len(out0))
	}
	// Port 1's link goes down: redirects there count tx_xdp_xmit_errors and
	// nothing leaves.
	b.SetLink(1, false)
	deadline := time.Now().Add(2 * time.Second)
	for b.Ports()[1].Link().Up && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e.RefreshLinks()
	for _, f := range in[:50] {
		b.Inject(0, f)
	}
	waitCounter(t, e, 1, dataplane.TxXDPXmitErrors, 50)
	if out := b.Sent(t, 1, 0); len(out) != 0 {
		t.Errorf("port 1 sent %d frames with its link down", len(out))
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot()
	if c0, c1 := s.Ports[0].Counters, s.Ports[1].Counters; c0[dataplane.RxXDPRedirect] != 250 || c1[dataplane.TxXDPXmit] != 200 || c1[dataplane.TxXDPXmitErrors] != 50 {
		t.Errorf("port0 %v port1 %v", c0.Map(), c1.Map())
	}
	if n := perCPUSum(t, mustMap(t, c, "rxcnt"), 0); n != 250 {
		t.Errorf("rxcnt = %d", n)
	}
	b.Close(t)
}

func TestE2ECPUMap(t *testing.T) {
	b := newBed(t, 1)
	const workers = 2
	nslots := 1 + workers
	c := loadExample(t, "xdp_redirect_cpu", nslots)
	count := mustProg(t, c, "xdp_cpumap_count")
	cpumap := mustMap(t, c, "cpu_map")
	st := &recStack{}
	e, err := dataplane.New(dataplane.Config{
		Ports:         []dataplane.PortConfig{{Port: b.Ports()[0], Stack: st}},
		Program:       dataplane.BPF(mustProg(t, c, "xdp_redirect_cpu")),
		CPUWorkers:    workers,
		CPUMapProgram: dataplane.CPUMapPrograms(c),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.WireMaps(c)
	// As with the kernel's syscall, the value names the program (by id here,
	// by fd there).
	setU32(t, cpumap, 0, 256, count.ID())
	setU32(t, cpumap, 1, 256, count.ID())
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	in := udpFrames(t, 64, 100)
	for _, f := range in {
		b.Inject(0, f)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(st.got()) < len(in) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got := st.got()
	if len(got) != len(in) {
		t.Fatalf("stack got %d frames, want %d", len(got), len(in))
	}
	// Byte-exact, in any order across the two workers.
	seen := map[string]int{}
	for _, f := range in {
		seen[string(f)]++
	}
	for _, f := range got {
		seen[string(f)]--
	}
	for _, n := range seen {
		if n != 0 {
			t.Fatal("frames passed by the cpumap workers differ from those sent")
		}
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot()
	w0, w1 := s.Workers[0], s.Workers[1]
	if w0.Pass+w1.Pass != 64 || w0.Pass == 0 || w1.Pass == 0 {
		t.Errorf("workers passed %d and %d: want 64 spread over both", w0.Pass, w1.Pass)
	}
	if n := perCPUSum(t, mustMap(t, c, "remote_cnt"), 0); n != 64 {
		t.Errorf("remote_cnt = %d: the cpumap program did not run on every frame", n)
	}
	if h0, h1 := perCPUSum(t, mustMap(t, c, "cpu_hits"), 0), perCPUSum(t, mustMap(t, c, "cpu_hits"), 1); h0 != w0.Processed || h1 != w1.Processed {
		t.Errorf("cpu_hits %d/%d, workers processed %d/%d", h0, h1, w0.Processed, w1.Processed)
	}
	b.Close(t)
}

func TestE2EXSK(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_xsk", 2)
	st := &recStack{}
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: st}}, Program: dataplane.BPF(mustProg(t, c, "xdp_xsk"))})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.BindXSK(mustMap(t, c, "xsks"), 0, 0, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	in := udpFrames(t, 40, 90)
	for _, f := range in {
		b.Inject(0, f)
	}
	// The consumer: receive every frame, check it, echo it back with MACs
	// swapped, as an AF_XDP reflector would.
	bufs := make([]*dma.Buf, 16)
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for got < len(in) && time.Now().Before(deadline) {
		n := x.Recv(bufs, 100*time.Millisecond)
		for _, buf := range bufs[:n] {
			if !bytes.Equal(buf.Data(), in[got]) {
				t.Fatalf("XSK frame %d differs", got)
			}
			d := buf.Data()
			copy(d, swapped(d))
			got++
		}
		if sent := x.Send(bufs[:n]); sent != n {
			x.Release(bufs[sent:n]...)
			t.Errorf("XSK Send took %d of %d", sent, n)
		}
	}
	if got != len(in) {
		t.Fatalf("XSK received %d of %d", got, len(in))
	}
	out := b.Sent(t, 0, len(in))
	if len(out) != len(in) {
		t.Fatalf("port sent %d, want %d", len(out), len(in))
	}
	for i := range in {
		if !bytes.Equal(out[i], swapped(in[i])) {
			t.Fatalf("echoed frame %d differs", i)
		}
	}
	// Unbound: the program's fallback (XDP_PASS) takes over.
	x.Close()
	b.Inject(0, in[0])
	waitCounter(t, e, 0, dataplane.RxXDPPass, 1)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if s := e.Snapshot(); s.XSKs[0].Rx != 40 || s.XSKs[0].Tx != 40 {
		t.Errorf("XSK stats %+v", s.XSKs[0])
	}
	if g := st.got(); len(g) != 1 || !bytes.Equal(g[0], in[0]) {
		t.Errorf("stack got %d frames after unbinding", len(g))
	}
	b.Close(t)
}

func TestE2EAdjustTail(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_adjust_tail", 2)
	st := &recStack{}
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: st}}, Program: dataplane.BPF(mustProg(t, c, "xdp_adjust_tail"))})
	peer := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 1}
	me := b.Ports()[0].MAC()
	mk := func(payload int, seq uint16) []byte {
		f, err := pktgen.Echo{SrcMAC: peer, DstMAC: me, SrcIP: netip.MustParseAddr("10.1.0.1"), DstIP: netip.MustParseAddr("10.1.0.2"), ID: 1, Seq: seq, Payload: payload, DF: true}.Frame()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	small, big := mk(300, 1), mk(500, 2)
	b.Inject(0, small)
	b.Inject(0, big)
	out := b.Sent(t, 0, 1)
	if len(out) != 1 {
		t.Fatalf("port sent %d frames, want the one ICMP error", len(out))
	}
	r := out[0]
	if err := pktgen.Valid(r); err != nil {
		t.Fatalf("reply: %v", err)
	}
	ip := r[14:]
	icmp := ip[20:]
	if len(r) != 126 || !bytes.Equal(r[0:6], peer) || !bytes.Equal(r[6:12], me) || ip[9] != 1 ||
		!bytes.Equal(ip[12:16], []byte{10, 1, 0, 2}) || !bytes.Equal(ip[16:20], []byte{10, 1, 0, 1}) ||
		icmp[0] != 3 || icmp[1] != 4 || binary.BigEndian.Uint16(icmp[6:]) != 386 ||
		!bytes.Equal(icmp[8:8+20+64], big[14:14+20+64]) {
		t.Errorf("reply %x: want a 126-byte ICMP frag-needed (mtu 386) quoting the big ping", r)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(st.got()) < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := st.got(); len(g) != 1 || !bytes.Equal(g[0], small) {
		t.Errorf("stack got %d frames, want the 300-byte ping", len(g))
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	cs := e.Snapshot().Ports[0].Counters
	if cs[dataplane.RxXDPPass] != 1 || cs[dataplane.RxXDPTx] != 1 {
		t.Errorf("counters %v", cs.Map())
	}
	b.Close(t)
}

// TestE2EIdleSleepsOnIRQ: an idle loop sleeps on the queue's MSI-X vector
// (re-armed, then polled once more) and the device's interrupt wakes it well
// before the idle timeout.
func TestE2EIdleSleepsOnIRQ(t *testing.T) {
	b := newIGBBed(t, 1, true)
	c := loadExample(t, "xdp_macswap_tx", 2)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0]}}, Program: dataplane.BPF(mustProg(t, c, "xdp_macswap_tx")),
		IdleTimeout: 2 * time.Second})
	if b.Ports()[0].RxQueue(0).IRQ() == nil {
		t.Fatal("the igb port has no RX interrupt")
	}
	in := udpFrames(t, 3, 64)
	for i, f := range in {
		time.Sleep(50 * time.Millisecond) // idle: asleep on the IRQ
		t0 := time.Now()
		b.Inject(0, f)
		out := b.Sent(t, 0, 1)
		// Without the interrupt the loop sleeps out its 2 s timeout (Stop
		// waits it out too: the model's interrupt has no fd to wake).
		if d := time.Since(t0); len(out) != 1 || d > time.Second {
			t.Fatalf("frame %d: %d frames out after %v: the interrupt did not wake the loop", i, len(out), d)
		}
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	b.Close(t)
}
