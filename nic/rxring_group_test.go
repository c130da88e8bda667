package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// TestRxRingShortPoolWholeGroups: a non-coherent ring that posts whole cache
// lines (fec with 8-byte BDs and a 64-byte line: 8 per line) meets a pool
// with fewer buffers than it wants, and a count that is not a multiple of the
// group. It posts only whole groups, gives the remainder back to the pool at
// once (not leaked, not posted as empty descriptors), counts the shortage,
// and a later Refill posts the next whole group when the pool has one.
func TestRxRingShortPoolWholeGroups(t *testing.T) {
	r, _ := newRing(t, true, 16, 6)
	var posted []int
	post := func(_ []byte, i int, iova uint64) {
		if iova == 0 {
			t.Errorf("descriptor %d posted with no buffer", i)
		}
		posted = append(posted, i)
	}
	if k := r.Refill(16, 4, post); k != 4 || r.Posted != 4 || r.Tail != 4 || len(posted) != 4 {
		t.Fatalf("refill of 4-groups from a pool of 6: %d (Posted %d, Tail %d, %d posts), want 4, 4, 4, 4", k, r.Posted, r.Tail, len(posted))
	}
	if r.AllocFail.Load() != 1 {
		t.Fatalf("AllocFail %d, want 1", r.AllocFail.Load())
	}
	for i, b := range r.Slots {
		if (i < 4) != (b != nil) {
			t.Fatalf("slot %d holds %v after posting 0..3", i, b)
		}
	}
	st := r.Pool().Stats()
	if st.Free != 2 || st.ByOwner[dma.OwnerRx] != 4 {
		t.Fatalf("pool after the refill: %d free, owners %v; want the 2 left over back, 4 posted", st.Free, st.ByOwner)
	}
	// Two frames come back: 4 free buffers now make one whole group.
	r.Take().Free()
	r.Take().Free()
	if k := r.Refill(16, 4, post); k != 4 || r.Posted != 6 || r.Tail != 8 {
		t.Fatalf("second refill: %d (Posted %d, Tail %d), want 4, 6, 8", k, r.Posted, r.Tail)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
}
