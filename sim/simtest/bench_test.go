package simtest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// TestRxRepost: every step re-arms the next descriptor, wrapping at N; the
// tail moves once per burst, to the descriptor just re-armed.
func TestRxRepost(t *testing.T) {
	var posted, tails []int
	r := &simtest.RxRepost{N: 5, Burst: 3,
		Post: func(i int) { posted = append(posted, i) },
		Tail: func(i int) { tails = append(tails, i) }}
	for range 7 {
		r.Step()
	}
	if want := []int{0, 1, 2, 3, 4, 0, 1}; !slices.Equal(posted, want) {
		t.Errorf("posted %v, want %v", posted, want)
	}
	if want := []int{2, 0}; !slices.Equal(tails, want) {
		t.Errorf("tails %v, want %v", tails, want)
	}
	tails = nil
	d := &simtest.RxRepost{N: 64, Post: func(int) {}, Tail: func(i int) { tails = append(tails, i) }}
	for range 2*simtest.DefaultBurst + 1 {
		d.Step()
	}
	if want := []int{simtest.DefaultBurst - 1, 2*simtest.DefaultBurst - 1}; !slices.Equal(tails, want) {
		t.Errorf("default burst: tails %v, want %v", tails, want)
	}
}

// TestTxBurst: a burst puts Burst descriptors from the tail on, wrapping at
// N, and kicks once with the tail after them.
func TestTxBurst(t *testing.T) {
	var put, kicks []int
	b := &simtest.TxBurst{N: 4, Burst: 3,
		Put:  func(i int) { put = append(put, i) },
		Kick: func(tail int) { kicks = append(kicks, tail) }}
	b.Run()
	b.Run()
	if want := []int{0, 1, 2, 3, 0, 1}; !slices.Equal(put, want) {
		t.Errorf("put %v, want %v", put, want)
	}
	if want := []int{3, 2}; !slices.Equal(kicks, want) {
		t.Errorf("kicks %v, want %v", kicks, want)
	}
	if b.Sent != 6 {
		t.Errorf("Sent = %d, want 6", b.Sent)
	}
	d := &simtest.TxBurst{N: 64, Put: func(int) {}, Kick: func(int) {}}
	d.Run()
	if d.Sent != simtest.DefaultBurst {
		t.Errorf("default burst sent %d, want %d", d.Sent, simtest.DefaultBurst)
	}
}

// TestZeroAllocFrames: paths that allocate nothing and a model that sent
// every frame pass; a dropped frame, an allocation or a frame the model did
// not send fail, each saying so.
func TestZeroAllocFrames(t *testing.T) {
	newTx := func() *simtest.TxBurst { return &simtest.TxBurst{N: 64, Put: func(int) {}, Kick: func(int) {}} }
	tx := newTx()
	simtest.ZeroAllocFrames(t, func() bool { return true }, tx, func() uint64 { return uint64(tx.Sent) })
	if tx.Sent < 201*simtest.DefaultBurst {
		t.Fatalf("sent %d frames, want the first burst and 200 more at least", tx.Sent)
	}
	var sink []byte
	for _, c := range []struct {
		name, want string
		rx         func() bool
		lose       uint64
	}{
		{"dropped", "frame dropped", func() bool { return false }, 0},
		{"allocates", "receive allocates", func() bool { sink = make([]byte, 64); return true }, 0},
		{"lost", "the model sent", func() bool { return true }, 1},
	} {
		tx := newTx()
		msg := nictest.Fails(t, func(tb testing.TB) {
			simtest.ZeroAllocFrames(tb, c.rx, tx, func() uint64 { return uint64(tx.Sent) - c.lose })
		})
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: failure %q, want %q", c.name, msg, c.want)
		}
	}
	_ = sink
}
