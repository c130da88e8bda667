package dataplane_test

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// igbBed is ports of the igb driver on the igb model: Inject is a frame
// arriving from the wire (the model writes it into the RX ring by DMA and sets
// the descriptor's DD bit), Sent what the model put on the wire after the
// driver's tail write.
type igbBed struct {
	models []*igbsim.Model
	ports  []*igb.Port
	pools  []*dma.Pool
	record bool

	mu    sync.Mutex
	sent  [][][]byte // per port, when recording; guarded by mu
	count []atomic.Uint64
}

func newIGBBed(t testing.TB, n int, record bool) *igbBed {
	t.Helper()
	b := &igbBed{record: record, sent: make([][][]byte, n), count: make([]atomic.Uint64, n)}
	for i := 0; i < n; i++ {
		m, err := igbsim.New(igbsim.Config{
			MAC:          net.HardwareAddr{0x02, 0x1b, 0, 0, 0, byte(i + 1)},
			Queues:       1,
			AutonegDelay: time.Millisecond,
			Name:         fmt.Sprintf("igbsim%d", i),
			// Benchmarks keep the device's work inside the writes, so
			// their figures stay comparable; tests run it on its own time.
			Sched: sim.SchedConfig{Sync: isBench(t)},
		})
		if err != nil {
			t.Fatal(err)
		}
		i := i
		m.SetTransmit(func(f []byte) {
			b.count[i].Add(1)
			if b.record {
				c := append([]byte(nil), f...)
				b.mu.Lock()
				b.sent[i] = append(b.sent[i], c)
				b.mu.Unlock()
			}
		})
		p, err := igb.Open(m.Device(), igb.Config{Queues: 1, Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
		if err != nil {
			m.Close()
			t.Fatal(err)
		}
		if _, err := p.WaitLink(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		b.models = append(b.models, m)
		b.ports = append(b.ports, p)
		b.pools = append(b.pools, p.RxQueue(0).Pool())
	}
	return b
}

func (b *igbBed) Ports() []nic.Port {
	var out []nic.Port
	for _, p := range b.ports {
		out = append(out, p)
	}
	return out
}

// Inject retries while the RX ring has no free descriptor (the model would
// count a miss; the tests want every frame in).
func (b *igbBed) Inject(i int, f []byte) {
	deadline := time.Now().Add(5 * time.Second)
	for !b.models[i].Inject(f) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

func (b *igbBed) SetLink(i int, up bool) { b.models[i].PHY().SetConnected(up) }

func (b *igbBed) SentCount(i int) uint64 { return b.count[i].Load() }

func (b *igbBed) Sent(t *testing.T, i, want int) [][]byte {
	deadline := time.Now().Add(2 * time.Second)
	for {
		b.mu.Lock()
		n := len(b.sent[i])
		b.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if want == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.sent[i]
	b.sent[i] = nil
	return out
}

func (b *igbBed) Close(t *testing.T) { b.closeTB(t) }

func (b *igbBed) closeTB(t testing.TB) {
	for i, p := range b.ports {
		if err := p.Close(); err != nil {
			t.Errorf("closing port %d: %v", i, err)
		}
	}
	for i, pool := range b.pools {
		if err := pool.CheckIdle(); err != nil {
			t.Errorf("port %d: buffer lost: %v", i, err)
		}
	}
	for i, m := range b.models {
		if err := m.Err(); err != nil {
			t.Errorf("model %d saw the driver misbehave: %v", i, err)
		}
		m.Close()
	}
}

// isBench reports whether t is a benchmark.
func isBench(t testing.TB) bool {
	_, ok := t.(*testing.B)
	return ok
}
