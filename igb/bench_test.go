package igb_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

const benchBurst = 32

// BenchmarkSimRxTx: frames injected into the igb model, received in a burst,
// sent back out in a burst, completed ones reclaimed. One op is one packet.
// model-rx-ns/pkt is the model's share on the receive side (Inject); the TX
// side's model time (descriptor fetch and DMA on the TDT write) is inside the
// driver's Send and is not separated.
func BenchmarkSimRxTx(b *testing.B) { benchSimRxTx(b, false) }

// BenchmarkSimRxTxInjectBurst is BenchmarkSimRxTx with each burst delivered by
// one igbsim.InjectBurst (one lock, the RX ring translated once per burst), as
// xnic run's traffic generator delivers it.
func BenchmarkSimRxTxInjectBurst(b *testing.B) { benchSimRxTx(b, true) }

func benchSimRxTx(b *testing.B, burstInject bool) {
	m, err := igbsim.New(igbsim.Config{AutonegDelay: time.Millisecond, Sched: sim.SchedConfig{Sync: true}}) // device work inside the writes, as before: comparable figures
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.SetTransmit(nil)
	p, err := igb.Open(m.Device(), igb.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	frame := nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), p.MAC(), 64)
	frames := make([][]byte, benchBurst)
	for i := range frames {
		frames[i] = frame
	}
	inject := func() {
		for i := 0; i < benchBurst; i++ {
			m.Inject(frame)
		}
	}
	if burstInject {
		inject = func() { m.InjectBurst(frames) }
	}
	var modelRx time.Duration
	c := nictest.BenchRxTx(b, p.RxQueue(0), p.TxQueue(0), benchBurst, nictest.Timed(&modelRx, inject), nil)
	b.ReportMetric(c.PerPacket(float64(c.Mallocs)), "allocs/pkt")
	if err := m.Err(); err != nil {
		b.Fatal(err)
	}
	if c.Received < c.Packets-benchBurst {
		b.Fatalf("received %d of %d frames", c.Received, c.Packets)
	}
	b.ReportMetric(c.PerPacket(float64(modelRx.Nanoseconds())), "model-rx-ns/pkt")
}

// BenchmarkDriverRxTx is the same loop on a plain register array whose DMA side
// the benchmark plays (cheaply): close to the driver's own cost per packet.
func BenchmarkDriverRxTx(b *testing.B) {
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 64)
	c := nictest.BenchRxTx(b, p.RxQueue(0), p.TxQueue(0), benchBurst,
		func() { d.deliver(b, frame, benchBurst) },
		func() { d.complete(b) })
	b.ReportMetric(c.PerPacket(float64(c.Mallocs)), "allocs/pkt")
	if c.Received < c.Packets-benchBurst {
		b.Fatalf("received %d of %d frames", c.Received, c.Packets)
	}
}
