package fec

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
)

// udp4 is an Ethernet/IPv4/UDP frame of n payload bytes with the UDP
// checksum field holding field and a valid IPv4 header checksum.
func udp4(n int, field uint16) []byte {
	f := make([]byte, 14+20+8+n)
	copy(f, []byte{2, 0, 0, 0, 0, 0xB, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
	binary.BigEndian.PutUint16(ip[20:], 1000)
	binary.BigEndian.PutUint16(ip[22:], 2000)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+n))
	binary.BigEndian.PutUint16(ip[26:], field)
	for i := 28; i < len(ip); i++ {
		ip[i] = byte(i * 7)
	}
	return f
}

// postRaw is Send without its checks and without metaESC: one frame, its
// BD's esc as the caller says. It is what a driver with a bug would write.
func postRaw(q *txQueue, b *dma.Buf, esc uint32) {
	if p := b.Pool(); p != nil && p.Region() != nil {
		r := p.Region()
		p.Allocator().Sync(r, int(b.DataIOVA()-r.IOVA), b.Len, dma.ForDevice)
	}
	i := q.Tail
	d := q.Ring.CPU[i*q.bd.size : (i+1)*q.bd.size]
	q.bd.put(d, uint32(b.DataIOVA()), q.esc|esc)
	sc := txR | txL | txTC
	if i == q.N-1 {
		sc |= txW
	}
	storeWord0(d, bdWord0(sc, uint16(b.Len)))
	b.SetOwner(dma.OwnerTx)
	q.Slots[i] = b
	q.Tail = (i + 1) % q.N
	q.Inflight++
	nic.SyncRing(q.Alloc, q.Ring, q.bd.size, q.N, i, 1, dma.ForDevice)
	q.kick()
}

// TestMutatedDriverCaughtByModel: a driver that gets the checksum request
// wrong on the device's side is caught by the model's fault log, while the
// driver's own path through the same model stays clean.
func TestMutatedDriverCaughtByModel(t *testing.T) {
	cases := []struct {
		name  string
		do    func(p *Port, q *txQueue, b *dma.Buf)
		fault string
	}{
		{"the real driver", func(p *Port, q *txQueue, b *dma.Buf) {
			b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, 34, 6
			if q.Send([]*dma.Buf{b}) != 1 {
				t.Fatal("Send refused a good request")
			}
		}, ""},
		{"checksum field not cleared (no fec_enet_clear_csum)", func(p *Port, q *txQueue, b *dma.Buf) {
			postRaw(q, b, txESCPINS)
		}, "not cleared"},
		{"PINS on a frame that is not IP (no CheckTxMeta)", func(p *Port, q *txQueue, b *dma.Buf) {
			b.Mem[b.Off+12], b.Mem[b.Off+13] = 0x88, 0xB5
			postRaw(q, b, txESCPINS)
		}, "not IP"},
		{"store and forward off", func(p *Port, q *txQueue, b *dma.Buf) {
			p.w32(regTFWR, 0)
			b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, 34, 6
			q.Send([]*dma.Buf{b})
		}, "STRFWD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := fecsim.New(fecsim.Config{AutonegDelay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			p, err := Open(m.Device(), Config{LinkTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			q := p.tx[0]
			b := p.rx[0].Pool().Get()
			b.Len = copy(b.Mem[b.Off:], udp4(80, 0x1234)) // the pseudo-header sum of a CHECKSUM_PARTIAL sender, say
			c.do(p, q, b)
			m.Settle()
			err = m.Err()
			switch {
			case c.fault == "" && err != nil:
				t.Fatalf("model faults for the real driver: %v", err)
			case c.fault != "" && (err == nil || !strings.Contains(err.Error(), c.fault)):
				t.Fatalf("model faults %v, want one about %q", err, c.fault)
			}
		})
	}
}
