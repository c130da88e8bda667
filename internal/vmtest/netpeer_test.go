package vmtest

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func arpRequest(sha net.HardwareAddr, spa, tpa [4]byte) []byte {
	f := make([]byte, 60)
	copy(f[0:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:], sha)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	binary.BigEndian.PutUint16(f[14:], 1)
	binary.BigEndian.PutUint16(f[16:], 0x0800)
	f[18], f[19] = 6, 4
	binary.BigEndian.PutUint16(f[20:], 1)
	copy(f[22:], sha)
	copy(f[28:], spa[:])
	copy(f[38:], tpa[:])
	return f
}

// frames collects what the peer hands the model.
type frames struct {
	mu sync.Mutex
	fs [][]byte
}

func (c *frames) add(f []byte) {
	c.mu.Lock()
	c.fs = append(c.fs, append([]byte(nil), f...))
	c.mu.Unlock()
}

func (c *frames) wait(t *testing.T, n int) [][]byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		if len(c.fs) >= n {
			fs := c.fs
			c.mu.Unlock()
			return fs
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d frames reached the model", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIPPeer(t *testing.T) {
	far, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	peerMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
	guestMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x15}
	guestIP, peerIP := [4]byte{10, 0, 2, 15}, [4]byte{10, 0, 2, 2}
	p, err := NewIPPeer(peerMAC, netip.AddrFrom4(peerIP), far.LocalAddr().(*net.UDPAddr), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got frames
	p.SetReceiver(got.add)

	// ARP for another address is forwarded, for the peer's is answered.
	if err := p.Send(arpRequest(guestMAC, guestIP, [4]byte{10, 0, 2, 3})); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	far.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := far.ReadFromUDP(buf); err != nil || n != 60 {
		t.Fatalf("forwarded ARP: %d bytes, %v", n, err)
	}
	if err := p.Send(arpRequest(guestMAC, guestIP, peerIP)); err != nil {
		t.Fatal(err)
	}
	r := got.wait(t, 1)[0]
	if len(r) != 60 || string(r[0:6]) != string(guestMAC) || binary.BigEndian.Uint16(r[20:]) != 2 ||
		string(r[22:28]) != string(peerMAC) || [4]byte(r[28:32]) != peerIP || [4]byte(r[38:42]) != guestIP {
		t.Fatalf("ARP reply % x", r)
	}

	// The guest's echo request is answered with the same id, seq and data.
	req := ipv4Frame(peerMAC, guestMAC, guestIP, peerIP, icmpEcho(8, 0x1234, 7, 56))
	if err := p.Send(req); err != nil {
		t.Fatal(err)
	}
	// After the ARP request the peer pings the guest twice; answer them.
	var replies, pings int
	deadline := time.Now().Add(5 * time.Second)
	for seen := 1; (replies < 1 || pings < 2) && time.Now().Before(deadline); {
		fs := got.wait(t, seen+1)
		for _, f := range fs[seen:] {
			ip := f[14:]
			icmp := ip[20:]
			if inetChecksum(ip[:20]) != 0 || inetChecksum(icmp) != 0 {
				t.Fatalf("bad checksum in % x", f)
			}
			switch icmp[0] {
			case 0:
				replies++
				if string(icmp[4:]) != string(req[14+20+4:]) || [4]byte(ip[16:20]) != guestIP {
					t.Errorf("echo reply % x", f)
				}
			case 8:
				pings++
				echo := append([]byte(nil), icmp...)
				echo[0] = 0
				echo[2], echo[3] = 0, 0
				binary.BigEndian.PutUint16(echo[2:], inetChecksum(echo))
				p.Send(ipv4Frame(peerMAC, guestMAC, guestIP, peerIP, echo))
			}
		}
		seen = len(fs)
	}
	time.Sleep(50 * time.Millisecond)
	rep := p.Report()
	if rep.ARPAnswered != 1 || rep.EchoAnswered != 1 || rep.PingsSent != 2 || rep.PingsAnswered != 2 || rep.Forwarded != 1 || rep.ARPFromModel != 2 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v", rep)
	}
	// A reply that does not match a ping is an error.
	p.Send(ipv4Frame(peerMAC, guestMAC, guestIP, peerIP, icmpEcho(0, 0x1111, 1, 48)))
	if rep := p.Report(); len(rep.Errors) != 1 {
		t.Fatalf("stray echo reply not reported: %+v", rep)
	}
}
