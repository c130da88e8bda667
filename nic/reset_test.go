package nic_test

import (
	"bytes"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// TestRingResetReachesDevice: Reset on non-coherent memory leaves every
// descriptor zero in the device's view, not only in the CPU's. A device
// restarted on the ring (fec after a link change, a dwmac channel after a
// fatal error) reads from its base: descriptors still owned in memory (R, OWN
// set by the frames in flight before) would send freed buffers or receive into
// them. Both rings, descriptors the device owned before the reset.
func TestRingResetReachesDevice(t *testing.T) {
	const n, size = 16, 16
	mem := sim.NewMemory(sim.MemoryConfig{NonCoherent: true}, nil)
	zero := make([]byte, n*size)
	owned := func(ring *dma.Region) {
		for i := range ring.CPU {
			ring.CPU[i] = 0xA5
		}
		mem.Sync(ring, 0, ring.Len(), dma.ForDevice)
	}
	deviceView := func(ring *dma.Region) []byte {
		got := make([]byte, ring.Len())
		if err := mem.ReadDMA(ring.IOVA, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	txRing, err := mem.Alloc(n*size, 64)
	if err != nil {
		t.Fatal(err)
	}
	var tx nic.TxRing
	tx.Init(mem, txRing, n, size)
	owned(txRing)
	tx.Reset(nil)
	if got := deviceView(txRing); !bytes.Equal(got, zero) {
		t.Fatalf("TX ring after Reset, as the device reads it: % x...", got[:32])
	}

	rxRing, err := mem.Alloc(n*size, 64)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := dma.NewPool(mem, n, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var rx nic.RxRing
	rx.Init(mem, rxRing, n, size, pool, 2048-dma.Headroom)
	rx.Refill(n-1, 1, func(d []byte, _ int, iova uint64) { d[0] = 0xA5 })
	owned(rxRing)
	rx.Reset()
	if got := deviceView(rxRing); !bytes.Equal(got, zero) {
		t.Fatalf("RX ring after Reset, as the device reads it: % x...", got[:32])
	}
	if err := pool.CheckIdle(); err != nil {
		t.Fatalf("RX Reset kept buffers: %v", err)
	}
	if err := mem.Faults().Err(); err != nil {
		t.Fatal(err)
	}
}
