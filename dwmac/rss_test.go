package dwmac_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
)

// ipv4Flow is an 80-byte IPv4 frame to dst carrying proto from src:sport to
// dstIP:dport.
func ipv4Flow(dst net.HardwareAddr, src, dstIP uint32, proto byte, sport, dport uint16) []byte {
	f := make([]byte, 80)
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 0x42})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dstIP)
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	return f
}

// TestSimNoRSS: on both integrations a multi-queue port reports no RSS hash
// (RxMeta without RxMetaHash, no frame with FlagRSSValid), every untagged
// flow reaches RX queue 0 as the EQoS core routes it, and the driver never
// touches the EST/RSS offsets (the model faults any access there).
func TestSimNoRSS(t *testing.T) {
	for _, v := range []dwmacsim.Variant{dwmacsim.IntelMGbE, dwmacsim.IMX8MP} {
		t.Run(v.String(), func(t *testing.T) {
			r := newRig(t, dwmacsim.Config{Variant: v}, dwmac.Config{Queues: 4})
			if r.p.RxMeta()&nic.RxMetaHash != 0 {
				t.Fatalf("RxMeta %b claims an RSS hash the core cannot give", r.p.RxMeta())
			}
			bufs := make([]*dma.Buf, 8)
			for i := 0; i < 64; i++ {
				proto := byte(6)
				if i%2 == 1 {
					proto = 17
				}
				f := ipv4Flow(r.p.MAC(), 0xc0a80001+uint32(i%8), 0xc0a800fe, proto, uint16(40000+i), uint16(80+i%3))
				if !r.m.Inject(f) {
					t.Fatalf("flow %d: the model refused the frame", i)
				}
				for q := 0; q < 4; q++ {
					n := r.p.RxQueue(q).Recv(bufs)
					for _, b := range bufs[:n] {
						if b.Flags&dma.FlagRSSValid != 0 || b.RSSHash != 0 || b.HashType != 0 {
							t.Errorf("flow %d: frame with flags %#x hash %#x type %#x", i, b.Flags, b.RSSHash, b.HashType)
						}
						b.Free()
					}
					if (q == 0) != (n == 1) || n > 1 {
						t.Fatalf("flow %d: queue %d received %d frames; untagged traffic belongs on queue 0", i, q, n)
					}
				}
			}
			r.checkModel()
		})
	}
}
