package dwmacsim

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// The DWC XGMAC's RSS registers (Linux dwxgmac2.h), transcribed here
// independently of the model, as a driver written for the wrong IP would use
// them.
const (
	tXGMACRSSCtrl, tXGMACRSSAddr, tXGMACRSSData = 0xc80, 0xc88, 0xc8c
	tRSSE, tIP2TE, tTCP4TE, tUDP4TE             = 1 << 0, 1 << 1, 1 << 2, 1 << 3
	tRSSOB, tRSSADDRT, tRSSIAShift              = 1 << 0, 1 << 2, 8
	tXGMACRSSEN                                 = 1 << 20 // HW_FEATURE1 on an XGMAC (AVSEL on EQoS)
	tESTControl                                 = 0xc50
)

// flowFrame is an IPv4 frame to dst carrying proto (6 TCP, 17 UDP) from
// src:sport to dstIP:dport, 80 bytes long.
func flowFrame(dst net.HardwareAddr, src, dstIP uint32, proto byte, sport, dport uint16) []byte {
	f := frame(dst, 80)
	ip := f[14:]
	ip[0], ip[9] = 0x45, proto
	binary.BigEndian.PutUint16(ip[2:], 80-14)
	binary.BigEndian.PutUint16(ip[6:], 0) // not a fragment
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dstIP)
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	return f
}

// TestNoRSSBlock: neither variant announces RSS, a driver that programs the
// XGMAC's RSS block (key and table through the address/data pair with OB,
// then MAC_RSS_Control) is caught at every access, and the model steers
// nothing by it: every flow still lands on RX queue 0 with no hash in RDES1.
func TestNoRSSBlock(t *testing.T) {
	for _, v := range []Variant{IntelMGbE, IMX8MP} {
		t.Run(v.String(), func(t *testing.T) {
			cfg := testCfg()
			cfg.Variant = v
			r := newRig(t, cfg)
			require.Zero(t, r.Rd(tHWF1)&tXGMACRSSEN, "HW_FEATURE1 bit 20 (the XGMAC's RSSEN)")
			r.bringUp()
			require.NoError(t, r.m.Err())

			// dwxgmac2_rss_write_reg's sequence for key word 0 and table entry 0.
			r.Wr(tXGMACRSSData, 0x6d5a56da)
			r.expectFault("no RSS")
			r.Wr(tXGMACRSSAddr, 0<<tRSSIAShift|tRSSADDRT|tRSSOB)
			r.expectFault("RSS address/data pair")
			r.Rd(tXGMACRSSAddr) // OB reads 0: only the fault log tells
			r.expectFault("exists only on the DWC XGMAC")
			r.Wr(tXGMACRSSAddr, 0<<tRSSIAShift|tRSSOB)
			r.expectFault("no RSS")
			r.Wr(tXGMACRSSCtrl, tRSSE|tIP2TE|tTCP4TE|tUDP4TE)
			r.expectFault("MTL_EST_GCL_Control")
			r.Rd(tESTControl)
			r.expectFault("EST")

			r.Wr(tRxqCtrl0, 0xaa)         // queues 0-3 generic
			r.Wr(tRxqDMAMap0, 0x03020100) // queue q to channel q
			rings := make([]*rxRing, 4)
			for c := range rings {
				rings[c] = r.setupRx(c, 64, 1536)
			}
			const flows = 32
			for i := 0; i < flows; i++ {
				proto := byte(6)
				if i%2 == 1 {
					proto = 17
				}
				f := flowFrame(factoryMAC, 0x0a000001+uint32(i), 0x0a0000fe, proto, uint16(1024+i), 80)
				require.True(t, r.m.Inject(f), "flow %d", i)
			}
			for i := 0; i < flows; i++ {
				require.Zero(t, rings[0].des3(i)&tOWN, "flow %d reached queue 0", i)
				d1 := binary.LittleEndian.Uint32(rings[0].ring.CPU[i*16+4:])
				require.Zero(t, d1, "flow %d: RDES1 holds no hash", i)
			}
			for c := 1; c < 4; c++ {
				require.NotZero(t, rings[c].des3(0)&tOWN, "queue %d received nothing", c)
			}
			require.NoError(t, r.m.Err())
		})
	}
}
