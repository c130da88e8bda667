package maps

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
)

// TestHashOfWords: hashOf is, for every key size from 1 to NativeKeyMax+1
// bytes, the finaliser over the first zero-padded little-endian word
// xored with s0, then one round per further word xored in with s1 (what
// the JIT's native lookup computes: the bpf package's refHash is this
// formula too, and its native hash is checked against it).
func TestHashOfWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for ks := 1; ks <= NativeKeyMax+1; ks++ {
		m, err := New(Spec{Type: ebpf.Hash, KeySize: uint32(ks), ValueSize: 4, MaxEntries: 2})
		if err != nil {
			t.Fatal(err)
		}
		h := m.(*Hash)
		for range 20 {
			key := make([]byte, ks)
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			var want uint64
			for i := 0; i*8 < ks; i++ {
				var w [8]byte
				copy(w[:], key[i*8:])
				x := binary.LittleEndian.Uint64(w[:])
				if i == 0 {
					want = fmix64(x ^ h.s0)
				} else {
					want = fmix64(want ^ x ^ h.s1)
				}
			}
			if got := h.hashOf(key); got != want {
				t.Fatalf("key size %d: hashOf %#x, want %#x", ks, got, want)
			}
		}
	}
}
