package traffic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// Echo frames are UDP/IPv4 frames of one flow (10.3.0.1:7000 -> 10.3.0.2:7001)
// that the peer sends for a program under test to bounce back (an XDP MAC swap)
// or to swallow (an XDP drop). Being real UDP/IPv4, they are what XDP example
// programs parse and count. Layout after the UDP header (all big-endian):
// "XNEC", the stream seed (int64), the frame's index (uint32) and its length
// (uint16), then pseudo-random bytes, a pure function of (seed, index). The
// IPv4 identification is the index's low 16 bits; the IPv4 header checksum is
// right; the UDP checksum is 0 (none, allowed for IPv4).
const (
	EchoSrcPort = 7000
	EchoDstPort = 7001

	offEchoPayload = offUDP + 8          // 42
	offEchoMagic   = offEchoPayload      // "XNEC"
	offEchoSeed    = offEchoPayload + 4  // int64
	offEchoIndex   = offEchoPayload + 12 // uint32
	offEchoLen     = offEchoPayload + 16 // uint16
	offEchoRand    = offEchoPayload + 18 // 60: pseudo-random bytes to the end
	echoKeySalt    = 0x5bd1e9955bd1e995  // keeps echo payloads apart from data payloads
	echoMinLen     = offEchoRand         // 60 = MinFrameLen: the header fits any frame
)

var (
	echoMagic = [4]byte{'X', 'N', 'E', 'C'}
	// EchoSrcIP and EchoDstIP are the flow's addresses.
	EchoSrcIP = [4]byte{10, 3, 0, 1}
	EchoDstIP = [4]byte{10, 3, 0, 2}
)

// ErrNotEcho reports a frame that is not an echo frame made by EchoFrame.
var ErrNotEcho = errors.New("traffic: not an echo frame")

// EchoLen is the length of frame i of echo stream seed: size when size > 0
// (clamped to MinFrameLen..MaxFrameLen), else FrameLen(seed, i), pseudo-random
// over the whole range.
func EchoLen(seed int64, i, size int) int {
	if size > 0 {
		return min(max(size, MinFrameLen), MaxFrameLen)
	}
	return FrameLen(seed, i)
}

// AppendEchoFrame appends echo frame i of stream seed (length EchoLen(seed, i,
// size)) from src to dst to b. It does not allocate when b has room.
func AppendEchoFrame(b []byte, seed int64, i, size int, dst, src net.HardwareAddr) []byte {
	n := EchoLen(seed, i, size)
	start := len(b)
	b = grow(b, n)
	f := b[start:]
	clear(f[:offEchoRand])
	copy(f[offDst:offDst+6], dst)
	copy(f[offSrc:offSrc+6], src)
	binary.BigEndian.PutUint16(f[offType:], EtherTypeIPv4)
	ip := f[offIPv4 : offIPv4+20]
	ip[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(ip[2:], uint16(n-offIPv4))
	binary.BigEndian.PutUint16(ip[4:], uint16(i))
	ip[6] = 0x40 // don't fragment
	ip[8] = 64   // TTL
	ip[9] = 17   // UDP
	copy(ip[12:16], EchoSrcIP[:])
	copy(ip[16:20], EchoDstIP[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := f[offUDP:]
	binary.BigEndian.PutUint16(udp[0:], EchoSrcPort)
	binary.BigEndian.PutUint16(udp[2:], EchoDstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-offUDP))
	copy(f[offEchoMagic:], echoMagic[:])
	binary.BigEndian.PutUint64(f[offEchoSeed:], uint64(seed))
	binary.BigEndian.PutUint32(f[offEchoIndex:], uint32(i))
	binary.BigEndian.PutUint16(f[offEchoLen:], uint16(n))
	key := frameKey(seed, i) ^ echoKeySalt
	p := f[offEchoRand:]
	var w [8]byte
	for k := 0; len(p) > 0; k++ {
		binary.LittleEndian.PutUint64(w[:], payloadWord(key, k))
		p = p[copy(p, w[:]):]
	}
	return b
}

// EchoFrame returns a new echo frame; see AppendEchoFrame.
func EchoFrame(seed int64, i, size int, dst, src net.HardwareAddr) []byte {
	return AppendEchoFrame(make([]byte, 0, EchoLen(seed, i, size)), seed, i, size, dst, src)
}

// ParseEcho returns the seed and index an echo frame carries, checking its
// magic, IPv4 header checksum and flow.
func ParseEcho(f []byte) (seed int64, i int, err error) {
	if len(f) < echoMinLen || binary.BigEndian.Uint16(f[offType:]) != EtherTypeIPv4 ||
		f[offIPv4] != 0x45 || f[offIPv4+9] != 17 ||
		!bytes.Equal(f[offEchoMagic:offEchoMagic+4], echoMagic[:]) ||
		binary.BigEndian.Uint16(f[offUDP:]) != EchoSrcPort || binary.BigEndian.Uint16(f[offUDP+2:]) != EchoDstPort ||
		ipChecksum(f[offIPv4:offIPv4+20]) != 0 {
		return 0, 0, ErrNotEcho
	}
	return int64(binary.BigEndian.Uint64(f[offEchoSeed:])), int(binary.BigEndian.Uint32(f[offEchoIndex:])), nil
}

// CheckEcho reports whether f is byte for byte EchoFrame(seed, i, size, dst,
// src); the error says what differs first. A MAC-swapping program turns a frame
// sent from A to B into one from B to A: check it with the addresses swapped.
// It does not allocate when f matches.
func CheckEcho(f []byte, seed int64, i, size int, dst, src net.HardwareAddr) error {
	var want [MaxFrameLen]byte
	w := AppendEchoFrame(want[:0], seed, i, size, dst, src)
	if len(f) != len(w) {
		return fmt.Errorf("traffic: echo frame %d of seed %d is %d bytes, want %d", i, seed, len(f), len(w))
	}
	if !bytes.Equal(f[offDst:offDst+6], w[offDst:offDst+6]) || !bytes.Equal(f[offSrc:offSrc+6], w[offSrc:offSrc+6]) {
		return fmt.Errorf("traffic: echo frame %d of seed %d addressed %s -> %s, want %s -> %s",
			i, seed, net.HardwareAddr(f[offSrc:offSrc+6]), net.HardwareAddr(f[offDst:offDst+6]), src, dst)
	}
	for k := range w {
		if f[k] != w[k] {
			return fmt.Errorf("traffic: echo frame %d of seed %d differs at byte %d of %d: %#02x, want %#02x",
				i, seed, k, len(w), f[k], w[k])
		}
	}
	return nil
}
