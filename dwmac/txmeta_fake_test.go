package dwmac

import (
	"encoding/binary"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// BenchmarkFakeTx: the driver's TX cost per frame on the scripted fake, in
// bursts of 32 (Get, Send, the fake's completion, Reclaim). "plain" frames ask
// for nothing (TxFlags 0: the path every frame took before TX requests);
// "checksum" frames ask for TDES3.CIC, so CheckTxMeta parses each.
func BenchmarkFakeTx(b *testing.B) {
	frame := udpFrame()
	for _, c := range []struct {
		name  string
		flags uint8
	}{{"plain", 0}, {"checksum", dma.TxFlagChecksum}} {
		b.Run(c.name, func(b *testing.B) {
			d := newFakeDev(b)
			d.regs[fHWF0] |= 1 << 14 // TXCOESEL
			p, err := Open(d, Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			d.noLog = true
			pool, tq := p.RxQueue(0).Pool(), p.TxQueue(0)
			var tst txState
			const burst = 32
			bufs := make([]*dma.Buf, burst)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for i := range bufs {
					x := pool.Get()
					x.Len = copy(x.Mem[x.Off:], frame)
					x.TxFlags, x.CsumStart, x.CsumOffset = c.flags, 34, 6
					bufs[i] = x
				}
				if k := tq.Send(bufs); k != burst {
					b.Fatalf("Send took %d of %d", k, burst)
				}
				d.complete(b, &tst, nil)
				tq.Reclaim()
				n += burst
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/frame")
		})
	}
}

// udpFrame is a 64-byte Ethernet/IPv4/UDP frame (the checksums do not
// matter to the fake).
func udpFrame() []byte {
	f := make([]byte, 64)
	copy(f, []byte{2, 9, 9, 9, 9, 9, 2, 1, 1, 1, 1, 1, 0x08, 0x00, 0x45})
	binary.BigEndian.PutUint16(f[16:], 50) // IPv4 total length
	f[22], f[23] = 64, 17                  // TTL, UDP
	binary.BigEndian.PutUint16(f[38:], 30) // UDP length
	return f
}
