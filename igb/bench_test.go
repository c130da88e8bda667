package igb_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
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
	m, err := igbsim.New(igbsim.Config{AutonegDelay: time.Millisecond})
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
	frame := randFrame(rand.New(rand.NewPCG(1, 1)), p.MAC(), 64)
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	bufs := make([]*dma.Buf, benchBurst)
	frames := make([][]byte, benchBurst)
	for i := range frames {
		frames[i] = frame
	}
	var injectTime time.Duration
	pkts := 0
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		if pkts%benchBurst == 0 {
			t0 := time.Now()
			if burstInject {
				m.InjectBurst(frames)
			} else {
				for i := 0; i < benchBurst; i++ {
					m.Inject(frame)
				}
			}
			injectTime += time.Since(t0)
			n := rq.Recv(bufs)
			k := tq.Send(bufs[:n])
			for _, x := range bufs[k:n] {
				x.Free()
			}
			tq.Reclaim()
		}
		pkts++
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(max(pkts, 1)), "allocs/pkt")
	if err := m.Err(); err != nil {
		b.Fatal(err)
	}
	if pkts > 0 {
		b.ReportMetric(float64(injectTime.Nanoseconds())/float64(pkts), "model-rx-ns/pkt")
	}
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
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	bufs := make([]*dma.Buf, benchBurst)
	pkts := 0
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		if pkts%benchBurst == 0 {
			d.deliver(b, frame, benchBurst)
			n := rq.Recv(bufs)
			k := tq.Send(bufs[:n])
			for _, x := range bufs[k:n] {
				x.Free()
			}
			d.complete(b)
			tq.Reclaim()
		}
		pkts++
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(max(pkts, 1)), "allocs/pkt")
}
