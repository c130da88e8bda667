package examples

import (
	"encoding/binary"
	"math/rand/v2"
)

// Frame builders and the random frame generator of the differential tests.
// Every builder writes the headers it is asked for and fills the rest with
// pseudo-random bytes; lengths are Ethernet frame lengths without the FCS.

var (
	macA = []byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	macB = []byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

const (
	ethIPv4 = 0x0800
	ethIPv6 = 0x86DD
	ethARP  = 0x0806
	ethVLAN = 0x8100
	ethQinQ = 0x88A8

	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// srcPool are IPv4 sources the ACL prefixes match (or nearly match).
var srcPool = [][4]byte{
	{10, 1, 2, 3}, {10, 2, 0, 1}, {10, 1, 255, 255}, {192, 168, 1, 200}, {192, 168, 1, 100},
	{172, 16, 0, 1}, {172, 16, 0, 2}, {129, 0, 0, 1}, {8, 8, 8, 8},
}

type frameGen struct {
	r *rand.Rand
}

func newFrameGen(seed uint64) *frameGen {
	return &frameGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *frameGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g *frameGen) size(min int) int {
	// Mostly small frames, some up to the 1514-byte maximum.
	switch g.r.IntN(4) {
	case 0:
		return min + g.r.IntN(1515-min)
	case 1:
		return max(min, 60+g.r.IntN(40))
	default:
		return max(min, min+g.r.IntN(200))
	}
}

func (g *frameGen) ipv4Addr() [4]byte {
	if g.r.IntN(3) > 0 {
		return srcPool[g.r.IntN(len(srcPool))]
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], g.r.Uint32())
	return a
}

// ethHeader writes the Ethernet header and tags; returns the L3 offset.
func ethHeader(f []byte, tags []uint16, etherType uint16) int {
	copy(f[0:6], macB)
	copy(f[6:12], macA)
	off := 12
	for _, tpid := range tags {
		binary.BigEndian.PutUint16(f[off:], tpid)
		binary.BigEndian.PutUint16(f[off+2:], 100)
		off += 4
	}
	binary.BigEndian.PutUint16(f[off:], etherType)
	return off + 2
}

// ipv4 builds an IPv4 frame with protocol proto and a correct header
// checksum; ihl (5..15) adds options. n is clamped to the headers' size.
func (g *frameGen) ipv4(n int, tags []uint16, proto byte, ihl int, dport uint16) []byte {
	l3 := 14 + 4*len(tags)
	l4 := l3 + 4*ihl
	hdr := l4
	switch proto {
	case protoUDP, protoICMP:
		hdr += 8
	case protoTCP:
		hdr += 20
	}
	n = max(n, hdr)
	f := g.bytes(n)
	ethHeader(f, tags, ethIPv4)
	ip := f[l3:]
	ip[0] = 0x40 | byte(ihl)
	ip[1] = byte(g.r.IntN(4)) // TOS: its low bits pick xdp_globals' verdict
	binary.BigEndian.PutUint16(ip[2:], uint16(n-l3))
	if g.r.IntN(8) == 0 {
		binary.BigEndian.PutUint16(ip[6:], uint16(g.r.IntN(3))<<13|uint16(g.r.IntN(3))) // fragments
	} else {
		binary.BigEndian.PutUint16(ip[6:], 0x4000)
	}
	ip[8] = 64
	ip[9] = proto
	src, dst := g.ipv4Addr(), g.ipv4Addr()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip[:4*ihl]))
	l4b := f[l4:]
	switch proto {
	case protoUDP:
		binary.BigEndian.PutUint16(l4b[0:], uint16(1024+g.r.IntN(60000)))
		binary.BigEndian.PutUint16(l4b[2:], dport)
		binary.BigEndian.PutUint16(l4b[4:], uint16(n-l4))
	case protoTCP:
		binary.BigEndian.PutUint16(l4b[0:], uint16(1024+g.r.IntN(60000)))
		binary.BigEndian.PutUint16(l4b[2:], dport)
		l4b[12] = 5 << 4
	case protoICMP:
		l4b[0], l4b[1] = 8, 0 // echo request
		binary.BigEndian.PutUint16(l4b[2:], 0)
		binary.BigEndian.PutUint16(l4b[2:], ^onesSum(l4b))
	}
	return f
}

func (g *frameGen) ipv6(n int, tags []uint16, next byte) []byte {
	l3 := 14 + 4*len(tags)
	n = max(n, l3+40+8)
	f := g.bytes(n)
	ethHeader(f, tags, ethIPv6)
	ip := f[l3:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(n-l3-40))
	ip[6] = next
	ip[7] = 64
	return f
}

func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func (g *frameGen) tags() []uint16 {
	switch g.r.IntN(8) {
	case 0:
		return []uint16{ethVLAN}
	case 1:
		return []uint16{ethQinQ, ethVLAN}
	case 2:
		return []uint16{ethVLAN, ethVLAN, ethVLAN} // deeper than the parsers go
	}
	return nil
}

func (g *frameGen) dport() uint16 {
	switch g.r.IntN(4) {
	case 0:
		return 9
	case 1:
		return 53
	}
	return uint16(g.r.Uint32())
}

// valid returns a well-formed frame of a random kind.
func (g *frameGen) valid() []byte {
	tags := g.tags()
	switch g.r.IntN(9) {
	case 0, 1:
		return g.ipv4(g.size(42), tags, protoUDP, 5, g.dport())
	case 2:
		return g.ipv4(g.size(54), tags, protoTCP, 5, g.dport())
	case 3:
		// ICMP echo around xdp_adjust_tail's 400-byte limit.
		sizes := []int{98, 99, 342, 399, 400, 401, 542, 1514}
		n := sizes[g.r.IntN(len(sizes))]
		if g.r.IntN(2) == 0 {
			n = g.size(42)
		}
		return g.ipv4(n, tags, protoICMP, 5, 0)
	case 4:
		return g.ipv4(g.size(60), tags, byte([]int{protoUDP, protoTCP}[g.r.IntN(2)]), 5+g.r.IntN(11), g.dport())
	case 5:
		return g.ipv4(g.size(34), tags, byte(g.r.IntN(256)), 5, 0)
	case 6:
		return g.ipv6(g.size(62), tags, byte([]int{protoUDP, protoTCP, protoICMPv6}[g.r.IntN(3)]))
	case 7:
		f := g.bytes(g.size(42))
		ethHeader(f, tags, ethARP)
		return f
	default:
		f := g.ipv4(g.size(42), tags, protoUDP, 5, g.dport())
		f[14+4*len(tags)] = byte(g.r.IntN(256)) // bogus version/IHL
		return f
	}
}

// next returns the i-th test frame: valid frames, truncated ones, mutated
// ones and random bytes. Every frame has at least 14 bytes.
func (g *frameGen) next() []byte {
	switch g.r.IntN(10) {
	case 0:
		return g.bytes(14 + g.r.IntN(1501))
	case 1:
		f := g.bytes(14 + g.r.IntN(60))
		copy(f[12:], []byte{0x08, 0x00})
		return f
	case 2, 3:
		f := g.valid()
		return f[:14+g.r.IntN(len(f)-13)] // truncated anywhere past Ethernet
	case 4:
		f := g.valid()
		for range 1 + g.r.IntN(3) {
			f[g.r.IntN(len(f))] ^= byte(1 + g.r.IntN(255))
		}
		return f
	default:
		return g.valid()
	}
}
