package nictest

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// L4Spec describes a TCP or UDP frame for BuildL4. Zero fields take the
// defaults named beside them; the checksum tests of the three families vary
// only what they set.
type L4Spec struct {
	V6, TCP  bool
	VLAN     bool             // an 802.1Q tag after the addresses
	VLANID   uint16           // the tag's VID
	Priority uint8            // the tag's PCP
	Src, Dst net.HardwareAddr // nil: 02:00:00:00:00:01, 02:00:00:00:00:02
	// SrcIP and DstIP: nil: 10.0.0.1 and 10.0.0.2, or 2001:db8::1 and
	// 2001:db8::2 for IPv6.
	SrcIP, DstIP     net.IP
	IPID             uint16 // IPv4 identification
	SrcPort, DstPort uint16 // 0: 1234 and 80 (TCP) or 53 (UDP)
	Seq, Ack         uint32 // TCP; the frame has ACK set
	PSH              bool   // TCP
	Window           uint16 // TCP; 0: 512
	Payload          []byte
}

// L4Frame is a frame gopacket built from an L4Spec, with the checksums
// gopacket computed (the reference a device's or a driver's must equal), and
// where its headers and checksum fields lie, as offsets from its first byte.
type L4Frame struct {
	Bytes []byte
	L3    int  // the IP header
	L4    int  // the TCP or UDP header
	Sum   int  // the L4 checksum field: L4+16 (TCP) or L4+6 (UDP)
	IPSum int  // the IPv4 header checksum field; 0 for IPv6
	Proto byte // the L4 protocol number
	V6    bool
}

// Field is where the L4 checksum field lies from the L4 header (the
// CsumOffset of a CHECKSUM_PARTIAL request).
func (f L4Frame) Field() int { return f.Sum - f.L4 }

// BuildL4 builds the frame s describes, failing t if gopacket cannot.
func BuildL4(t testing.TB, s L4Spec) L4Frame {
	t.Helper()
	src, dst := s.Src, s.Dst
	if src == nil {
		src = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	}
	if dst == nil {
		dst = net.HardwareAddr{2, 0, 0, 0, 0, 2}
	}
	f := L4Frame{L3: 14, Proto: byte(layers.IPProtocolUDP), V6: s.V6}
	if s.TCP {
		f.Proto = byte(layers.IPProtocolTCP)
	}
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}
	if s.V6 {
		eth.EthernetType = layers.EthernetTypeIPv6
	}
	ls := []gopacket.SerializableLayer{eth}
	if s.VLAN {
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: s.VLANID, Priority: s.Priority, Type: eth.EthernetType})
		eth.EthernetType, f.L3 = layers.EthernetTypeDot1Q, 18
	}
	ip := ipLayer(s, layers.IPProtocol(f.Proto))
	ls = append(ls, ip.(gopacket.SerializableLayer))
	f.L4 = f.L3 + 20
	if s.V6 {
		f.L4 = f.L3 + 40
	} else {
		f.IPSum = f.L3 + 10
	}
	l4, field := l4Layer(s)
	if err := l4.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	f.Sum = f.L4 + field
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, append(ls, l4, gopacket.Payload(s.Payload))...); err != nil {
		t.Fatal(err)
	}
	f.Bytes = bytes.Clone(buf.Bytes())
	return f
}

// ipLayer is s's IPv4 or IPv6 header carrying proto.
func ipLayer(s L4Spec, proto layers.IPProtocol) gopacket.NetworkLayer {
	if s.V6 {
		src, dst := s.SrcIP, s.DstIP
		if src == nil {
			src = net.ParseIP("2001:db8::1")
		}
		if dst == nil {
			dst = net.ParseIP("2001:db8::2")
		}
		return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src, DstIP: dst}
	}
	src, dst := s.SrcIP, s.DstIP
	if src == nil {
		src = net.IP{10, 0, 0, 1}
	}
	if dst == nil {
		dst = net.IP{10, 0, 0, 2}
	}
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: s.IPID, Protocol: proto, SrcIP: src, DstIP: dst}
}

// l4Layer is s's TCP or UDP header, and its checksum field's offset in it.
func l4Layer(s L4Spec) (interface {
	gopacket.SerializableLayer
	SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
}, int) {
	sport, dport := s.SrcPort, s.DstPort
	if sport == 0 {
		sport = 1234
	}
	if s.TCP {
		if dport == 0 {
			dport = 80
		}
		win := s.Window
		if win == 0 {
			win = 512
		}
		return &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: s.Seq, Ack: s.Ack,
			ACK: true, PSH: s.PSH, Window: win, DataOffset: 5}, 16
	}
	if dport == 0 {
		dport = 53
	}
	return &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, 6
}

// Partial is the frame as a CHECKSUM_PARTIAL sender hands it over: the L4
// checksum field holds the folded sum of the pseudo-header (PseudoSum), the
// L4 length taken from the IP header, so that the padding gopacket adds to a
// short frame is not counted.
func (f L4Frame) Partial() []byte {
	p := bytes.Clone(f.Bytes)
	end := f.L3 + int(binary.BigEndian.Uint16(p[f.L3+2:])) // IPv4 total length
	if f.V6 {
		end = f.L4 + int(binary.BigEndian.Uint16(p[f.L3+4:])) // IPv6 payload length
	}
	binary.BigEndian.PutUint16(p[f.Sum:], PseudoSum(p[:end], f.V6, f.L3, f.L4, f.Proto))
	return p
}
