package porttest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/internal/vmtest/porttest"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// onPeer is the igb model wired to a traffic peer over a UDP link, as the VM
// tier wires a guest's device to its peer.
func onPeer(t *testing.T) (*igbsim.Model, *traffic.Peer) {
	t.Helper()
	m, err := igbsim.New(igbsim.Config{AutonegDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	peer, err := traffic.NewPeer(traffic.PeerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	link, err := sim.NewUDPLink("127.0.0.1:0", peer.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(link)
	t.Cleanup(func() {
		m.Close()
		link.Close()
		peer.Close()
	})
	return m, peer
}

func TestCloseReopenRounds(t *testing.T) {
	m, peer := onPeer(t)
	opens := 0
	porttest.CloseReopen(t, 2, 2*time.Second, 40, func() (nic.Port, error) {
		opens++
		return igb.Open(m.Device(), igb.Config{LinkTimeout: 2 * time.Second})
	})
	if opens != 2 {
		t.Fatalf("opened %d times, want 2", opens)
	}
	// Each round's stream reached the peer whole.
	rep := peer.Report()
	for _, seed := range []int64{40, 41} {
		found := false
		for _, s := range rep.Sessions {
			if s.Verb == traffic.VerbExpect && s.Seed == seed {
				found = true
				if !s.OK() || s.Count != 200 {
					t.Errorf("stream %d at the peer: %v, want 200 good frames", seed, s)
				}
			}
		}
		if !found {
			t.Errorf("no expect session for stream %d at the peer: %v", seed, rep.Sessions)
		}
	}
	if err := m.Err(); err != nil {
		t.Fatalf("model faults: %v", err)
	}
}

func TestCloseReopenFailsOnOpenError(t *testing.T) {
	msg := nictest.Fails(t, func(tb testing.TB) {
		porttest.CloseReopen(tb, 2, time.Second, 1, func() (nic.Port, error) { return nil, nic.ErrNoDevice })
	})
	if !strings.Contains(msg, "round 0: Open") {
		t.Fatalf("failure %q, want it to name round 0's Open", msg)
	}
}

// TestPeerWakesRecv: on the igb model with interrupts, the peer's delayed
// frame wakes the receiver blocked on RX queue 0's vector.
func TestPeerWakesRecv(t *testing.T) {
	m, _ := onPeer(t)
	p, err := igb.Open(m.Device(), igb.Config{Interrupts: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	c, io := porttest.Connect(t, p)
	porttest.PeerWakesRecv(t, p, c, io, 77, 10*time.Second, func() string { return p.Dump().String() })
	if err := m.Err(); err != nil {
		t.Fatalf("model faults: %v", err)
	}
}
