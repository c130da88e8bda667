package traffic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// Frame sizes, without the 4-byte FCS (QEMU's -netdev dgram carries no FCS).
const (
	MinFrameLen = 60   // shortest Ethernet frame without FCS
	MaxFrameLen = 1514 // longest untagged frame without FCS (1500-byte MTU)
)

// EtherTypes. Both are from the IEEE 802 "local experimental" range.
const (
	EtherTypeControl = 0x88B5 // control messages (see control.go)
	EtherTypeData    = 0x88B6 // sequence frames made by Frame
	EtherTypeIPv4    = 0x0800 // flow frames made by FlowFrame
)

// Layout of a data frame (all multi-byte fields big-endian, like the network).
const (
	offDst     = 0
	offSrc     = 6
	offType    = 12
	offMagic   = 14 // "XNDT"
	offSeed    = 18 // int64 stream seed
	offIndex   = 26 // uint32 position in the stream
	offLen     = 30 // uint16 total frame length
	offPayload = 32 // pseudo-random bytes from (seed, index)
)

var dataMagic = [4]byte{'X', 'N', 'D', 'T'}

// ErrNotData reports a frame that is not a data frame made by Frame.
var ErrNotData = errors.New("traffic: not a data frame")

// splitmix64's output function: a bijective 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

const golden = 0x9e3779b97f4a7c15

func frameKey(seed int64, i int) uint64 {
	return mix64(uint64(seed)*golden ^ mix64(uint64(uint32(i))+0x632be59bd9b4e019))
}

// FrameLen is the length of frame i of stream seed: uniformly spread over
// MinFrameLen..MaxFrameLen.
func FrameLen(seed int64, i int) int {
	return MinFrameLen + int(frameKey(seed, i)%uint64(MaxFrameLen-MinFrameLen+1))
}

// payloadWord returns the k-th 8-byte word of the payload of frame (seed, i).
// The payload is a pure function of (seed, i), so a checker can regenerate it
// on the fly without a buffer.
func payloadWord(key uint64, k int) uint64 {
	return mix64(key ^ uint64(k+1)*golden)
}

// Frame returns frame i (0 <= i < 2^32) of the deterministic stream seed,
// addressed from src to dst. Its length is FrameLen(seed, i); it carries the
// seed, i and its length after the Ethernet header, then pseudo-random bytes.
func Frame(seed int64, i int, dst, src net.HardwareAddr) []byte {
	return AppendFrame(make([]byte, 0, FrameLen(seed, i)), seed, i, dst, src)
}

// AppendFrame appends Frame(seed, i, dst, src) to b and returns the result. It
// does not allocate when b has room.
func AppendFrame(b []byte, seed int64, i int, dst, src net.HardwareAddr) []byte {
	n := FrameLen(seed, i)
	start := len(b)
	b = grow(b, n)
	f := b[start:]
	copy(f[offDst:offDst+6], dst)
	copy(f[offSrc:offSrc+6], src)
	binary.BigEndian.PutUint16(f[offType:], EtherTypeData)
	copy(f[offMagic:], dataMagic[:])
	binary.BigEndian.PutUint64(f[offSeed:], uint64(seed))
	binary.BigEndian.PutUint32(f[offIndex:], uint32(i))
	binary.BigEndian.PutUint16(f[offLen:], uint16(n))
	key := frameKey(seed, i)
	p := f[offPayload:]
	var w [8]byte
	for k := 0; len(p) > 0; k++ {
		binary.LittleEndian.PutUint64(w[:], payloadWord(key, k))
		p = p[copy(p, w[:]):]
	}
	return b
}

// grow extends b by n bytes (contents of the new bytes unspecified).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// ParseData reads the seed and index a data frame carries. It reports
// ErrNotData for anything else (including truncated frames).
func ParseData(f []byte) (seed int64, i int, err error) {
	if len(f) < offPayload || binary.BigEndian.Uint16(f[offType:]) != EtherTypeData ||
		!bytes.Equal(f[offMagic:offMagic+4], dataMagic[:]) {
		return 0, 0, ErrNotData
	}
	return int64(binary.BigEndian.Uint64(f[offSeed:])), int(binary.BigEndian.Uint32(f[offIndex:])), nil
}

// CheckFrame reports whether f is byte for byte Frame(seed, i, dst, src). The
// error says what differs first. It does not allocate when f matches.
func CheckFrame(f []byte, seed int64, i int, dst, src net.HardwareAddr) error {
	want := FrameLen(seed, i)
	if len(f) != want {
		hint := ""
		if len(f) == want+4 {
			hint = " (4 extra bytes: the FCS was not stripped; igb needs RCTL.SECRC)"
		}
		return fmt.Errorf("traffic: frame %d of seed %d is %d bytes, want %d%s", i, seed, len(f), want, hint)
	}
	if !bytes.Equal(f[offDst:offDst+6], dst) || !bytes.Equal(f[offSrc:offSrc+6], src) {
		return fmt.Errorf("traffic: frame %d of seed %d addressed %s -> %s, want %s -> %s",
			i, seed, net.HardwareAddr(f[offSrc:offSrc+6]), net.HardwareAddr(f[offDst:offDst+6]), src, dst)
	}
	gotSeed, gotI, err := ParseData(f)
	if err != nil {
		return fmt.Errorf("traffic: frame %d of seed %d: header corrupt: %w", i, seed, err)
	}
	if gotSeed != seed || gotI != i || int(binary.BigEndian.Uint16(f[offLen:])) != want {
		return fmt.Errorf("traffic: got frame %d of seed %d, want frame %d of seed %d", gotI, gotSeed, i, seed)
	}
	key := frameKey(seed, i)
	p := f[offPayload:]
	for k := 0; len(p) > 0; k++ {
		w := payloadWord(key, k)
		n := min(8, len(p))
		for j := 0; j < n; j++ {
			if p[j] != byte(w>>(8*j)) {
				off := offPayload + 8*k + j
				return fmt.Errorf("traffic: frame %d of seed %d differs at byte %d of %d: %#02x, want %#02x",
					i, seed, off, want, p[j], byte(w>>(8*j)))
			}
		}
		p = p[n:]
	}
	return nil
}
