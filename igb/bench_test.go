package igb_test

import (
	"github.com/xnic-dev/xnic/dma"
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

// BenchmarkDriverTx: bursts of 32 64-byte frames sent, completed by the plain
// device and reclaimed; one op is one packet. /plain asks for nothing (the
// path every frame without TxFlags takes); /csum asks for a UDP checksum
// (a context descriptor for the first frame, then the slot's copy reused).
func BenchmarkDriverTx(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchDriverTx(b, 0) })
	b.Run("csum", func(b *testing.B) { benchDriverTx(b, dma.TxFlagChecksum) })
}

func benchDriverTx(b *testing.B, flags uint8) {
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	pool, tq := p.RxQueue(0).Pool(), p.TxQueue(0)
	bufs := make([]*dma.Buf, benchBurst)
	b.ReportAllocs()
	sent := 0
	for b.Loop() {
		for i := range bufs {
			x := pool.Get()
			x.Len = 64
			x.Mem[x.Off+12], x.Mem[x.Off+13] = 0x08, 0x00
			x.TxFlags, x.CsumStart, x.CsumOffset = flags, 34, 6
			bufs[i] = x
		}
		k := tq.Send(bufs)
		for _, x := range bufs[k:] {
			x.Free()
		}
		sent += k
		d.complete(b)
		tq.Reclaim()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(sent, 1)), "ns/pkt")
}
