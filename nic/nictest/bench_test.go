package nictest

import (
	"flag"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// sinkTx takes up to room buffers per Send and gives them back to their pools
// at Reclaim.
type sinkTx struct {
	room     int
	held     []*dma.Buf
	reclaims int
}

func (q *sinkTx) Send(bufs []*dma.Buf) int {
	k := min(len(bufs), q.room)
	for _, b := range bufs[:k] {
		b.SetOwner(dma.OwnerTx)
	}
	q.held = append(q.held, bufs[:k]...)
	return k
}
func (q *sinkTx) Reclaim() int {
	q.reclaims++
	n := len(q.held)
	for _, b := range q.held {
		b.Free()
	}
	q.held = q.held[:0]
	return n
}
func (q *sinkTx) Free() int { return q.room }

func TestBounce(t *testing.T) {
	pool, err := dma.NewPool(&FarAllocator{}, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rx := &fakeRx{pool: pool, pending: []*dma.Buf{pool.Get(), pool.Get(), pool.Get()}}
	tx := &sinkTx{room: 2}
	n, k := Bounce(rx, tx, make([]*dma.Buf, 4))
	if n != 3 || k != 2 || len(tx.held) != 2 {
		t.Fatalf("Bounce = %d, %d with %d held; want 3, 2, 2", n, k, len(tx.held))
	}
	if free := pool.Stats().Free; free != 6 {
		t.Fatalf("%d buffers free, want 6 (the one TX refused went back)", free)
	}
}

func TestBenchRxTx(t *testing.T) {
	pool, err := dma.NewPool(&FarAllocator{}, 64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	// A fixed, short run: the default benchtime would take seconds.
	if f := flag.Lookup("test.benchtime"); f != nil {
		old := f.Value.String()
		if err := f.Value.Set("1000x"); err != nil {
			t.Fatal(err)
		}
		defer f.Value.Set(old)
	}
	const burst = 8
	var c RxTxCounts
	injects, completes := 0, 0
	res := testing.Benchmark(func(b *testing.B) {
		rx := &fakeRx{pool: pool, pending: make([]*dma.Buf, 0, burst)}
		tx := &sinkTx{room: burst}
		injects, completes = 0, 0
		c = BenchRxTx(b, rx, tx, burst, func() {
			injects++
			for i := 0; i < burst; i++ {
				rx.pending = append(rx.pending, pool.Get())
			}
		}, func() { completes++ })
		if tx.reclaims != injects {
			b.Fatalf("%d reclaims for %d bursts", tx.reclaims, injects)
		}
	})
	if res.N == 0 || c.Packets != res.N {
		t.Fatalf("counted %d packets in a run of %d", c.Packets, res.N)
	}
	bursts := (c.Packets + burst - 1) / burst
	if injects != bursts || completes != bursts || c.Received != bursts*burst || c.Sent != c.Received {
		t.Fatalf("%d packets: %d injects, %d completes, %d received, %d sent", c.Packets, injects, completes, c.Received, c.Sent)
	}
	if pool.Stats().Free != 64 {
		t.Fatalf("%d buffers back in the pool, want 64", pool.Stats().Free)
	}
	if got := c.PerPacket(float64(c.Packets)); got != 1 {
		t.Fatalf("PerPacket(Packets) = %v", got)
	}
}

func TestTimedAddsEachCall(t *testing.T) {
	var total time.Duration
	calls := 0
	f := Timed(&total, func() {
		calls++
		time.Sleep(2 * time.Millisecond)
	})
	f()
	f()
	if calls != 2 {
		t.Fatalf("wrapped function ran %d times, want 2", calls)
	}
	if total < 4*time.Millisecond {
		t.Fatalf("Timed recorded %v for two calls of at least 2ms", total)
	}
}
