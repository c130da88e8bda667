package conformance_test

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// regionCounter is the models' DMA memory (sim.Memory): how many regions
// are allocated.
type regionCounter interface{ Regions() int }

// TestCloseFreesDMAMemory: Close gives back every DMA region Open took
// (descriptor rings of both directions, buffer pools), with frames still in
// flight on the TX ring, and a second Open and Close on the same device does
// the same. A leaked ring is device memory gone until the process exits; on
// a board it is the reserved carve-out that runs out.
func TestCloseFreesDMAMemory(t *testing.T) {
	each(t, func(t *testing.T, v variant, m model, dev nic.Device) {
		mem, ok := dev.DMA().(regionCounter)
		if !ok {
			t.Fatalf("the model's DMA allocator %T does not count its regions", dev.DMA())
		}
		portEnd, peer := sim.NewPair()
		m.Attach(portEnd)
		var rec sim.Recorder
		peer.SetReceiver(rec.Receive)
		before := mem.Regions()
		rng := rand.New(rand.NewPCG(5, 5))
		for round := 0; round < 2; round++ {
			p, err := v.open(dev)
			if err != nil {
				t.Fatal(err)
			}
			if mem.Regions() <= before {
				t.Fatalf("round %d: Open allocated no DMA region (%d before, %d after)", round, before, mem.Regions())
			}
			if _, err := p.WaitLink(linkTimeout); err != nil {
				t.Fatal(err)
			}
			// Frames in flight at Close: sent, never reclaimed.
			pool, tx := p.RxQueue(0).Pool(), p.TxQueue(0)
			for i := 0; i < 4; i++ {
				b := pool.Get()
				if b == nil {
					t.Fatal("the pool is empty after Open")
				}
				b.Off, b.Len = dma.Headroom, 60
				copy(b.Data(), nictest.RandFrame(rng, net.HardwareAddr{2, 9, 9, 9, 9, 9}, 60))
				if tx.Send([]*dma.Buf{b}) != 1 {
					t.Fatalf("frame %d not taken", i)
				}
			}
			time.Sleep(time.Millisecond)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if got := mem.Regions(); got != before {
				t.Fatalf("round %d: %d DMA regions after Close, %d before Open: Close leaked %d", round, got, before, got-before)
			}
		}
	})
}
