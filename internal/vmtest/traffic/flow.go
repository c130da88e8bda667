package traffic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
)

// Flow frames are UDP/IPv4 frames whose 5-tuple depends on a flow number, so a
// NIC's receive-side scaling spreads them over its queues. Flow f goes from
// 10.1.<f/256>.<f%256> port FlowSrcPortBase+f to 10.2.0.1 port FlowDstPort. The
// UDP payload holds "XNFL", the flow number and a sequence number (uint32 each,
// big-endian); the frame is padded to MinFrameLen.
const (
	FlowSrcPortBase = 10000
	FlowDstPort     = 9000
	flowFrameLen    = MinFrameLen // 14 + 20 + 8 + 12 = 54, padded
	offIPv4         = 14
	offUDP          = offIPv4 + 20
	offFlowPayload  = offUDP + 8
)

var flowMagic = [4]byte{'X', 'N', 'F', 'L'}

// ErrNotFlow reports a frame that is not a flow frame made by FlowFrame.
var ErrNotFlow = errors.New("traffic: not a flow frame")

// FlowAddrs returns the source and destination IPv4 addresses and UDP ports of
// flow f (0 <= f < 65536).
func FlowAddrs(f int) (srcIP, dstIP [4]byte, srcPort, dstPort uint16) {
	return [4]byte{10, 1, byte(f >> 8), byte(f)}, [4]byte{10, 2, 0, 1}, uint16(FlowSrcPortBase + f), FlowDstPort
}

// AppendFlowFrame appends flow frame (flow, seq) from src to dst to b. It does
// not allocate when b has room.
func AppendFlowFrame(b []byte, flow, seq int, dst, src net.HardwareAddr) []byte {
	start := len(b)
	b = grow(b, flowFrameLen)
	f := b[start:]
	clear(f)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], EtherTypeIPv4)
	sip, dip, sport, dport := FlowAddrs(flow)
	ip := f[offIPv4 : offIPv4+20]
	ip[0] = 0x45 // version 4, 5 words of header
	udpLen := 8 + 12
	binary.BigEndian.PutUint16(ip[2:], uint16(20+udpLen))
	binary.BigEndian.PutUint16(ip[4:], uint16(seq))
	ip[6] = 0x40 // don't fragment
	ip[8] = 64   // TTL
	ip[9] = 17   // UDP
	copy(ip[12:16], sip[:])
	copy(ip[16:20], dip[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := f[offUDP:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	// UDP checksum 0: none (allowed for IPv4).
	p := f[offFlowPayload:]
	copy(p, flowMagic[:])
	binary.BigEndian.PutUint32(p[4:], uint32(flow))
	binary.BigEndian.PutUint32(p[8:], uint32(seq))
	return b
}

// FlowFrame returns a new flow frame; see AppendFlowFrame.
func FlowFrame(flow, seq int, dst, src net.HardwareAddr) []byte {
	return AppendFlowFrame(make([]byte, 0, flowFrameLen), flow, seq, dst, src)
}

// ParseFlow returns the flow and sequence numbers of a flow frame, checking
// its IPv4 header checksum and addresses.
func ParseFlow(f []byte) (flow, seq int, err error) {
	if len(f) < offFlowPayload+12 || binary.BigEndian.Uint16(f[12:]) != EtherTypeIPv4 ||
		f[offIPv4] != 0x45 || f[offIPv4+9] != 17 {
		return 0, 0, ErrNotFlow
	}
	p := f[offFlowPayload:]
	if !bytes.Equal(p[:4], flowMagic[:]) || ipChecksum(f[offIPv4:offIPv4+20]) != 0 {
		return 0, 0, ErrNotFlow
	}
	flow = int(binary.BigEndian.Uint32(p[4:]))
	sip, _, sport, _ := FlowAddrs(flow)
	if !bytes.Equal(f[offIPv4+12:offIPv4+16], sip[:]) || binary.BigEndian.Uint16(f[offUDP:]) != sport {
		return 0, 0, ErrNotFlow
	}
	return flow, int(binary.BigEndian.Uint32(p[8:])), nil
}

// ipChecksum is the Internet checksum (RFC 1071) of h; it is 0 over a header
// whose checksum field is right.
func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// FlowHashInputIPv4 is the input of the Toeplitz hash for flow f when a NIC
// hashes IPv4 addresses only (source then destination address).
func FlowHashInputIPv4(f int) [8]byte {
	sip, dip, _, _ := FlowAddrs(f)
	var in [8]byte
	copy(in[0:4], sip[:])
	copy(in[4:8], dip[:])
	return in
}

// FlowHashInputUDP4 is the Toeplitz input when a NIC hashes the UDP/IPv4
// 4-tuple: source address, destination address, source port, destination port.
func FlowHashInputUDP4(f int) [12]byte {
	sip, dip, sport, dport := FlowAddrs(f)
	var in [12]byte
	copy(in[0:4], sip[:])
	copy(in[4:8], dip[:])
	binary.BigEndian.PutUint16(in[8:], sport)
	binary.BigEndian.PutUint16(in[10:], dport)
	return in
}

// Toeplitz computes the Toeplitz hash used by receive-side scaling (Microsoft's
// RSS specification) of input under key. The key must be at least
// len(input)+4 bytes long (40-byte keys cover IPv6 4-tuples); a shorter key
// yields 0.
func Toeplitz(key, input []byte) uint32 {
	if len(key) < len(input)+4 {
		return 0
	}
	var h uint32
	window := binary.BigEndian.Uint32(key)
	for i, b := range input {
		next := key[i+4]
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= window
			}
			window = window<<1 | uint32(next>>bit&1)
		}
	}
	return h
}
