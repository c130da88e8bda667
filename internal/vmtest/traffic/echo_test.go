package traffic

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

func TestEchoFrames(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 300; i++ {
		for _, size := range []int{0, 64, 1, 5000} {
			f := EchoFrame(9, i, size, macA, DefaultPeerMAC)
			want := EchoLen(9, i, size)
			if len(f) != want || want < MinFrameLen || want > MaxFrameLen {
				t.Fatalf("frame %d size %d: %d bytes, EchoLen %d", i, size, len(f), want)
			}
			if size == 0 {
				seen[len(f)/100] = true
			}
			if k := Classify(f); k != KindEcho {
				t.Fatalf("frame %d size %d classified %v", i, size, k)
			}
			seed, idx, err := ParseEcho(f)
			if err != nil || seed != 9 || idx != i {
				t.Fatalf("ParseEcho = %d, %d, %v", seed, idx, err)
			}
			if got := binary.BigEndian.Uint16(f[offIPv4+2:]); int(got) != len(f)-14 {
				t.Fatalf("IPv4 total length %d for a %d-byte frame", got, len(f))
			}
			if got := binary.BigEndian.Uint16(f[offUDP+4:]); int(got) != len(f)-34 {
				t.Fatalf("UDP length %d for a %d-byte frame", got, len(f))
			}
			if err := CheckEcho(f, 9, i, size, macA, DefaultPeerMAC); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("pseudo-random sizes cover only %d of 15 hundreds: %v", len(seen), seen)
	}
	if EchoLen(1, 0, 64) != 64 || EchoLen(1, 0, 10) != MinFrameLen || EchoLen(1, 0, 9000) != MaxFrameLen {
		t.Errorf("EchoLen clamps wrongly")
	}
	// Flow and echo frames are both UDP/IPv4 and must not be confused.
	if k := Classify(FlowFrame(3, 4, macA, DefaultPeerMAC)); k != KindFlow {
		t.Errorf("flow frame classified %v", k)
	}
	if _, _, err := ParseEcho(FlowFrame(3, 4, macA, DefaultPeerMAC)); err == nil {
		t.Error("ParseEcho accepted a flow frame")
	}
	// Streams differ from each other and from data frames of the same seed.
	a, b := EchoFrame(1, 0, 200, macA, DefaultPeerMAC), EchoFrame(2, 0, 200, macA, DefaultPeerMAC)
	if string(a[offEchoRand:]) == string(b[offEchoRand:]) {
		t.Error("two seeds give the same payload")
	}
}

func TestCheckEchoFindsDifferences(t *testing.T) {
	f := EchoFrame(5, 7, 0, DefaultPeerMAC, macA)
	if err := CheckEcho(f, 5, 7, 0, macA, DefaultPeerMAC); err == nil || !strings.Contains(err.Error(), "addressed") {
		t.Errorf("addresses not swapped: %v", err)
	}
	for _, off := range []int{12, offIPv4 + 8, offEchoIndex, offEchoRand, len(f) - 1} {
		g := append([]byte(nil), f...)
		g[off] ^= 0x10
		err := CheckEcho(g, 5, 7, 0, DefaultPeerMAC, macA)
		if err == nil {
			t.Fatalf("byte %d flipped: accepted", off)
		}
		if off >= offEchoRand && !strings.Contains(err.Error(), "byte") {
			t.Errorf("byte %d flipped: %v", off, err)
		}
	}
	if err := CheckEcho(f[:len(f)-1], 5, 7, 0, DefaultPeerMAC, macA); err == nil {
		t.Error("a truncated frame accepted")
	}
	if err := CheckEcho(f, 5, 8, 0, DefaultPeerMAC, macA); err == nil {
		t.Error("the wrong index accepted")
	}
}

func TestEchoNoAllocs(t *testing.T) {
	buf := make([]byte, 0, MaxFrameLen)
	f := EchoFrame(3, 3, 0, macA, DefaultPeerMAC)
	n := testing.AllocsPerRun(200, func() {
		buf = AppendEchoFrame(buf[:0], 3, 3, 0, macA, DefaultPeerMAC)
		if err := CheckEcho(f, 3, 3, 0, macA, DefaultPeerMAC); err != nil {
			t.Fatal(err)
		}
		if Classify(f) != KindEcho {
			t.Fatal("not echo")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
}

// bounce plays a guest running a MAC-swapping program on what the fake NIC
// receives, for want frames or until timeout; alter may change each frame.
func bounce(t *testing.T, nic *fakeNIC, want int, timeout time.Duration, alter func(i int, f []byte) []byte) int {
	t.Helper()
	got := 0
	deadline := time.Now().Add(timeout)
	for got < want && time.Now().Before(deadline) {
		f, ok := nic.recv()
		if !ok || Classify(f) != KindEcho {
			continue
		}
		g := append([]byte(nil), f...)
		copy(g[0:6], f[6:12])
		copy(g[6:12], f[0:6])
		if alter != nil {
			g = alter(got, g)
		}
		if g != nil {
			if err := nic.send(g); err != nil {
				t.Fatal(err)
			}
		}
		got++
	}
	return got
}

func TestPeerEcho(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{})
	start := time.Now()
	s1, err := c.Echo(EchoRequest{Count: 500, Seed: 21, Size: 64, Back: true, Delay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.Echo(EchoRequest{Count: 500, Seed: 22, Back: true, Delay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Echo(EchoRequest{Count: 5, Seed: 22, Back: true}); err == nil {
		t.Error("a second echo stream with the same seed was accepted")
	}
	if n := bounce(t, nic, 1000, 10*time.Second, nil); n != 1000 {
		t.Fatalf("bounced %d of 1000 frames", n)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("the streams started before their delay: all back after %v", el)
	}
	for _, s := range []*Stream{s1, s2} {
		rep, err := c.EchoReport(s)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Count != 500 || rep.Sent != 500 || rep.Back != 500 || rep.Bad != 0 || rep.Error != "" {
			t.Errorf("stream %d: %v", s.Seed, rep)
		}
	}
	r := p.Report()
	echo := 0
	for _, s := range r.Sessions {
		if s.Verb == VerbEcho {
			echo++
			if !s.OK() || !s.Reported {
				t.Errorf("session %v: ok %v reported %v", s, s.OK(), s.Reported)
			}
		}
	}
	if echo != 2 {
		t.Errorf("%d echo sessions, want 2", echo)
	}
	if r.LocalDrops != 0 {
		t.Errorf("the peer's socket dropped %d datagrams (-1: unreadable)", r.LocalDrops)
	}
}

func TestPeerEchoCatchesMistakes(t *testing.T) {
	p, nic, c := setup(t, PeerConfig{})
	// Frame 3 altered, frame 6 never sent back, frame 9 sent twice.
	s, err := c.Echo(EchoRequest{Count: 20, Seed: 31, Back: true})
	if err != nil {
		t.Fatal(err)
	}
	bounce(t, nic, 20, 5*time.Second, func(i int, f []byte) []byte {
		switch i {
		case 3:
			f[len(f)-1] ^= 1
		case 6:
			return nil
		case 9:
			_ = nic.send(f)
		}
		return f
	})
	rep, err := c.EchoReport(s)
	if err != nil {
		t.Fatal(err)
	}
	// Back: 0-2, 4, 5, 8-19 (7 arrived when 6 was due: bad, like 3 and the second 9).
	if rep.Back != 17 || rep.Bad != 3 || !strings.Contains(rep.Error, "differs at byte") {
		t.Errorf("altered/lost/duplicated: %v", rep)
	}
	// A drop stream: anything coming back is bad.
	d, err := c.Echo(EchoRequest{Count: 10, Seed: 32})
	if err != nil {
		t.Fatal(err)
	}
	bounce(t, nic, 10, 5*time.Second, func(i int, f []byte) []byte {
		if i == 4 {
			return f
		}
		return nil
	})
	rep, err = c.EchoReport(d)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 10 || rep.Back != 0 || rep.Bad != 1 || !strings.Contains(rep.Error, "none should have") {
		t.Errorf("drop stream with one frame back: %v", rep)
	}
	for _, s := range p.Report().Sessions {
		if s.Verb == VerbEcho && s.OK() {
			t.Errorf("session %v passes", s)
		}
	}
	if _, err := c.EchoReport(&Stream{ID: 999, Seed: 999}); err == nil {
		t.Error("report of an unknown echo session answered")
	}
	if _, err := c.Echo(EchoRequest{Count: 1, Seed: 33, Size: 20}); err == nil {
		t.Error("an echo size below the minimum frame was accepted")
	}
}

// TestPeerNeverAnswersReplies: a reply bounced back by a program (here sent
// by hand) gets no answer, so a MAC swap cannot start an endless exchange.
func TestPeerNeverAnswersReplies(t *testing.T) {
	p, nic, _ := setup(t, PeerConfig{})
	f, err := AppendControl(nil, NewMsg(VerbOK, 77, "mac", "x"), DefaultPeerMAC, macA)
	if err != nil {
		t.Fatal(err)
	}
	if err := nic.send(f); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if g, ok := nic.recv(); ok {
			t.Fatalf("the peer answered a reply: %x", g)
		}
	}
	r := p.Report()
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "reply") {
		t.Errorf("errors %q, want one about the reply", r.Errors)
	}
}
