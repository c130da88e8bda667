package dataplane

import "testing"

// TestWorkerRingWraps: push and pop keep the order of frames across the
// ring's end, take no more than the limit or the free slots, and count
// what they refuse.
func TestWorkerRingWraps(t *testing.T) {
	w := &worker{ring: make([]cpuEntry, 7), wake: make(chan struct{}, 1), batch: make([]cpuEntry, 0, 5)}
	next, want := uint32(0), uint32(0)
	ents := func(n int) []cpuEntry {
		e := make([]cpuEntry, n)
		for i := range e {
			e[i].prog = next + uint32(i)
		}
		return e
	}
	refused := 0
	for round := 0; round < 40; round++ {
		n, limit := 1+round%6, []int{0, 3, 7, 100}[round%4]
		free := len(w.ring) - w.n
		if limit > 0 && limit < len(w.ring) {
			free = max(limit-w.n, 0)
		}
		took := w.push(ents(n), limit)
		if took != min(n, free) {
			t.Fatalf("round %d: push of %d with %d in the ring (limit %d) took %d, want %d", round, n, w.n-took, limit, took, min(n, free))
		}
		next += uint32(took)
		refused += n - took
		w.pop()
		for _, e := range w.batch {
			if e.prog != want {
				t.Fatalf("round %d: popped frame %d, want %d", round, e.prog, want)
			}
			want++
		}
	}
	if got := w.ringFull.Load(); got != uint64(refused) {
		t.Errorf("ring_full %d, want %d", got, refused)
	}
	for w.n > 0 {
		w.pop()
		for _, e := range w.batch {
			if e.prog != want {
				t.Fatalf("drain: frame %d, want %d", e.prog, want)
			}
			want++
		}
	}
	if want != next {
		t.Errorf("popped %d frames, pushed %d", want, next)
	}
}
