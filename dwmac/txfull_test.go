package dwmac_test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// TestSimTxBurstLargerThanRing: bursts of three rings' worth on a small TX
// ring. The DMA stops where its current descriptor meets the tail pointer
// (DWC Ethernet QoS databook, DMA_CH_TxDesc_Tail_Pointer; Linux stmmac keeps
// one descriptor free, stmmac_tx_avail): a driver that posts all N
// descriptors writes a tail equal to the current descriptor and nothing is
// sent. Every frame must reach the wire, in order.
func TestSimTxBurstLargerThanRing(t *testing.T) {
	const ring = 8
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{TxRingSize: ring})
	rng := rand.New(rand.NewPCG(8, 8))
	frames := make([][]byte, 6*ring)
	for i := range frames {
		frames[i] = nictest.RandFrame(rng, net.HardwareAddr{2, 9, 9, 9, 9, 9}, 60+rng.IntN(200))
	}
	transmit(t, r.p, frames, 3*ring)
	deadline := time.Now().Add(5 * time.Second)
	for len(r.sent()) < len(frames) && time.Now().Before(deadline) {
		r.p.TxQueue(0).Reclaim()
		time.Sleep(200 * time.Microsecond)
	}
	sent := r.sent()
	if len(sent) != len(frames) {
		t.Fatalf("%d of %d frames on the wire", len(sent), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(sent[i], frames[i]) {
			t.Fatalf("frame %d differs on the wire", i)
		}
	}
	reclaimAll(t, r.p, ring)
	r.checkModel()
}
