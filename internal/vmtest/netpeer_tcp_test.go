package vmtest

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// guestTCP is the guest's side of a connection to the sink, written by hand.
type guestTCP struct {
	t         *testing.T
	p         *IPPeer
	got       *frames
	seen      int
	mac, pmac net.HardwareAddr
	ip, pip   [4]byte
	port      uint16
	iss       uint32
}

// send sends a segment of the guest's (payload at stream offset off) and
// returns the sink's answer (nil if none is wanted).
func (g *guestTCP) send(seq uint32, flags byte, payload []byte, corrupt, answer bool) []byte {
	g.t.Helper()
	h := make([]byte, 20+len(payload))
	binary.BigEndian.PutUint16(h[0:], g.port)
	binary.BigEndian.PutUint16(h[2:], guestproto.NetTCPPort)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], tcpSinkISS+1)
	h[12], h[13] = 5<<4, flags|tcpFlagACK
	binary.BigEndian.PutUint16(h[14:], 1000)
	copy(h[20:], payload)
	binary.BigEndian.PutUint16(h[16:], tcpChecksum(g.ip[:], g.pip[:], h))
	if corrupt {
		h[17] ^= 1
	}
	if err := g.p.Send(ipv4FrameProto(g.pmac, g.mac, g.ip, g.pip, 6, h)); err != nil {
		g.t.Fatal(err)
	}
	if !answer {
		return nil
	}
	fs := g.got.wait(g.t, g.seen+1)
	g.seen++
	f := fs[g.seen-1]
	ip := f[14:]
	seg := ip[20:binary.BigEndian.Uint16(ip[2:])] // without the padding to 60 bytes
	if inetChecksum(ip[:20]) != 0 || ip[9] != 6 || tcpChecksum(ip[12:16], ip[16:20], seg) != 0 {
		g.t.Fatalf("sink's answer has bad checksums: % x", f)
	}
	return seg
}

func stream(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = guestproto.NetTCPByte(uint64(off + i))
	}
	return b
}

// TestIPPeerTCPSink drives the sink as a guest's TCP would, with the
// mistakes a broken TSO engine makes.
func TestIPPeerTCPSink(t *testing.T) {
	far, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	g := &guestTCP{t: t, got: &frames{}, mac: net.HardwareAddr{2, 0, 0, 0, 0, 0x15}, pmac: net.HardwareAddr{2, 0, 0, 0, 0, 0x99},
		ip: [4]byte{10, 0, 2, 15}, pip: [4]byte{10, 0, 2, 2}, port: 40000, iss: 1000}
	if g.p, err = NewIPPeer(g.pmac, netip.AddrFrom4(g.pip), far.LocalAddr().(*net.UDPAddr), 0); err != nil {
		t.Fatal(err)
	}
	defer g.p.Close()
	g.p.SetReceiver(g.got.add)

	sa := g.send(g.iss, tcpFlagSYN, nil, false, true)
	if sa[13] != tcpFlagSYN|tcpFlagACK || binary.BigEndian.Uint32(sa[8:]) != g.iss+1 || len(sa) != 24 ||
		sa[20] != 2 || binary.BigEndian.Uint16(sa[22:]) != tcpSinkMSS {
		t.Fatalf("SYN-ACK % x", sa)
	}
	seq := g.iss + 1
	g.send(seq, 0, nil, false, false) // the handshake's ACK: no answer
	a := g.send(seq, tcpFlagPSH, stream(0, 1000), false, true)
	if binary.BigEndian.Uint32(a[8:]) != seq+1000 {
		t.Fatalf("ACK %d after 1000 bytes, want %d", binary.BigEndian.Uint32(a[8:]), seq+1000)
	}
	g.send(seq+500, 0, stream(500, 1000), false, true)   // overlaps: 500 new bytes
	g.send(seq+1500, 0, stream(1500, 100), true, false)  // bad checksum: dropped
	g.send(seq+1700, 0, stream(1700, 100), false, true)  // a gap
	g.send(seq+1500, 0, stream(1501, 100), false, true)  // wrong bytes
	g.send(seq+1600, 0, stream(1600, 1500), false, true) // over the MSS
	fin := g.send(seq+3100, tcpFlagFIN, nil, false, true)
	if fin[13] != tcpFlagFIN|tcpFlagACK || binary.BigEndian.Uint32(fin[8:]) != seq+3101 {
		t.Fatalf("FIN answer % x", fin)
	}
	r := g.p.Report()
	if r.TCP.Bytes != 3100 || !r.TCP.Closed || r.TCP.Retransmits != 1 || r.TCP.MaxPayload != 1500 || r.TCP.Segments != 5 {
		t.Errorf("report %+v", r.TCP)
	}
	want := []string{"TCP checksum wrong", "a segment was lost", "TCP stream byte 1500", "over the MSS"}
	if len(r.Errors) != len(want) {
		t.Fatalf("errors %q, want %d", r.Errors, len(want))
	}
	for i, w := range want {
		if !strings.Contains(r.Errors[i], w) {
			t.Errorf("error %d %q, want %q", i, r.Errors[i], w)
		}
	}
}
