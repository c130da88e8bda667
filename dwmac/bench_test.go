package dwmac_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
)

const benchBurst = 32

// BenchmarkSimRxTx: frames injected into the dwmac model, received in a burst,
// sent back out in a burst, completed ones reclaimed. One op is one packet.
// model-rx-ns/pkt is the model's share on the receive side (Inject); the TX
// side's model time (descriptor fetch and DMA on the tail write) is inside the
// driver's Send and is not separated. Run per variant: the i.MX8MP one is
// non-coherent, so every Sync copies.
func BenchmarkSimRxTx(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  dwmacsim.Config
	}{
		{"intel", dwmacsim.Config{}},
		{"imx8mp-noncoherent", dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.AutonegDelay = time.Millisecond
			m, err := dwmacsim.New(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			m.SetTransmit(nil)
			p, err := dwmac.Open(m.Device(), dwmac.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: 2 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			frame := randFrame(rand.New(rand.NewPCG(1, 1)), p.MAC(), 64)
			rq, tq := p.RxQueue(0), p.TxQueue(0)
			bufs := make([]*dma.Buf, benchBurst)
			var injectTime time.Duration
			pkts, got := 0, 0
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				if pkts%benchBurst == 0 {
					t0 := time.Now()
					for i := 0; i < benchBurst; i++ {
						m.Inject(frame)
					}
					injectTime += time.Since(t0)
					n := rq.Recv(bufs)
					got += n
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
			if got < pkts-benchBurst {
				b.Fatalf("received %d of %d frames", got, pkts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(pkts, 1)), "ns/pkt")
			b.ReportMetric(float64(injectTime.Nanoseconds())/float64(max(pkts, 1)), "model-rx-ns/pkt")
		})
	}
}
