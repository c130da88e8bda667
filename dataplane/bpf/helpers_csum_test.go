package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// naiveCsum32 is the ones' complement sum of b's little-endian 32-bit words
// and seed, reduced modulo 2^32-1 (0 for the zero class).
func naiveCsum32(b []byte, seed uint32) uint64 {
	s := uint64(seed) % 0xffffffff
	for i := 0; i+4 <= len(b); i += 4 {
		s = (s + uint64(binary.LittleEndian.Uint32(b[i:]))) % 0xffffffff
	}
	return s
}

func TestCsumPartialIsOnesComplementSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 600; n += 4 {
		for trial := range 20 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if trial%4 == 0 {
				b = bytes.Repeat([]byte{0xff}, n)
			}
			seed := rng.Uint32()
			if trial%5 == 0 {
				seed = 0
			}
			got := csumPartial(b, seed)
			if uint64(got)%0xffffffff != naiveCsum32(b, seed) {
				t.Fatalf("len %d seed %#x: csum_partial %#x, not congruent to the sum %#x", n, seed, got, naiveCsum32(b, seed))
			}
			allZero := seed == 0 && !bytes.ContainsFunc(b, func(r rune) bool { return r != 0 })
			if (got == 0) != allZero {
				t.Fatalf("len %d seed %#x: csum_partial %#x: 0 only for all-zero input (x86 adds with carry)", n, seed, got)
			}
		}
	}
	// The representative of zero: all ones, when anything was added.
	if got := csumPartial(bytes.Repeat([]byte{0xff}, 8), 0); got != 0xffffffff {
		t.Errorf("csum_partial(ff*8) = %#x, want 0xffffffff", got)
	}
	if got := csumPartial(make([]byte, 64), 0); got != 0 {
		t.Errorf("csum_partial(0*64) = %#x, want 0", got)
	}
}

func TestCsumDiffOldSemantics(t *testing.T) {
	old := csumDiffFolded
	defer func() { csumDiffFolded = old }()
	csumDiffFolded = false
	var scratch [csumDiffMax]byte
	from := []byte{1, 2, 3, 4}
	to := []byte{5, 6, 7, 8}
	// Scratch = ~from, to: 0xfbfcfdfe + 0x08070605 = 0x04040404 after the
	// end-around carry; unfolded.
	if got := csumDiffValue(from, to, 0, &scratch); got != 0x04040404 {
		t.Errorf("old csum_diff = %#x, want 0x04040404", got)
	}
	// Equal from and to: all ones (the diff buffer is not all zero).
	if got := csumDiffValue(to, to, 0, &scratch); got != 0xffffffff {
		t.Errorf("old csum_diff(x, x) = %#x, want 0xffffffff", got)
	}
	csumDiffFolded = true
	if got := csumDiffValue(from, to, 0, &scratch); got != 0x0808 {
		t.Errorf("6.13+ csum_diff = %#x, want 0x0808", got)
	}
	if got := csumDiffValue(nil, nil, 0xffffffff, &scratch); got != 0xffff {
		t.Errorf("6.13+ csum_diff(seed only) = %#x, want the folded seed 0xffff", got)
	}
}

func TestParseRelease(t *testing.T) {
	for s, want := range map[string][2]int{"6.18.44-fc-v669": {6, 18}, "5.10.0-28-amd64": {5, 10}, "6.1": {6, 1}, "6.13rc1": {6, 13}} {
		maj, min, ok := parseRelease(s)
		if !ok || maj != want[0] || min != want[1] {
			t.Errorf("parseRelease(%q) = %d %d %v", s, maj, min, ok)
		}
	}
	if _, _, ok := parseRelease("garbage"); ok {
		t.Error("parseRelease accepted garbage")
	}
}
