package traffic

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A forwarder that waits on a Backlog before each write loses nothing in a
// socket that holds less than the frames it writes and is read slowly: the
// bridge in front of QEMU's igb relies on it. Without the waits the same
// writes overflow the socket (checked first, so the test can fail).
func TestBacklogHoldsForwarder(t *testing.T) {
	const frames, size = 600, 1400
	run := func(wait bool) (got, drops, waits int) {
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetReadBuffer(256 << 10)
		addr := conn.LocalAddr().(*net.UDPAddr).AddrPort()
		if _, ok := remoteSocketStat(addr); !ok {
			t.Skipf("no %s entry for our own socket", procNetUDP)
		}
		out, err := net.DialUDP("udp4", nil, conn.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		bl := NewBacklog(addr, 10*time.Second)
		var n atomic.Int64
		done := make(chan struct{})
		go func() { // a slow reader: a pause every 20 datagrams
			defer close(done)
			buf := make([]byte, 2048)
			for n.Load() < frames {
				_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				if _, err := conn.Read(buf); err != nil {
					return
				}
				if n.Add(1)%20 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
		time.Sleep(50 * time.Millisecond) // let the socket fill before the reader keeps up
		for i := 0; i < frames; i++ {
			if wait {
				if err := bl.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := out.Write(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
		}
		<-done
		drops, waits = bl.Stats()
		return int(n.Load()), drops, waits
	}
	if got, drops, _ := run(false); drops == 0 || got == frames {
		t.Fatalf("without waits: %d of %d frames read, %d dropped; want drops (the socket is too large for the test)", got, frames, drops)
	}
	got, drops, waits := run(true)
	if got != frames || drops != 0 || waits == 0 {
		t.Errorf("with waits: %d of %d frames read, %d dropped, held back %d times; want all, 0, some", got, frames, drops, waits)
	}
}
