package bpf

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// a64DecodeBitMasks is DecodeBitMasks of the Arm ARM's shared pseudocode
// (the immediate of the logical instructions), for regsize 64 or 32: the
// value of (N, immr, imms), ok false for a reserved encoding.
func a64DecodeBitMasks(n, immr, imms uint32, regsize int) (uint64, bool) {
	combined := n<<6 | (^imms & 0x3f)
	if combined == 0 {
		return 0, false
	}
	length := bits.Len32(combined) - 1
	if length < 1 || (regsize == 32 && n != 0) {
		return 0, false
	}
	levels := uint32(1)<<length - 1
	s, r := imms&levels, immr&levels
	if s == levels {
		return 0, false
	}
	e := uint(1) << length
	welem := uint64(1)<<(s+1) - 1
	elem := welem
	if r != 0 {
		elem = (welem>>r | welem<<(e-uint(r))) & (uint64(1)<<e - 1)
		if e == 64 {
			elem = bits.RotateLeft64(welem, -int(r))
		}
	}
	var v uint64
	for i := uint(0); i < uint(regsize); i += e {
		v |= elem << i
	}
	return v, true
}

// TestA64LogicalImm holds a64LogicalImm to the architecture's decoder:
// every value each valid encoding of the 64-bit and 32-bit forms stands
// for encodes to an encoding of that value, and values of no encoding
// (random ones, 0, all ones) are refused.
func TestA64LogicalImm(t *testing.T) {
	for _, size := range []int{64, 32} {
		is64 := size == 64
		valid := map[uint64]bool{}
		for n := uint32(0); n < 2; n++ {
			for immr := uint32(0); immr < 64; immr++ {
				for imms := uint32(0); imms < 64; imms++ {
					v, ok := a64DecodeBitMasks(n, immr, imms, size)
					if !ok {
						continue
					}
					valid[v] = true
					gn, gr, gs, gok := a64LogicalImm(v, is64)
					if !gok {
						t.Fatalf("%d-bit %#x (N %d immr %d imms %d): refused", size, v, n, immr, imms)
					}
					back, ok := a64DecodeBitMasks(gn>>22, gr, gs, size)
					if !ok || back != v {
						t.Fatalf("%d-bit %#x: encoded as N %d immr %d imms %d, which is %#x", size, v, gn>>22, gr, gs, back)
					}
				}
			}
		}
		if want := map[int]int{64: 5334, 32: 1302}[size]; len(valid) != want {
			t.Errorf("%d-bit: %d values, want %d", size, len(valid), want)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, v := range append([]uint64{0, ^uint64(0), 0x5, 0xffff0001}, func() []uint64 {
			r := make([]uint64, 20000)
			for i := range r {
				r[i] = rng.Uint64()
			}
			return r
		}()...) {
			if !is64 {
				v &= 0xffffffff
			}
			if _, _, _, ok := a64LogicalImm(v, is64); ok != valid[v] {
				t.Fatalf("%d-bit %#x: encodable %v, want %v", size, v, ok, valid[v])
			}
		}
	}
}
