package vmtest

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// The IPPeer's UDP sink on guestproto.NetUDPPort takes the guest's
// datagrams of netinit's TestUDPGSO, sent with UDP_SEGMENT, so that a
// driver with USO hands the device super frames to cut. Each datagram is
// checked as it arrives: the IPv4 header checksum, the UDP length against
// the IP length, the UDP checksum (RFC 768, pseudo-header included), no
// payload over guestproto.NetUDPSegment, and its bytes: the stream offset in
// its first 8, then guestproto.NetTCPByte at the offsets that follow.

// UDPReport is what the UDP sink received.
type UDPReport struct {
	Bytes      uint64 // payload bytes of the datagrams that passed
	Datagrams  int
	MaxPayload int
}

// udp handles an IPv4/UDP frame for the sink's port; it reports whether the
// frame was one.
func (p *IPPeer) udp(f []byte) bool {
	ip, ihl, total, ok := p.forPeer(f, 17)
	if !ok || ihl < 20 || total < ihl+8 || total > len(ip) {
		return false
	}
	d := ip[ihl:total]
	if binary.BigEndian.Uint16(d[2:]) != guestproto.NetUDPPort {
		return false
	}
	payload := d[8:]
	var why string
	switch {
	case inetChecksum(ip[:ihl]) != 0:
		why = "IPv4 header checksum wrong"
	case int(binary.BigEndian.Uint16(d[4:])) != len(d):
		why = fmt.Sprintf("UDP length %d in a %d-byte datagram", binary.BigEndian.Uint16(d[4:]), len(d))
	case binary.BigEndian.Uint16(d[6:]) != 0 && l4Checksum(ip[12:16], ip[16:20], 17, d) != 0:
		why = "UDP checksum wrong"
	case len(payload) > guestproto.NetUDPSegment || len(payload) < 8:
		why = fmt.Sprintf("a %d-byte payload (segments of %d)", len(payload), guestproto.NetUDPSegment)
	default:
		why = udpPayloadCheck(payload)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if why != "" {
		p.rep.Errors = append(p.rep.Errors, "UDP sink: "+why)
		return true
	}
	r := &p.rep.UDP
	r.Datagrams++
	r.Bytes += uint64(len(payload))
	r.MaxPayload = max(r.MaxPayload, len(payload))
	return true
}

// udpPayloadCheck checks a TestUDPGSO datagram's bytes: "" if right.
func udpPayloadCheck(payload []byte) string {
	off := binary.BigEndian.Uint64(payload)
	for i := 8; i < len(payload); i++ {
		if want := guestproto.NetTCPByte(off + uint64(i)); payload[i] != want {
			return fmt.Sprintf("datagram at stream offset %d: byte %d is %#02x, want %#02x", off, i, payload[i], want)
		}
	}
	return ""
}
