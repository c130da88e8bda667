package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/require"
)

// collector keeps copies of received frames.
type collector struct {
	mu     sync.Mutex
	frames [][]byte
	ch     chan struct{}
}

func newCollector() *collector { return &collector{ch: make(chan struct{}, 1024)} }

func (c *collector) receive(frame []byte) {
	c.mu.Lock()
	c.frames = append(c.frames, append([]byte(nil), frame...))
	c.mu.Unlock()
	c.ch <- struct{}{}
}

func (c *collector) wait(t *testing.T, n int) [][]byte {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.frames)
		c.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("got %d of %d frames within 5s", got, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

func frameN(n int, tag byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = tag + byte(i)
	}
	return f
}

func TestPairDelivers(t *testing.T) {
	a, b := NewPair()
	ca, cb := newCollector(), newCollector()
	a.SetReceiver(ca.receive)
	b.SetReceiver(cb.receive)

	require.NoError(t, a.Send(frameN(60, 1)))
	require.NoError(t, b.Send(frameN(1514, 2)))
	require.Equal(t, [][]byte{frameN(60, 1)}, cb.wait(t, 1))
	require.Equal(t, [][]byte{frameN(1514, 2)}, ca.wait(t, 1))
	require.Equal(t, LinkStats{Sent: 1, SendBytes: 60, Received: 1, RecvBytes: 1514}, a.Stats())

	b.SetReceiver(nil)
	require.NoError(t, a.Send(frameN(60, 3)))
	require.Equal(t, uint64(1), b.Stats().Dropped)

	require.NoError(t, a.Close())
	require.ErrorIs(t, a.Send(frameN(60, 4)), ErrLinkClosed)
	require.NoError(t, b.Send(frameN(60, 5)), "sending to a closed end drops, not fails")
	require.Equal(t, uint64(1), a.Stats().Dropped)
}

func TestPairSendZeroAlloc(t *testing.T) {
	a, b := NewPair()
	var n int
	b.SetReceiver(func(f []byte) { n += len(f) })
	f := frameN(64, 0)
	allocs := testing.AllocsPerRun(1000, func() { _ = a.Send(f) })
	require.Zero(t, allocs)
	require.Positive(t, n)
}

func TestUDPPairLoopback(t *testing.T) {
	a, b, err := NewUDPPair()
	require.NoError(t, err)
	defer a.Close()
	defer b.Close()
	require.True(t, a.LocalAddr().Addr().IsLoopback())
	require.NotZero(t, a.LocalAddr().Port())

	cb, ca := newCollector(), newCollector()
	b.SetReceiver(cb.receive)
	a.SetReceiver(ca.receive)
	want := [][]byte{frameN(60, 1), frameN(1514, 2), frameN(9018, 3)}
	for _, f := range want {
		require.NoError(t, a.Send(f))
	}
	require.Equal(t, want, cb.wait(t, 3), "one frame per datagram, in order on loopback")
	require.NoError(t, b.Send(frameN(100, 9)))
	require.Equal(t, [][]byte{frameN(100, 9)}, ca.wait(t, 1))
	require.Equal(t, uint64(3), a.Stats().Sent)
	require.Equal(t, uint64(3), b.Stats().Received)

	require.Error(t, a.Send(make([]byte, maxDatagram+1)))
	require.NoError(t, a.Close())
	require.ErrorIs(t, a.Send(frameN(60, 0)), ErrLinkClosed)
	require.NoError(t, a.Err())
}

func TestUDPLinkExplicitAddresses(t *testing.T) {
	// Like QEMU's -netdev dgram: a fixed remote, and a local bind.
	peer, err := NewUDPLink("127.0.0.1:0", "127.0.0.1:9")
	require.NoError(t, err)
	defer peer.Close()
	l, err := NewUDPLink("127.0.0.1:0", peer.LocalAddr().String())
	require.NoError(t, err)
	defer l.Close()
	c := newCollector()
	peer.SetReceiver(c.receive)
	require.NoError(t, l.Send(frameN(64, 7)))
	require.Equal(t, [][]byte{frameN(64, 7)}, c.wait(t, 1))

	_, err = NewUDPLink("127.0.0.1:0", "not-an-address")
	require.Error(t, err)
}

func TestTapWritesPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cap.pcap")
	file, err := os.Create(path)
	require.NoError(t, err)
	pw, err := NewPcapWriter(file)
	require.NoError(t, err)
	a, b := NewPair()
	tap := NewTap(a, pw)
	cTap, cB := newCollector(), newCollector()
	tap.SetReceiver(cTap.receive)
	b.SetReceiver(cB.receive)

	out, in := frameN(60, 1), frameN(1514, 2)
	require.NoError(t, tap.Send(out))
	require.NoError(t, b.Send(in))
	require.Equal(t, [][]byte{out}, cB.wait(t, 1))
	require.Equal(t, [][]byte{in}, cTap.wait(t, 1))
	require.NoError(t, tap.Close())
	require.NoError(t, file.Close())
	require.Equal(t, uint64(2), pw.Frames())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	r, err := pcapgo.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 1, int(r.LinkType()), "Ethernet link type")
	var got [][]byte
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		require.Equal(t, len(data), ci.Length)
		require.WithinDuration(t, time.Now(), ci.Timestamp, time.Minute)
		got = append(got, data)
	}
	require.Equal(t, [][]byte{out, in}, got)
}

func TestPcapWriteZeroAlloc(t *testing.T) {
	var buf bytes.Buffer
	buf.Grow(1 << 20)
	pw, err := NewPcapWriter(&buf)
	require.NoError(t, err)
	f := frameN(64, 0)
	allocs := testing.AllocsPerRun(1000, func() { _ = pw.WriteFrame(f) })
	require.Zero(t, allocs)
}
