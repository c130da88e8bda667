package fec_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
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
			m := newModel(b, fecsim.Config{})
			m.SetTransmit(nil)
			p := openPort(b, m.Device(), fec.Config{RxRingSize: 256, TxRingSize: 256, LegacyBD: legacy})
			frame := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 1)
			rq, tq := p.RxQueue(0), p.TxQueue(0)
			bufs := make([]*dma.Buf, benchBurst)
			var injectTime time.Duration
			pkts, moved := 0, 0
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
					k := tq.Send(bufs[:n])
					for _, x := range bufs[k:n] {
						x.Free()
					}
					tq.Reclaim()
					moved += k
				}
				pkts++
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			if err := m.Err(); err != nil {
				b.Fatal(err)
			}
			if moved < pkts-benchBurst {
				b.Fatalf("only %d of %d frames went round", moved, pkts)
			}
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(max(pkts, 1)), "allocs/pkt")
			b.ReportMetric(float64(injectTime.Nanoseconds())/float64(max(pkts, 1)), "model-rx-ns/pkt")
			if el := b.Elapsed(); el > 0 {
				b.ReportMetric(float64(pkts)/el.Seconds(), "pkts/s")
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
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	bufs := make([]*dma.Buf, benchBurst)
	pkts := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if pkts%benchBurst == 0 {
			for i := 0; i < benchBurst; i++ {
				d.deliver(b, frame, 1<<11)
			}
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
	if el := b.Elapsed(); el > 0 {
		b.ReportMetric(float64(pkts)/el.Seconds(), "pkts/s")
	}
}
