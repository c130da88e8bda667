package fec_test

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"

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

// BenchmarkDriverTxMeta: Send and Reclaim of bursts on the scripted register
// file, frames asking for nothing, for a checksum, and for a checksum and a
// timestamp (the fake device sets no BDU, so the stamps complete without a
// time: the cost measured is the driver's, not the timer's). One op is one
// packet; the frame copy into the buffer is in every case.
func BenchmarkDriverTxMeta(b *testing.B) {
	f := buildL4(b, rand.New(rand.NewPCG(4, 4)), net.HardwareAddr{2, 0, 0, 0, 0, 0xB}, false, true, false, 200)
	for _, c := range []struct {
		name  string
		flags uint8
	}{{"none", 0}, {"checksum", dma.TxFlagChecksum}, {"checksum+timestamp", dma.TxFlagChecksum | dma.TxFlagTimestamp}} {
		b.Run(c.name, func(b *testing.B) {
			d := newPlainFEC("fsl,imx8mp-fec")
			p, err := fec.Open(d, fec.Config{RxRingSize: 256, TxRingSize: 256, PoolSize: 512, LinkTimeout: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			tq := metaQueue(b, p)
			pool := p.RxQueue(0).Pool()
			bufs := make([]*dma.Buf, benchBurst)
			out := make([]nic.TxStamp, benchBurst)
			frame := f.Partial()
			b.ReportAllocs()
			sent := 0
			for b.Loop() {
				k := pool.GetBurst(bufs)
				for _, x := range bufs[:k] {
					x.Len = copy(x.Mem[x.Off:], frame)
					x.TxFlags, x.CsumStart, x.CsumOffset = c.flags, uint16(f.L4), uint16(f.Field())
				}
				n := tq.Send(bufs[:k])
				for _, x := range bufs[n:k] {
					x.Free()
				}
				sent += n
				d.complete(b)
				tq.Reclaim()
				tq.TxStamps(out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(sent, 1)), "ns/pkt")
		})
	}
}
