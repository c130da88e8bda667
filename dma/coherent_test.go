package dma_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim"
)

type probeAlloc struct {
	dma.Allocator
	coherent bool
}

func (p probeAlloc) Coherent() bool { return p.coherent }

// TestIsCoherent: Sync is skipped only for allocators that say their memory is
// coherent; one that says nothing is synced.
func TestIsCoherent(t *testing.T) {
	cases := []struct {
		name string
		a    dma.Allocator
		want bool
	}{
		{"Coherent() true", probeAlloc{coherent: true}, true},
		{"Coherent() false", probeAlloc{coherent: false}, false},
		{"sim coherent", sim.NewMemory(sim.MemoryConfig{}, nil), true},
		{"sim non-coherent", sim.NewMemory(sim.MemoryConfig{NonCoherent: true}, nil), false},
		{"no probe", struct{ dma.Allocator }{}, false},
	}
	for _, c := range cases {
		if got := dma.IsCoherent(c.a); got != c.want {
			t.Errorf("%s: IsCoherent = %v, want %v", c.name, got, c.want)
		}
	}
}
