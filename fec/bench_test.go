package fec_test

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

const benchBurst = 32

// BenchmarkSimRxTx: frames injected into the (non-coherent) FEC model,
// received in a burst, sent back out in a burst, completed ones reclaimed. One
// op is one packet. model-rx-ns/pkt is the model's share on the receive side
// (Inject); the model's TX work (BD fetch and DMA on the TDAR write) is inside
// Send and not separated.
func BenchmarkSimRxTx(b *testing.B) {
	for _, legacy := range []bool{false, true} {
		b.Run(map[bool]string{false: "extended", true: "legacy"}[legacy], func(b *testing.B) {
			m := newModel(b, fecsim.Config{Sched: sim.SchedConfig{Sync: true}}) // device work inside the writes: comparable figures
			m.SetTransmit(nil)
			p := openPort(b, m.Device(), fec.Config{RxRingSize: 256, TxRingSize: 256, LegacyBD: legacy})
			frame := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 1)
			var modelRx time.Duration
			c := nictest.BenchRxTx(b, p.RxQueue(0), p.TxQueue(0), benchBurst, nictest.Timed(&modelRx, func() {
				for i := 0; i < benchBurst; i++ {
					m.Inject(frame)
				}
			}), nil)
			if err := m.Err(); err != nil {
				b.Fatal(err)
			}
			if c.Sent < c.Packets-benchBurst {
				b.Fatalf("only %d of %d frames went round", c.Sent, c.Packets)
			}
			b.ReportMetric(c.PerPacket(float64(c.Mallocs)), "allocs/pkt")
			b.ReportMetric(c.PerPacket(float64(modelRx.Nanoseconds())), "model-rx-ns/pkt")
			if el := b.Elapsed(); el > 0 {
				b.ReportMetric(float64(c.Packets)/el.Seconds(), "pkts/s")
			}
		})
	}
}

// BenchmarkDriverRxTx is the same loop on the scripted register file, whose DMA
// side the benchmark plays cheaply: close to the driver's own cost.
func BenchmarkDriverRxTx(b *testing.B) {
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	frame := make([]byte, 68)
	c := nictest.BenchRxTx(b, p.RxQueue(0), p.TxQueue(0), benchBurst, func() {
		for i := 0; i < benchBurst; i++ {
			d.deliver(b, frame, 1<<11)
		}
	}, func() { d.complete(b) })
	if el := b.Elapsed(); el > 0 {
		b.ReportMetric(float64(c.Packets)/el.Seconds(), "pkts/s")
	}
}
