package igb_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

// TestSimRearmEachQueue: each RX queue's vector auto-masks when it fires
// (EIAM) and only that queue's ArmIRQ unmasks it again (EIMS bit of its own
// MSI-X vector, 82576/I350/I210 datasheets 7.3 "Interrupts", Linux
// igb_ring_irq_enable writes the q_vector's eims_value). Three frames in turn
// on queue 1, each after its ArmIRQ: arming another queue's vector leaves
// queue 1 asleep from the second frame on.
func TestSimRearmEachQueue(t *testing.T) {
	r := newRigSim(t, igbsim.Config{Queues: 2}, igb.Config{Queues: 2, Interrupts: true, ITR: 10 * time.Microsecond})
	rq := r.p.RxQueue(1)
	bufs := make([]*dma.Buf, 4)
	sent := 0
	for flow := 0; sent < 3; flow++ {
		in := traffic.FlowHashInputUDP4(flow)
		if h := traffic.Toeplitz(r.p.RSSKey(), in[:]); int(h&127)%2 != 1 {
			continue // RETA sends this flow to queue 0
		}
		for fired, _ := rq.IRQ().Wait(0); fired; fired, _ = rq.IRQ().Wait(0) {
		}
		rq.ArmIRQ()
		if k := rq.Recv(bufs); k != 0 {
			t.Fatalf("frame %d: %d frames early", sent, k)
		}
		f := traffic.FlowFrame(flow, 0, r.p.MAC(), net.HardwareAddr{2, 0, 0, 0, 0, 7})
		r.wire.Send(f)
		if fired, err := rq.IRQ().Wait(2 * time.Second); !fired || err != nil {
			t.Fatalf("frame %d on queue 1: no interrupt after its ArmIRQ (%v)\n%s", sent, err, r.p.Dump())
		}
		if k := rq.Recv(bufs); k != 1 || !bytes.Equal(bufs[0].Data(), f) {
			t.Fatalf("frame %d: Recv %d after the interrupt", sent, k)
		}
		bufs[0].Free()
		sent++
	}
	r.checkModel()
}
