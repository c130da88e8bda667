package nictest

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
)

// RandFrame is a unicast frame to dst of n bytes (at least 7) with a random
// payload and a locally administered source address.
func RandFrame(rng *rand.Rand, dst net.HardwareAddr, n int) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	copy(f, dst)
	f[6] = 0x02 // locally administered unicast source
	return f
}

// PseudoSum is the folded, uncomplemented sum of frame f's TCP or UDP
// pseudo-header (RFC 793, RFC 768; RFC 8200 8.1 for IPv6): what a
// CHECKSUM_PARTIAL sender leaves in the L4 checksum field. l3 and l4 are the
// IP and L4 headers' offsets, proto the L4 protocol; the L4 length is the
// rest of f.
func PseudoSum(f []byte, v6 bool, l3, l4 int, proto byte) uint16 {
	var s uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
	}
	if v6 {
		add(f[l3+8 : l3+40]) // source and destination addresses
	} else {
		add(f[l3+12 : l3+20])
	}
	s += uint32(proto) + uint32(len(f)-l4)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
