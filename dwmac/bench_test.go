package dwmac_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
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
		name     string
		cfg      dwmacsim.Config
		coalesce time.Duration // Config.RxCoalesce: IOC on one frame in 64, the watchdog for the rest
	}{
		// Device work inside the writes, as before: comparable figures.
		{"intel", dwmacsim.Config{Sched: sim.SchedConfig{Sync: true}}, 0},
		{"intel-coalesce", dwmacsim.Config{Sched: sim.SchedConfig{Sync: true}}, time.Millisecond},
		{"imx8mp-noncoherent", dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true, Sched: sim.SchedConfig{Sync: true}}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.AutonegDelay = time.Millisecond
			m, err := dwmacsim.New(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			m.SetTransmit(nil)
			p, err := dwmac.Open(m.Device(), dwmac.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: 2 * time.Second, RxCoalesce: c.coalesce})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			frame := nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), p.MAC(), 64)
			var modelRx time.Duration
			c := nictest.BenchRxTx(b, p.RxQueue(0), p.TxQueue(0), benchBurst, nictest.Timed(&modelRx, func() {
				for i := 0; i < benchBurst; i++ {
					m.Inject(frame)
				}
			}), nil)
			b.ReportMetric(c.PerPacket(float64(c.Mallocs)), "allocs/pkt")
			if err := m.Err(); err != nil {
				b.Fatal(err)
			}
			if c.Received < c.Packets-benchBurst {
				b.Fatalf("received %d of %d frames", c.Received, c.Packets)
			}
			b.ReportMetric(c.PerPacket(float64(b.Elapsed().Nanoseconds())), "ns/pkt")
			b.ReportMetric(c.PerPacket(float64(modelRx.Nanoseconds())), "model-rx-ns/pkt")
		})
	}
}
