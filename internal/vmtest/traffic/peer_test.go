package traffic

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeNIC plays QEMU's end of the dgram link with a plain UDP socket and
// gives a Client the send/recv functions a driver test would.
type fakeNIC struct {
	conn *net.UDPConn
	peer *net.UDPAddr
	rbuf []byte
	// corrupt, when set, alters outgoing frames (a hostile driver).
	corrupt func(f []byte) []byte
}

func newFakeNIC(t *testing.T, peer *Peer) *fakeNIC {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	t.Cleanup(func() { conn.Close() })
	return &fakeNIC{conn: conn, peer: peer.Addr(), rbuf: make([]byte, 65536)}
}

func (n *fakeNIC) send(f []byte) error {
	if n.corrupt != nil {
		f = n.corrupt(append([]byte(nil), f...))
	}
	_, err := n.conn.WriteToUDP(f, n.peer)
	return err
}

func (n *fakeNIC) recv() ([]byte, bool) {
	_ = n.conn.SetReadDeadline(time.Now().Add(2 * time.Millisecond))
	k, _, err := n.conn.ReadFromUDP(n.rbuf)
	if err != nil {
		return nil, false
	}
	return n.rbuf[:k], true
}

func setup(t *testing.T, cfg PeerConfig) (*Peer, *fakeNIC, *Client) {
	t.Helper()
	cfg.Logf = t.Logf
	p, err := NewPeer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	nic := newFakeNIC(t, p)
	c := NewClient(macA, nic.send, nic.recv)
	c.Timeout = 5 * time.Second
	if err := c.Hello(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c.PeerMAC().String() != DefaultPeerMAC.String() {
		t.Fatalf("peer MAC %s, want %s", c.PeerMAC(), DefaultPeerMAC)
	}
	return p, nic, c
}

func TestPeerClientStreams(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{})

	rep, err := c.Transmit(3000, 11, 10*time.Second)
	if err != nil {
		t.Fatalf("transmit: %v", err)
	}
	if rep.Got != 3000 || rep.Bad != 0 {
		t.Fatalf("report %v", rep)
	}

	s, err := c.Inject(3000, 12, 32)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Receive(s, 10*time.Second); err != nil {
		t.Fatalf("receive: %v", err)
	}

	fs, err := c.Flows(16, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	perFlow := map[int]int{}
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < fs.Count && time.Now().Before(deadline); {
		f, ok := nic.recv()
		if !ok {
			continue
		}
		flow, seq, err := ParseFlow(f)
		if err != nil {
			t.Fatalf("unexpected frame during flows: %v", err)
		}
		if seq != perFlow[flow] {
			t.Fatalf("flow %d: seq %d, want %d", flow, seq, perFlow[flow])
		}
		perFlow[flow]++
		got++
		if err := fs.Ack(got); err != nil {
			t.Fatal(err)
		}
	}
	if len(perFlow) != 16 {
		t.Fatalf("%d flows seen, want 16: %v", len(perFlow), perFlow)
	}
	for flow, n := range perFlow {
		if n != 4 {
			t.Errorf("flow %d: %d frames, want 4", flow, n)
		}
	}

	start := time.Now()
	ls, err := c.Later(150*time.Millisecond, 1, 13)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Receive(ls, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("later frame arrived after %v, before the 150ms delay", d)
	}

	// The peer's own record agrees.
	time.Sleep(50 * time.Millisecond)
	r := p.Report()
	if len(r.Sessions) != 4 {
		t.Fatalf("sessions %v", r.Sessions)
	}
	for _, s := range r.Sessions {
		if !s.OK() {
			t.Errorf("session not OK: %v", s)
		}
	}
	if r.GuestMAC.String() != macA.String() || len(r.Errors) != 0 || r.Stray != 0 {
		t.Errorf("guest MAC %s, errors %q, stray %d", r.GuestMAC, r.Errors, r.Stray)
	}
	if c.Stray != 0 {
		t.Errorf("client saw %d stray frames", c.Stray)
	}
}

func TestPeerCatchesBadTransmit(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{})
	n := 0
	nic.corrupt = func(f []byte) []byte {
		n++
		if n == 100 {
			f[len(f)-1] ^= 1
		}
		return f
	}
	rep, err := c.Transmit(200, 5, 5*time.Second)
	if err == nil || rep.Bad != 1 || rep.Got != 199 || !strings.Contains(rep.Error, "differs at byte") {
		t.Fatalf("corrupted frame: report %v, err %v", rep, err)
	}

	// A lost frame is seen as such.
	n = 0
	nic.corrupt = nil
	if err := c.Expect(10, 6); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if i == 4 {
			continue
		}
		if err := nic.send(Frame(6, i, DefaultPeerMAC, macA)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = c.Report(6)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.Error, "frame 5 arrived when frame 4 was due") {
		t.Fatalf("lost frame: %v", rep)
	}
	if s := p.Report().Sessions; len(s) != 2 || s[1].OK() {
		t.Fatalf("peer sessions %v", s)
	}
}

func TestPeerStopsWithoutAcks(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{AckTimeout: 200 * time.Millisecond})
	s, err := c.Inject(100, 9, 8)
	if err != nil {
		t.Fatal(err)
	}
	// Take frames without acking: the peer must stop at the window.
	got := 0
	var gaveUp bool
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && !gaveUp {
		f, ok := nic.recv()
		if !ok {
			continue
		}
		switch Classify(f) {
		case KindData:
			got++
		case KindControl:
			m, err := ParseControl(f)
			gaveUp = err == nil && m.Verb == VerbErr && m.ID == s.ID
		}
	}
	if got != 8 || !gaveUp {
		t.Fatalf("without acks: %d frames (want 8, the window), gave up: %v", got, gaveUp)
	}
	r := p.Report()
	if r.Sessions[0].OK() || !strings.Contains(r.Sessions[0].Err, "no ack") {
		t.Errorf("session %v", r.Sessions[0])
	}

	// Requests the peer cannot serve are refused with a reason.
	if _, err := c.Flows(0, 1, 0); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("flows=0: %v", err)
	}
	if _, err := c.Report(12345); err == nil || !strings.Contains(err.Error(), "no expect session") {
		t.Errorf("report without expect: %v", err)
	}
}

func TestClientTimesOutWithoutPeer(t *testing.T) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sent := 0
	c := NewClient(macA, func([]byte) error { sent++; return nil }, func() ([]byte, bool) { return nil, false })
	start := time.Now()
	err = c.Hello(time.Second)
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("Hello without a peer: %v after %v", err, time.Since(start))
	}
	if sent < 2 {
		t.Errorf("hello sent %d times in 1s, want repeats every 200ms", sent)
	}
	if err := c.Expect(1, 1); err == nil {
		t.Error("Expect before Hello succeeded")
	}
	full := 0
	c2 := NewClient(macA, func([]byte) error {
		full++
		if full < 5 {
			return ErrFull
		}
		return os.ErrClosed
	}, func() ([]byte, bool) { return nil, false })
	c2.peer = DefaultPeerMAC
	if err := c2.SendFrames(1, 1, time.Second); !errors.Is(err, os.ErrClosed) || full != 5 {
		t.Errorf("send retried %d times then %v; want 5 tries ending in ErrClosed", full, err)
	}
}

func TestParseProcNetUDP(t *testing.T) {
	text := []byte(`   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:98A3 00000000:0000 07 00000000:00012000 00:00000000 00000000     0        0 12345 2 0000000000000000 17
  124: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12346 2 0000000000000000 0
`)
	st, ok := parseProcNetUDP(text, netip.MustParseAddrPort("127.0.0.1:39075"))
	if !ok || st.rxQueue != 0x12000 || st.drops != 17 {
		t.Errorf("127.0.0.1:0x98a3: %+v, %v", st, ok)
	}
	if st, ok := parseProcNetUDP(text, netip.MustParseAddrPort("127.0.0.1:68")); !ok || st.rxQueue != 0 {
		t.Errorf("wildcard-bound socket: %+v, %v", st, ok)
	}
	if _, ok := parseProcNetUDP(text, netip.MustParseAddrPort("127.0.0.1:1")); ok {
		t.Error("found a socket that is not there")
	}
	// The live table has our own socket, with its queue.
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := os.Stat(procNetUDP); err != nil {
		t.Skipf("no %s here", procNetUDP)
	}
	addr := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if _, err := conn.WriteToUDPAddrPort(make([]byte, 1000), addr); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, ok := remoteSocketStat(addr)
		if ok && st.rxQueue >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("own socket in %s: %+v, %v; want a queue of at least 1000 bytes", procNetUDP, st, ok)
		}
		time.Sleep(time.Millisecond)
	}
}

// A receiver that reads slowly through a small socket buffer loses nothing:
// the peer holds back while the socket is full, as it does for QEMU's.
func TestPeerThrottlesOnSocketBacklog(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{MaxBacklog: 32 << 10})
	_ = nic.conn.SetReadBuffer(64 << 10)
	s, err := c.Inject(2000, 21, 0) // no window: only the backlog guard paces
	if err != nil {
		t.Fatal(err)
	}
	slow := 0
	orig := nic.recv
	c.recv = func() ([]byte, bool) {
		slow++
		if slow%50 == 0 {
			time.Sleep(time.Millisecond)
		}
		return orig()
	}
	if err := c.Receive(s, 20*time.Second); err != nil {
		t.Fatalf("receive through a slow, small socket: %v", err)
	}
	r := p.Report()
	if r.RemoteDrops != 0 || r.Throttled == 0 {
		t.Errorf("socket drops %d (want 0), throttled %d times (want some)", r.RemoteDrops, r.Throttled)
	}
}

// The peer's per-frame paths do not allocate: checking a received frame, and
// the client's generating and sending one.
func TestNoAllocsPerFrame(t *testing.T) {
	p, _, c := setup(t, PeerConfig{})
	if err := c.Expect(1<<20, 77); err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = Frame(77, i, DefaultPeerMAC, macA)
	}
	// Frames arrive in order; the peer's read goroutine is idle (no traffic).
	i := 0
	allocs := testing.AllocsPerRun(len(frames)-1, func() {
		p.handleData(frames[i])
		i++
	})
	if allocs != 0 {
		t.Errorf("peer: %v allocations per received frame, want 0", allocs)
	}
	r := p.Report()
	if s := r.Sessions[len(r.Sessions)-1]; s.Done != len(frames) || s.Bad != 0 {
		t.Fatalf("session after %d frames: %v", len(frames), s)
	}

	sent := 0
	quiet := NewClient(macA, func([]byte) error { sent++; return nil }, func() ([]byte, bool) { return nil, false })
	quiet.peer = DefaultPeerMAC
	allocs = testing.AllocsPerRun(10, func() {
		if err := quiet.SendFrames(100, 5, time.Second); err != nil {
			t.Fatal(err)
		}
	})
	if allocs/100 > 0.01 || sent < 1000 {
		t.Errorf("client: %v allocations per 100 frames sent (%d sent), want 0", allocs, sent)
	}
}

// TestWindowedStreamWaitsForStart: a windowed stream sends nothing until the
// guest's first ack (n=0), which Client.Inject and Client.Flows send once they
// have the ok, so no frame of it can reach the guest while its client still
// waits for the ok (with several RX queues one could overtake it and be
// thrown away). Without the start ack the peer gives up after AckTimeout.
func TestWindowedStreamWaitsForStart(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{AckTimeout: 300 * time.Millisecond})
	id := c.newID()
	if _, err := c.request(NewMsg(VerbFlows, id, "flows", "4", "per", "2", "window", "4"), c.peer, 0); err != nil {
		t.Fatal(err)
	}
	// No start ack: nothing may come, and the peer gives up.
	flowsSeen, gaveUp := 0, false
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !gaveUp {
		f, ok := nic.recv()
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		switch Classify(f) {
		case KindFlow:
			flowsSeen++
		case KindControl:
			m, err := ParseControl(f)
			gaveUp = err == nil && m.Verb == VerbErr && m.ID == id
		}
	}
	if flowsSeen != 0 || !gaveUp {
		t.Fatalf("without the start ack: %d flow frames came (want 0), peer gave up: %v", flowsSeen, gaveUp)
	}
	if s := p.Report().Sessions; len(s) != 1 || !strings.Contains(s[0].Err, "never started") {
		t.Fatalf("sessions %v", s)
	}
	// Through the client, the stream starts and every frame comes.
	s, err := c.Flows(4, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	deadline = time.Now().Add(5 * time.Second)
	for got < 8 && time.Now().Before(deadline) {
		f, ok := nic.recv()
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		if Classify(f) == KindFlow {
			got++
			if err := s.Ack(got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got != 8 {
		t.Fatalf("started stream: %d of 8 flow frames", got)
	}
}
