package pktgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Header sizes and protocol numbers (RFC 791, 768, 792).
const (
	EthLen  = 14
	IPv4Len = 20
	UDPLen  = 8
	ICMPLen = 8

	EtherTypeIPv4 = 0x0800
	ProtoICMP     = 1
	ProtoUDP      = 17

	MinFrame = EthLen + IPv4Len + UDPLen // smallest UDP frame built
	MaxFrame = 9018
)

// Flow is one UDP flow.
type Flow struct {
	SrcMAC, DstMAC   net.HardwareAddr
	SrcIP, DstIP     netip.Addr // IPv4
	SrcPort, DstPort uint16
	Size             int // frame length without FCS; 64 when 0
	TTL              uint8
}

// DefaultFlow is the flow xnic's demo and pktgen send: 198.18.0.1:9 ->
// 198.18.0.2:9 (RFC 2544 benchmarking addresses), 64 bytes.
func DefaultFlow() Flow {
	return Flow{
		SrcMAC:  net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01},
		DstMAC:  net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02},
		SrcIP:   netip.AddrFrom4([4]byte{198, 18, 0, 1}),
		DstIP:   netip.AddrFrom4([4]byte{198, 18, 0, 2}),
		SrcPort: 9, DstPort: 9, Size: 64, TTL: 64,
	}
}

// ErrBadFlow is wrapped by builders given a flow they cannot build.
var ErrBadFlow = errors.New("pktgen: bad flow")

// UDP returns the flow's frame.
func (f Flow) UDP() ([]byte, error) {
	size := f.Size
	if size == 0 {
		size = 64
	}
	if size < MinFrame || size > MaxFrame {
		return nil, fmt.Errorf("%w: size %d outside %d..%d", ErrBadFlow, size, MinFrame, MaxFrame)
	}
	if len(f.SrcMAC) != 6 || len(f.DstMAC) != 6 || !f.SrcIP.Is4() || !f.DstIP.Is4() {
		return nil, fmt.Errorf("%w: want 6-byte MACs and IPv4 addresses", ErrBadFlow)
	}
	b := make([]byte, size)
	ip := putEthIPv4(b, f.DstMAC, f.SrcMAC, f.SrcIP, f.DstIP, ProtoUDP, size-EthLen, f.TTL, false, 0)
	u := ip[IPv4Len:]
	binary.BigEndian.PutUint16(u[0:], f.SrcPort)
	binary.BigEndian.PutUint16(u[2:], f.DstPort)
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	for i := UDPLen; i < len(u); i++ {
		u[i] = byte(i)
	}
	binary.BigEndian.PutUint16(u[6:], l4Checksum(f.SrcIP, f.DstIP, ProtoUDP, u))
	return b, nil
}

// putEthIPv4 writes Ethernet and IPv4 headers into b and returns the IPv4
// packet (header onwards).
func putEthIPv4(b []byte, dst, src net.HardwareAddr, sip, dip netip.Addr, proto uint8, ipLen int, ttl uint8, df bool, id uint16) []byte {
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4)
	ip := b[EthLen : EthLen+ipLen]
	ip[0] = 0x45
	ip[1] = 0
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
	binary.BigEndian.PutUint16(ip[4:], id)
	if df {
		binary.BigEndian.PutUint16(ip[6:], 0x4000)
	}
	if ttl == 0 {
		ttl = 64
	}
	ip[8] = ttl
	ip[9] = proto
	s, d := sip.As4(), dip.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], Checksum(ip[:IPv4Len]))
	return ip
}

// Echo describes an ICMP echo request.
type Echo struct {
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   netip.Addr
	ID, Seq        uint16
	Payload        int  // bytes after the ICMP header (ping -s)
	DF             bool // set Don't Fragment, as ping does with -M do
}

// Frame builds the echo request.
func (e Echo) Frame() ([]byte, error) {
	if len(e.SrcMAC) != 6 || len(e.DstMAC) != 6 || !e.SrcIP.Is4() || !e.DstIP.Is4() || e.Payload < 0 || e.Payload > MaxFrame {
		return nil, fmt.Errorf("%w: echo %+v", ErrBadFlow, e)
	}
	ipLen := IPv4Len + ICMPLen + e.Payload
	b := make([]byte, EthLen+ipLen)
	ip := putEthIPv4(b, e.DstMAC, e.SrcMAC, e.SrcIP, e.DstIP, ProtoICMP, ipLen, 64, e.DF, e.Seq)
	ic := ip[IPv4Len:]
	ic[0] = 8 // echo request
	binary.BigEndian.PutUint16(ic[4:], e.ID)
	binary.BigEndian.PutUint16(ic[6:], e.Seq)
	for i := ICMPLen; i < len(ic); i++ {
		ic[i] = byte(i)
	}
	binary.BigEndian.PutUint16(ic[2:], Checksum(ic))
	return b, nil
}

// Checksum is the Internet checksum (RFC 1071) of b.
func Checksum(b []byte) uint16 {
	return ^fold(sum(0, b))
}

func sum(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func l4Checksum(sip, dip netip.Addr, proto uint8, seg []byte) uint16 {
	s, d := sip.As4(), dip.As4()
	var ph [12]byte
	copy(ph[0:4], s[:])
	copy(ph[4:8], d[:])
	ph[9] = proto
	binary.BigEndian.PutUint16(ph[10:], uint16(len(seg)))
	c := ^fold(sum(sum(0, ph[:]), seg))
	if c == 0 && proto == ProtoUDP {
		c = 0xffff
	}
	return c
}

// Valid checks the IPv4 header checksum and the UDP or ICMP checksum of an
// Ethernet frame; for tests and for checking what a program built.
func Valid(frame []byte) error {
	if len(frame) < EthLen+IPv4Len || binary.BigEndian.Uint16(frame[12:]) != EtherTypeIPv4 {
		return errors.New("pktgen: not an IPv4 frame")
	}
	ip := frame[EthLen:]
	hl := int(ip[0]&0xf) * 4
	tl := int(binary.BigEndian.Uint16(ip[2:]))
	if hl < IPv4Len || tl < hl || tl > len(ip) {
		return fmt.Errorf("pktgen: IPv4 lengths header %d total %d in %d bytes", hl, tl, len(ip))
	}
	if fold(sum(0, ip[:hl])) != 0xffff {
		return errors.New("pktgen: bad IPv4 header checksum")
	}
	pl := ip[hl:tl]
	switch ip[9] {
	case ProtoICMP:
		if fold(sum(0, pl)) != 0xffff {
			return errors.New("pktgen: bad ICMP checksum")
		}
	case ProtoUDP:
		if len(pl) < UDPLen {
			return errors.New("pktgen: short UDP")
		}
		if binary.BigEndian.Uint16(pl[6:]) != 0 {
			sip := netip.AddrFrom4([4]byte(ip[12:16]))
			dip := netip.AddrFrom4([4]byte(ip[16:20]))
			if c := l4Checksum(sip, dip, ProtoUDP, zeroCsum(pl)); c != binary.BigEndian.Uint16(pl[6:]) {
				return errors.New("pktgen: bad UDP checksum")
			}
		}
	}
	return nil
}

func zeroCsum(u []byte) []byte {
	c := append([]byte(nil), u...)
	c[6], c[7] = 0, 0
	return c
}
