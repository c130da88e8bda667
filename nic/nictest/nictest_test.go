package nictest

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// fakePort is a nic.Port whose RX queues hand out what is queued on them and
// whose TX queues complete one descriptor per Reclaim.
type fakePort struct {
	rx    []*fakeRx
	tx    []*fakeTx
	stats []nic.Counter
}

type fakeRx struct {
	pool    *dma.Pool
	pending []*dma.Buf
}

func (q *fakeRx) Recv(bufs []*dma.Buf) int {
	n := copy(bufs, q.pending)
	for _, b := range bufs[:n] {
		b.SetOwner(dma.OwnerApp)
	}
	q.pending = q.pending[n:]
	return n
}
func (q *fakeRx) Pool() *dma.Pool { return q.pool }
func (q *fakeRx) IRQ() nic.IRQ    { return nil }
func (q *fakeRx) ArmIRQ()         {}

type fakeTx struct{ n, inflight int }

func (q *fakeTx) Send(bufs []*dma.Buf) int { return 0 }
func (q *fakeTx) Reclaim() int {
	if q.inflight > 0 {
		q.inflight--
		return 1
	}
	return 0
}
func (q *fakeTx) Free() int { return q.n - 1 - q.inflight }

func (p *fakePort) Name() string          { return "fake" }
func (p *fakePort) MAC() net.HardwareAddr { return nil }
func (p *fakePort) Link() nic.LinkState   { return nic.LinkState{} }
func (p *fakePort) WaitLink(time.Duration) (nic.LinkState, error) {
	return nic.LinkState{}, nic.ErrLinkDown
}
func (p *fakePort) NumQueues() int            { return len(p.rx) }
func (p *fakePort) RxQueue(i int) nic.RxQueue { return p.rx[i] }
func (p *fakePort) TxQueue(i int) nic.TxQueue { return p.tx[i] }
func (p *fakePort) Stats() []nic.Counter      { return p.stats }
func (p *fakePort) SetPromisc(bool) error     { return nil }
func (p *fakePort) Close() error              { return nil }

func TestFarAllocator(t *testing.T) {
	var a FarAllocator
	r1, err := a.Alloc(100, 64)
	if err != nil || len(r1.CPU) != 100 || r1.IOVA != 1<<40 {
		t.Fatalf("first region %#x len %d, %v", r1.IOVA, len(r1.CPU), err)
	}
	r2, _ := a.Alloc(10, 64)
	if r2.IOVA != 1<<40+4096 {
		t.Fatalf("second region at %#x, want the next page", r2.IOVA)
	}
	if err := a.Check(r1.IOVA, 4); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("Check = %v, want ErrNotMapped", err)
	}
	if _, err := dma.NewPool(&a, 4, 2048); err != nil {
		t.Fatalf("a pool on the far allocator: %v", err)
	}
}

func TestCounter(t *testing.T) {
	p := &fakePort{stats: []nic.Counter{{Name: "rx_packets", Value: 9}}}
	if v := Counter(t, p, "rx_packets"); v != 9 {
		t.Fatalf("Counter = %d, want 9", v)
	}
	if msg := Fails(t, func(tb testing.TB) { Counter(tb, p, "tx_packets") }); !strings.Contains(msg, `no counter "tx_packets"`) {
		t.Fatalf("missing counter: %q", msg)
	}
}

func TestRecvFramesAndReclaimAll(t *testing.T) {
	pool, err := dma.NewPool(&FarAllocator{}, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	frame := func(q uint16, v byte) *dma.Buf {
		b := pool.Get()
		b.Len = copy(b.Mem[b.Off:], []byte{v, v, v})
		b.Queue = q
		return b
	}
	p := &fakePort{
		rx: []*fakeRx{{pool: pool, pending: []*dma.Buf{frame(0, 1), frame(0, 2)}}, {pool: pool, pending: []*dma.Buf{frame(1, 3)}}},
		tx: []*fakeTx{{n: 8, inflight: 3}, {n: 8}},
	}
	got := RecvFrames(t, p, 3, time.Second)
	if len(got) != 3 || got[0][0] != 1 || got[1][0] != 2 || got[2][0] != 3 || len(got[2]) != 3 {
		t.Fatalf("frames %v", got)
	}
	if pool.Stats().Free != 8 {
		t.Fatalf("%d buffers back in the pool, want 8", pool.Stats().Free)
	}
	ReclaimAll(t, p, 8, time.Second)
	if p.tx[0].inflight != 0 {
		t.Fatalf("%d still in flight", p.tx[0].inflight)
	}

	// A buffer that names another queue fails the test.
	p.rx[0].pending = []*dma.Buf{frame(1, 4)}
	if msg := Fails(t, func(tb testing.TB) { RecvFrames(tb, p, 1, time.Second) }); !strings.Contains(msg, "Queue=1") {
		t.Fatalf("wrong queue: %q", msg)
	}
	// Too few frames fail the test after the timeout.
	if msg := Fails(t, func(tb testing.TB) { RecvFrames(tb, p, 1, 5*time.Millisecond) }); !strings.Contains(msg, "received 0 of 1") {
		t.Fatalf("timeout: %q", msg)
	}
	// A ring that never drains fails the test after the timeout.
	p.tx[1] = &fakeTx{n: 8, inflight: 1 << 30}
	if msg := Fails(t, func(tb testing.TB) { ReclaimAll(tb, p, 8, 5*time.Millisecond) }); !strings.Contains(msg, "TX queue 1") {
		t.Fatalf("stuck ring: %q", msg)
	}
}

// TestPseudoSum: the IPv4 pseudo-header of a header-only UDP datagram from
// 192.0.2.1 to 198.51.100.9, summed by hand: c000+0201+c633+6409+0011+0008
// = 0x1ec56, folded 0xec57.
func TestPseudoSum(t *testing.T) {
	f := make([]byte, 14+20+8)
	copy(f[14+12:], []byte{192, 0, 2, 1, 198, 51, 100, 9})
	if got := PseudoSum(f, false, 14, 34, 17); got != 0xec57 {
		t.Fatalf("PseudoSum %#04x, want 0xec57", got)
	}
}
