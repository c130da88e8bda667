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
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// wireModel is what modelBed needs of a device model: igbsim, dwmacsim and
// fecsim.
type wireModel interface {
	Inject(frame []byte) bool
	SetTransmit(func(frame []byte))
	PHY() *sim.PHY
	Err() error
	Close() error
}

// modelBed is ports of a driver on its model: Inject is a frame arriving
// from the wire, Sent what the model put on the wire.
type modelBed struct {
	models []wireModel
	ports  []nic.Port
	pools  []*dma.Pool
	record bool

	mu    sync.Mutex
	sent  [][][]byte // per port, when recording; guarded by mu
	count []atomic.Uint64
}

// openModel makes model i and opens the driver on it.
type openModel func(t testing.TB, i int) (wireModel, nic.Port)

func newModelBed(t testing.TB, n int, record bool, open openModel) *modelBed {
	t.Helper()
	b := &modelBed{record: record, sent: make([][][]byte, n), count: make([]atomic.Uint64, n)}
	for i := 0; i < n; i++ {
		m, p := open(t, i)
		t.Cleanup(func() {
			if err := m.Err(); err != nil && t.Failed() {
				t.Logf("model %d: %v", i, err)
			}
		})
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
		if _, err := p.WaitLink(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		b.models = append(b.models, m)
		b.ports = append(b.ports, p)
		b.pools = append(b.pools, p.RxQueue(0).Pool())
	}
	return b
}

func openFEC(t testing.TB, i int) (wireModel, nic.Port) { return openFECVariant(fecsim.IMX8MP)(t, i) }

// openFECVariant opens the fec driver on the fecsim variant v.
func openFECVariant(v fecsim.Variant) openModel {
	return func(t testing.TB, i int) (wireModel, nic.Port) { return openFECOn(t, v, i) }
}

func openFECOn(t testing.TB, v fecsim.Variant, i int) (wireModel, nic.Port) {
	m, err := fecsim.New(fecsim.Config{
		Variant:      v,
		MAC:          net.HardwareAddr{0x02, 0xfe, 0, 0, 0, byte(i + 1)},
		AutonegDelay: time.Millisecond,
		Name:         fmt.Sprintf("fecsim%d", i),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := fec.Open(m.Device(), fec.Config{Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		m.Close()
		t.Fatalf("fec.Open: %v (model: %v)", err, m.Err())
	}
	return m, p
}

func openDwmac(t testing.TB, i int) (wireModel, nic.Port) {
	m, err := dwmacsim.New(dwmacsim.Config{
		MAC:          net.HardwareAddr{0x02, 0xd3, 0, 0, 0, byte(i + 1)},
		AutonegDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := dwmac.Open(m.Device(), dwmac.Config{Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		m.Close()
		t.Fatalf("dwmac.Open: %v (model: %v)", err, m.Err())
	}
	return m, p
}

func (b *modelBed) Ports() []nic.Port { return b.ports }

// Inject retries while the RX ring has no free descriptor.
func (b *modelBed) Inject(i int, f []byte) {
	deadline := time.Now().Add(5 * time.Second)
	for !b.models[i].Inject(f) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

func (b *modelBed) SetLink(i int, up bool) { b.models[i].PHY().SetConnected(up) }

func (b *modelBed) SentCount(i int) uint64 { return b.count[i].Load() }

func (b *modelBed) Sent(t *testing.T, i, want int) [][]byte {
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

func (b *modelBed) Close(t *testing.T) { b.closeTB(t) }

func (b *modelBed) closeTB(t testing.TB) {
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

// onModel runs the end-to-end verdict tests and the soak on ports of open.
func onModel(t *testing.T, open openModel) {
	oldBed, oldSoak, oldN := bedMaker, soakBedMaker, soakFrames
	bedMaker = func(t *testing.T, n int) bed { return newModelBed(t, n, true, open) }
	soakBedMaker = func(t *testing.T, n int) bed { return newModelBed(t, n, false, open) }
	soakFrames = 100_000
	defer func() { bedMaker, soakBedMaker, soakFrames = oldBed, oldSoak, oldN }()
	t.Run("MacSwapTX", TestE2EMacSwapTX)
	t.Run("DropCount", TestE2EDropCount)
	t.Run("RedirectMap", TestE2ERedirectMap)
	t.Run("CPUMap", TestE2ECPUMap)
	t.Run("XSK", TestE2EXSK)
	t.Run("AdjustTail", TestE2EAdjustTail)
	t.Run("Soak", TestSoak)
}

// TestE2EOnFEC: the verdict paths and the soak on the fec driver and fecsim
// (i.MX8MP, non-coherent memory, device side on its own time).
func TestE2EOnFEC(t *testing.T) { onModel(t, openFEC) }

// TestE2EOnFECIMX6: the same on the single-ring i.MX6 ENET, whose TX ring
// ERR006358 can leave stopped until the port's owner reclaims (the driver
// re-kicks it there).
func TestE2EOnFECIMX6(t *testing.T) { onModel(t, openFECVariant(fecsim.IMX6)) }

// TestE2EOnDwmac: the same on the dwmac driver and dwmacsim (Intel mGbE).
func TestE2EOnDwmac(t *testing.T) { onModel(t, openDwmac) }
