package vmtest

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// The IPPeer's TCP sink: a receiver on guestproto.NetTCPPort for the guest's
// stream (netinit's TestTCPStream), so the guest's TCP stack sends through
// the driver, and a driver with TSO hands the device super frames to cut.
// It is RFC 793's receiving side at its smallest: it answers a SYN with a
// SYN-ACK offering tcpSinkMSS (no window scaling, timestamps or SACK, so the
// guest's segments carry none of them in reply), acknowledges every segment
// with the next byte it expects and a 65535-byte window, and answers the
// guest's FIN with its own. It checks what the wire carried, segment by
// segment: the IPv4 header and TCP checksums, no payload over the MSS it
// offered, the sequence numbers continuous (a segment beyond the next
// expected byte means one was lost or cut wrong), and every byte equal to
// guestproto.NetTCPByte at its offset in the stream. Retransmissions (data
// before the next expected byte) are counted, not refused: a slow guest may
// time out.
const (
	tcpSinkMSS = 1460
	tcpSinkISS = 0x584e0000 // the sink's initial sequence number
)

// tcpSink is the sink's connection state, guarded by the IPPeer's mu.
type tcpSink struct {
	guestPort      uint16
	irs, rcvNxt    uint32 // the guest's initial sequence number, the next byte expected
	sndNxt         uint32 // the sink's next sequence number
	open, finished bool
}

// TCPReport is what the TCP sink received.
type TCPReport struct {
	Bytes       uint64 // stream bytes received in order
	Segments    int    // segments with payload
	MaxPayload  int    // the largest payload of one segment
	Retransmits int    // segments that repeated bytes already received
	Closed      bool   // the guest's FIN arrived after all its bytes
}

const tcpFlagFIN, tcpFlagSYN, tcpFlagRST, tcpFlagPSH, tcpFlagACK = 0x01, 0x02, 0x04, 0x08, 0x10

// tcp handles an IPv4/TCP frame for the sink's port; it reports whether the
// frame was one.
func (p *IPPeer) tcp(f []byte) bool {
	ip, ihl, total, ok := p.forPeer(f, 6)
	if !ok {
		return false
	}
	if ihl < 20 || total < ihl+20 || total > len(ip) {
		p.problem("malformed IPv4/TCP frame from the guest (%d bytes, IP length %d)", len(f), total)
		return true
	}
	seg := ip[ihl:total]
	if binary.BigEndian.Uint16(seg[2:]) != guestproto.NetTCPPort {
		return false
	}
	doff := int(seg[12]>>4) * 4
	switch {
	case inetChecksum(ip[:ihl]) != 0:
		p.problem("IPv4 header checksum wrong in a TCP segment from the guest (id %#x)", binary.BigEndian.Uint16(ip[4:]))
		return true
	case tcpChecksum(ip[12:16], ip[16:20], seg) != 0:
		p.problem("TCP checksum wrong in a segment from the guest (seq %d, %d bytes)", binary.BigEndian.Uint32(seg[4:]), len(seg))
		return true
	case doff < 20 || doff > len(seg):
		p.problem("TCP data offset %d in a %d-byte segment", doff, len(seg))
		return true
	}
	p.mu.Lock()
	reply := p.tcpSegmentLocked(seg, seg[doff:])
	p.mu.Unlock()
	if reply != nil {
		p.toModel(p.tcpFrame(f[6:12], [4]byte(ip[12:16]), reply))
	}
	return true
}

// tcpSegmentLocked takes one checked segment (payload its data) and returns
// the TCP segment to answer with (nil: none).
func (p *IPPeer) tcpSegmentLocked(seg, payload []byte) []byte {
	s, r := &p.sink, &p.rep.TCP
	seq, flags := binary.BigEndian.Uint32(seg[4:]), seg[13]
	port := binary.BigEndian.Uint16(seg[0:])
	switch {
	case flags&tcpFlagRST != 0:
		p.rep.Errors = append(p.rep.Errors, fmt.Sprintf("TCP: the guest reset the connection at seq %d", seq))
		s.open = false
		return nil
	case flags&tcpFlagSYN != 0:
		if !s.open || s.guestPort != port || s.irs != seq { // a new connection
			*s = tcpSink{guestPort: port, irs: seq, rcvNxt: seq + 1, sndNxt: tcpSinkISS + 1, open: true}
			*r = TCPReport{}
		}
		return tcpHeader(port, tcpSinkISS, seq+1, tcpFlagSYN|tcpFlagACK, true) // again for a repeated SYN
	case !s.open || port != s.guestPort:
		return nil
	}
	if len(payload) > 0 {
		p.tcpDataLocked(seq, payload)
	}
	if flags&tcpFlagFIN != 0 && seq+uint32(len(payload)) == s.rcvNxt && !s.finished {
		s.rcvNxt++
		s.finished, r.Closed = true, true
		h := tcpHeader(port, s.sndNxt, s.rcvNxt, tcpFlagFIN|tcpFlagACK, false)
		s.sndNxt++
		return h
	}
	if len(payload) == 0 && flags&tcpFlagFIN == 0 {
		return nil // a bare ACK
	}
	sn := s.sndNxt
	if s.finished {
		sn-- // our FIN again
	}
	return tcpHeader(port, sn, s.rcvNxt, tcpFlagACK, false)
}

// tcpDataLocked checks and takes the payload of a segment at seq.
func (p *IPPeer) tcpDataLocked(seq uint32, payload []byte) {
	s, r := &p.sink, &p.rep.TCP
	r.Segments++
	r.MaxPayload = max(r.MaxPayload, len(payload))
	if len(payload) > tcpSinkMSS {
		p.rep.Errors = append(p.rep.Errors, fmt.Sprintf("TCP segment at seq %d carries %d bytes, over the MSS %d the peer offered", seq, len(payload), tcpSinkMSS))
	}
	d := int32(seq - s.rcvNxt)
	switch {
	case d > 0:
		p.rep.Errors = append(p.rep.Errors, fmt.Sprintf("TCP segment at stream offset %d, the next expected is %d: a segment was lost or cut wrong", seq-s.irs-1, s.rcvNxt-s.irs-1))
		return
	case int(-d) >= len(payload):
		r.Retransmits++
		return
	case d < 0:
		r.Retransmits++
		payload = payload[-d:]
	}
	off := uint64(s.rcvNxt - s.irs - 1)
	for i, b := range payload {
		if want := guestproto.NetTCPByte(off + uint64(i)); b != want {
			p.rep.Errors = append(p.rep.Errors, fmt.Sprintf("TCP stream byte %d is %#02x, want %#02x", off+uint64(i), b, want))
			break
		}
	}
	s.rcvNxt += uint32(len(payload))
	r.Bytes += uint64(len(payload))
}

// tcpHeader is a TCP header from the sink to the guest's port (with the MSS
// option on a SYN); the checksum is tcpFrame's.
func tcpHeader(port uint16, seq, ack uint32, flags byte, mss bool) []byte {
	n := 20
	if mss {
		n = 24
	}
	h := make([]byte, n)
	binary.BigEndian.PutUint16(h[0:], guestproto.NetTCPPort)
	binary.BigEndian.PutUint16(h[2:], port)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], ack)
	h[12], h[13] = byte(n/4)<<4, flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	if mss {
		h[20], h[21] = 2, 4 // RFC 793 maximum segment size option
		binary.BigEndian.PutUint16(h[22:], tcpSinkMSS)
	}
	return h
}

// tcpFrame wraps TCP segment seg to the guest (mac, ip) in IPv4 and Ethernet
// and fills in its checksum.
func (p *IPPeer) tcpFrame(mac []byte, to [4]byte, seg []byte) []byte {
	binary.BigEndian.PutUint16(seg[16:], 0)
	binary.BigEndian.PutUint16(seg[16:], tcpChecksum(p.ip[:], to[:], seg))
	return ipv4FrameProto(mac, p.mac, p.ip, to, 6, seg)
}

// tcpChecksum is the TCP checksum of seg between src and dst (RFC 793: the
// pseudo-header, then the segment); 0 over a segment whose checksum is right.
func tcpChecksum(src, dst []byte, seg []byte) uint16 { return l4Checksum(src, dst, 6, seg) }

// l4Checksum is the checksum of seg of IP protocol proto (TCP, UDP) between
// src and dst, the IPv4 pseudo-header included.
func l4Checksum(src, dst []byte, proto byte, seg []byte) uint16 {
	b := make([]byte, 0, 12+len(seg))
	b = append(b, src...)
	b = append(b, dst...)
	b = append(b, 0, proto, byte(len(seg)>>8), byte(len(seg)))
	return inetChecksum(append(b, seg...))
}
