package nic

import (
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

type lineAlloc struct {
	dma.Allocator
	line int
}

func (a lineAlloc) CacheLine() int { return a.line }

type ncAlloc struct {
	dma.Allocator
	nc bool
}

func (a ncAlloc) NonCoherent() bool { return a.nc }

// TestRingMemoryChecks: an allocator is non-coherent when it says so or has a
// cache line; frame sizes must be whole lines of such an allocator.
func TestRingMemoryChecks(t *testing.T) {
	for _, tc := range []struct {
		a    dma.Allocator
		want bool
	}{{ncAlloc{nc: true}, true}, {ncAlloc{}, false}, {lineAlloc{line: 64}, true}, {lineAlloc{}, false}, {dma.Allocator(nil), false}} {
		if got := AllocatorNonCoherent(tc.a); got != tc.want {
			t.Errorf("AllocatorNonCoherent(%T %+v) = %v, want %v", tc.a, tc.a, got, tc.want)
		}
	}
	if err := CheckBufferLines(lineAlloc{line: 64}, 2048); err != nil {
		t.Errorf("2048 on 64-byte lines: %v", err)
	}
	if err := CheckBufferLines(lineAlloc{line: 64}, 2000); err == nil || !strings.Contains(err.Error(), "64-byte cache line") {
		t.Errorf("2000 on 64-byte lines: got %v, want a refusal", err)
	}
	if err := CheckBufferLines(ncAlloc{nc: true}, 2000); err != nil {
		t.Errorf("no cache line known: got %v, want nil", err)
	}
}
