package maps

import (
	"encoding/binary"
	"math/bits"
)

// jhash and jhash2 are the kernel's include/linux/jhash.h (Bob Jenkins'
// lookup3), which the bloom filter map hashes with: the same bits as the
// kernel's for the same seed.

const jhashInitval = 0xdeadbeef

func jhashMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func jhashFinal(a, b, c uint32) uint32 {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}

// jhash2 hashes len(k)/4 little-endian u32 words (the kernel's u32 array on a
// little-endian machine).
func jhash2(k []byte, initval uint32) uint32 {
	n := uint32(len(k) / 4)
	a := jhashInitval + n<<2 + initval
	b, c := a, a
	w := func(i int) uint32 { return binary.LittleEndian.Uint32(k[4*i:]) }
	for n > 3 {
		a += w(0)
		b += w(1)
		c += w(2)
		a, b, c = jhashMix(a, b, c)
		n -= 3
		k = k[12:]
	}
	switch n {
	case 3:
		c += w(2)
		fallthrough
	case 2:
		b += w(1)
		fallthrough
	case 1:
		a += w(0)
		c = jhashFinal(a, b, c)
	}
	return c
}

// jhash hashes bytes.
func jhash(k []byte, initval uint32) uint32 {
	a := jhashInitval + uint32(len(k)) + initval
	b, c := a, a
	for len(k) > 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = jhashMix(a, b, c)
		k = k[12:]
	}
	if len(k) == 0 {
		return c
	}
	var t [12]byte
	copy(t[:], k)
	a += binary.LittleEndian.Uint32(t[0:])
	b += binary.LittleEndian.Uint32(t[4:])
	c += binary.LittleEndian.Uint32(t[8:])
	return jhashFinal(a, b, c)
}
