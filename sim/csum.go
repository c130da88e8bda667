package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Checksum insertion as a NIC's TX checksum engine does it on the wire. The
// models call these when a descriptor asks for a checksum; a frame that did
// not ask is never touched. Two kinds of engine exist:
//
//   - offset-driven (the kernel's CHECKSUM_PARTIAL, igb's context descriptor):
//     the one's-complement sum from a start offset to the end of the frame,
//     the field itself included (the sender put the pseudo-header's sum in
//     it), stored complemented at start+offset;
//   - parsing (dwmac's CIC = 3, fec's PINS/IINS): the engine finds the IPv4 or
//     IPv6 header and the TCP or UDP header itself, computes the pseudo-header
//     and the whole L4 checksum regardless of what the field held, and can
//     also insert the IPv4 header checksum.

// ErrCsum is wrapped by InsertPartial and InsertFull when the frame cannot be
// checksummed as asked; the models turn it into a fault.
var ErrCsum = errors.New("checksum insertion")

// OnesSum adds b to s as big-endian 16-bit words (an odd last byte padded
// with zero), without folding: the Internet checksum's sum (RFC 1071), for
// the models' checksum engines and the tools that check their output.
func OnesSum(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// Fold reduces a sum to 16 bits of one's complement.
func Fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// InsertPartial stores at start+offset the complement of the one's-complement
// sum of f[start:]. A UDP checksum of zero is not special here: hardware of
// this kind does not know the protocol.
func InsertPartial(f []byte, start, offset int) error {
	if start < 0 || offset < 0 || start+offset+2 > len(f) {
		return fmt.Errorf("%w: field at %d+%d beyond the %d-byte frame", ErrCsum, start, offset, len(f))
	}
	binary.BigEndian.PutUint16(f[start+offset:], ^Fold(OnesSum(0, f[start:])))
	return nil
}

// InsertFull parses f (Ethernet with at most one VLAN tag, IPv4 or IPv6
// without extension headers, TCP or UDP) and inserts the full L4 checksum,
// pseudo-header included, and with ipHeader the IPv4 header checksum too. A
// UDP checksum that comes out zero is sent as 0xffff (RFC 768). The L4
// length is what the IP header says, not the frame's (the rest is padding).
func InsertFull(f []byte, ipHeader bool) error {
	l3, et, err := ethType(f)
	if err != nil {
		return err
	}
	var pseudo uint32
	var l4, l4len int
	var proto byte
	switch et {
	case 0x0800:
		ihl := int(f[l3]&15) * 4
		if len(f) < l3+20 || f[l3]>>4 != 4 || ihl < 20 || len(f) < l3+ihl {
			return fmt.Errorf("%w: malformed IPv4 header", ErrCsum)
		}
		total := int(binary.BigEndian.Uint16(f[l3+2:]))
		if total < ihl || l3+total > len(f) {
			return fmt.Errorf("%w: IPv4 total length %d does not fit the frame", ErrCsum, total)
		}
		if ipHeader {
			binary.BigEndian.PutUint16(f[l3+10:], 0)
			binary.BigEndian.PutUint16(f[l3+10:], ^Fold(OnesSum(0, f[l3:l3+ihl])))
		}
		proto, l4, l4len = f[l3+9], l3+ihl, total-ihl
		pseudo = OnesSum(0, f[l3+12:l3+20])
	case 0x86dd:
		if len(f) < l3+40 || f[l3]>>4 != 6 {
			return fmt.Errorf("%w: malformed IPv6 header", ErrCsum)
		}
		l4len = int(binary.BigEndian.Uint16(f[l3+4:]))
		proto, l4 = f[l3+6], l3+40
		if l4+l4len > len(f) {
			return fmt.Errorf("%w: IPv6 payload length %d does not fit the frame", ErrCsum, l4len)
		}
		pseudo = OnesSum(0, f[l3+8:l3+40])
	default:
		return fmt.Errorf("%w: ethertype %#04x is not IP", ErrCsum, et)
	}
	field := map[byte]int{6: 16, 17: 6}[proto]
	if field == 0 {
		return fmt.Errorf("%w: IP protocol %d is neither TCP nor UDP", ErrCsum, proto)
	}
	if l4len < field+2 {
		return fmt.Errorf("%w: L4 length %d too short for its header", ErrCsum, l4len)
	}
	pseudo += uint32(proto) + uint32(l4len)
	seg := f[l4 : l4+l4len]
	binary.BigEndian.PutUint16(seg[field:], 0)
	c := ^Fold(OnesSum(pseudo, seg))
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(seg[field:], c)
	return nil
}

// ethType returns where the L3 header starts and its ethertype.
func ethType(f []byte) (int, uint16, error) {
	if len(f) < 14 {
		return 0, 0, fmt.Errorf("%w: %d-byte frame", ErrCsum, len(f))
	}
	et := binary.BigEndian.Uint16(f[12:])
	if et == 0x8100 || et == 0x88a8 {
		if len(f) < 18 {
			return 0, 0, fmt.Errorf("%w: truncated VLAN tag", ErrCsum)
		}
		return 18, binary.BigEndian.Uint16(f[16:]), nil
	}
	return 14, et, nil
}
