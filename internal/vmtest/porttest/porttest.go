package porttest

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// HelloTimeout bounds the wait for the traffic peer's answer to hello.
const HelloTimeout = 30 * time.Second

// Connect puts a traffic client on p (TX queue 0, every RX queue), logging
// to t, and fails t unless the peer answers hello within HelloTimeout. The
// port's held frames are drained when the test ends.
func Connect(t testing.TB, p nic.Port) (*traffic.Client, *traffic.PortIO) {
	t.Helper()
	io := traffic.NewPortIO(p, 0)
	c := traffic.NewClient(p.MAC(), io.Send, io.Recv)
	c.Logf = t.Logf
	if err := c.Hello(HelloTimeout); err != nil {
		t.Fatalf("no traffic peer: %v", err)
	}
	t.Cleanup(io.Drain)
	return c, io
}

// CloseReopen opens a port with open, waits up to linkTimeout for its link,
// sends 200 frames of stream seed+round that the peer must report whole,
// and closes the port, rounds times: a close must leave the device as a
// second Open can bring up again. It fails t at the first round that does
// not.
func CloseReopen(t testing.TB, rounds int, linkTimeout time.Duration, seed int64, open func() (nic.Port, error)) {
	t.Helper()
	for round := 0; round < rounds; round++ {
		p, err := open()
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		if _, err := p.WaitLink(linkTimeout); err != nil {
			p.Close()
			t.Fatalf("round %d: %v", round, err)
		}
		io := traffic.NewPortIO(p, 0)
		c := traffic.NewClient(p.MAC(), io.Send, io.Recv)
		if err := c.Hello(HelloTimeout); err != nil {
			p.Close()
			t.Fatalf("round %d: %v", round, err)
		}
		if rep, err := c.Transmit(200, seed+int64(round), 60*time.Second); err != nil {
			p.Close()
			t.Fatalf("round %d: %v (%s)", round, err, rep)
		}
		io.Drain()
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
	}
}

// PeerWakesRecv drains p's queues, then has the peer behind c send frame 0 of
// stream seed two seconds later: a receiver blocked on RX queue 0's
// interrupt must wake for it (nictest.InterruptWakesRecv, failing t with
// dump after timeout), and the frame must be that one, byte for byte.
func PeerWakesRecv(t testing.TB, p nic.Port, c *traffic.Client, io *traffic.PortIO, seed int64, timeout time.Duration, dump func() string) {
	t.Helper()
	io.Drain()
	got := nictest.InterruptWakesRecv(t, p.RxQueue(0), timeout,
		func() error { _, err := c.Later(2*time.Second, 1, seed); return err },
		func(f []byte) bool { s, _, err := traffic.ParseData(f); return err == nil && s == seed },
		dump)
	err := traffic.CheckFrame(got.Data(), seed, 0, p.MAC(), c.PeerMAC())
	got.Free()
	if err != nil {
		t.Fatal(err)
	}
}
