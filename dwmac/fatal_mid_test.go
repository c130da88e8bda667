package dwmac

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// TestFatalRxRecoveredMidRing: the fatal bus error strikes at a descriptor
// other than the first, after frames went through. The recovery restarts the
// ring at its base on both sides: the driver at descriptor 0, the DMA by the
// list address write, which is what moves its current descriptor back (DWC
// Ethernet QoS databook, DMA_CH_RxDesc_List_Address; Linux
// stmmac_init_rx_buffers/stmmac_init_chan rewrite it on every restart). A
// recovery that skips it leaves the DMA writing where it stopped while the
// driver waits at 0.
func TestFatalRxRecoveredMidRing(t *testing.T) {
	m, p, _ := fatalRig(t)
	rng := rand.New(rand.NewPCG(41, 42))
	bufs := make([]*dma.Buf, 8)
	q := p.rx[0]
	for i := 0; i < 5; i++ {
		f := nictest.RandFrame(rng, p.MAC(), 80+i)
		if !m.Inject(f) {
			t.Fatalf("frame %d refused", i)
		}
		if n := q.Recv(bufs); n != 1 || !bytes.Equal(bufs[0].Data(), f) {
			t.Fatalf("frame %d before the fault: Recv %d", i, n)
		}
		bufs[0].Free()
	}
	if q.Next == 0 {
		t.Fatal("the ring did not move")
	}
	d := q.Desc(q.Next)
	storeDES3(d, putRxRead(d, unreachable, true))
	q.SyncDesc(q.Next, dma.ForDevice)
	m.Inject(nictest.RandFrame(rng, p.MAC(), 100))
	if m.Err() == nil {
		t.Fatal("the model reached an unreachable buffer")
	}
	m.FaultLog().Clear()
	for polls := 0; polls < 2*fatalCheckEvery && nictest.Counter(t, p, "rx_dma_recoveries") == 0; polls++ {
		q.Recv(bufs)
	}
	if got := nictest.Counter(t, p, "rx_dma_recoveries"); got != 1 {
		t.Fatalf("rx_dma_recoveries %d, want 1", got)
	}
	for i := 0; i < 24; i++ { // past the ring's end: it wraps
		f := nictest.RandFrame(rng, p.MAC(), 60+i)
		if !m.Inject(f) {
			t.Fatalf("frame %d after recovery refused (model: %v)", i, m.Err())
		}
		if n := q.Recv(bufs); n != 1 || !bytes.Equal(bufs[0].Data(), f) {
			t.Fatalf("frame %d after recovery: Recv %d", i, n)
		}
		bufs[0].Free()
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}
