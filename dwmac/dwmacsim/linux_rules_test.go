package dwmacsim

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

// Rules that running Linux's stmmac (dwmac-intel) against the model showed
// were missing; each test also keeps the model failing a wrong driver.

const (
	tEDSE    = 1 << 28
	tLTV     = 1 << 31
	tGPIO    = 0x20c
	tTBSSEL  = 1 << 27
	tAddrAE  = 1 << 31
	tEnhDesc = 32
)

// TestTxEnhancedDescriptors: with DMA_CH_Tx_Control.EDSE the channel reads
// 32-byte descriptors, TDES4-7 (launch time) first, as stmmac sets up the TX
// queues dwmac-intel marks tbs_en (1 and up).
func TestTxEnhancedDescriptors(t *testing.T) {
	r := newRig(t, testCfg())
	require.Equal(t, uint32(tTBSSEL), r.Rd(tHWF3)&tTBSSEL, "the Intel mGbE advertises TBS")
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	const n = 4
	ring, err := r.A.Alloc(n*tEnhDesc, 0)
	require.NoError(t, err)
	bufs, err := r.A.Alloc(n*bufSize, 0)
	require.NoError(t, err)
	b := tCh(1)
	r.Wr(b+tTxBaseHi, uint32(ring.IOVA>>32))
	r.Wr(b+tTxBaseLo, uint32(ring.IOVA))
	r.Wr(b+tTxLen, n-1)
	r.Wr(b+tTxTail, uint32(ring.IOVA))
	r.Wr(b+tTxCtrl, tEDSE)
	require.Equal(t, uint32(tEDSE), r.Rd(b+tTxCtrl)&tEDSE, "EDSE reads back set (dwmac4_enable_tbs checks it)")
	r.Wr(b+tTxCtrl, tEDSE|tST)
	put := func(i, ln int, des4 uint32) {
		d := ring.CPU[i*tEnhDesc : (i+1)*tEnhDesc]
		clear(d)
		binary.LittleEndian.PutUint32(d[0:], des4)
		a := bufs.IOVA + uint64(i*bufSize)
		f := frame(peerMAC, ln)
		copy(bufs.CPU[i*bufSize:], f)
		binary.LittleEndian.PutUint32(d[16:], uint32(a))
		binary.LittleEndian.PutUint32(d[20:], uint32(a>>32))
		binary.LittleEndian.PutUint32(d[24:], uint32(ln))
		binary.LittleEndian.PutUint32(d[28:], tOWN|tFD|tLD|uint32(ln))
		r.A.Sync(bufs, i*bufSize, ln, dma.ForDevice)
		r.A.Sync(ring, i*tEnhDesc, tEnhDesc, dma.ForDevice)
	}
	put(0, 60, 0)
	put(1, 333, 0)
	r.Wr(b+tTxTail, uint32(ring.IOVA)+2*tEnhDesc)
	require.Len(t, cap.frames, 2)
	require.Equal(t, frame(peerMAC, 60), cap.frames[0])
	require.Equal(t, frame(peerMAC, 333), cap.frames[1])
	require.Equal(t, uint32(ring.IOVA)+2*tEnhDesc, r.Rd(b+tCurTx), "the current descriptor moves 32 bytes a frame")
	r.A.Sync(ring, 0, n*tEnhDesc, dma.ForCPU)
	require.Zero(t, binary.LittleEndian.Uint32(ring.CPU[28:])&tOWN, "OWN cleared in TDES3 of the normal part")
	require.NoError(t, r.m.Err())

	// A 16-byte stride tail is not on a descriptor boundary any more.
	r.Wr(b+tTxTail, uint32(ring.IOVA)+2*tEnhDesc+16)
	require.Error(t, r.m.Err(), "tail between enhanced descriptors accepted")
	r.m.FaultLog().Clear()

	// A launch time while the system time does not run (TSENA clear) would
	// hold the frame for ever: refused, not sent (txmeta_test.go has launch
	// times that are honoured).
	put(2, 100, tLTV|5)
	r.Wr(b+tTxTail, uint32(ring.IOVA)+3*tEnhDesc)
	require.Len(t, cap.frames, 2, "a frame with a launch time went out")
	require.ErrorContains(t, r.m.Err(), "launch time while the system time does not run")
	r.m.FaultLog().Clear()

	// EDSE may not change while the channel runs.
	r.Wr(b+tTxCtrl, tST)
	require.ErrorContains(t, r.m.Err(), "EDSE changed")
}

// TestEDSEReservedWithoutTBS: on a core without TBS (the i.MX8MP model) EDSE
// is reserved and reads back 0, so stmmac's check sees it did not take.
func TestEDSEReservedWithoutTBS(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	r := newRig(t, cfg)
	require.Zero(t, r.Rd(tHWF3)&tTBSSEL)
	r.Wr(tCh(0)+tTxCtrl, tEDSE)
	require.Zero(t, r.Rd(tCh(0)+tTxCtrl)&tEDSE)
	require.NoError(t, r.m.Err())
}

// TestReservedMACAddressEntries: stmmac clears all 128 MAC address entries;
// entries beyond the core's read 0 and ignore writes, but enabling one (AE) is
// a fault: that address would never match.
func TestReservedMACAddressEntries(t *testing.T) {
	r := newRig(t, testCfg())
	n := r.Rd(tHWF0)>>18&0x1f + 1
	for e := n; e < 128; e++ {
		r.Wr(tAddrHi0+8*e, 0)
		r.Wr(tAddrLo0+8*e, 0)
	}
	require.NoError(t, r.m.Err())
	require.Zero(t, r.Rd(tAddrHi0+8*n))
	r.Wr(tAddrHi0+8*n, tAddrAE|0x1234)
	require.ErrorContains(t, r.m.Err(), "never match")
}

// TestGPIOStatus: dwmac-intel selects the PTP clock through MAC_GPIO_Status
// GPO bits (31:16); the input bits (15:0) are read-only.
func TestGPIOStatus(t *testing.T) {
	r := newRig(t, testCfg())
	r.Wr(tGPIO, 0x00a5_ffff)
	require.Equal(t, uint32(0x00a5_0000), r.Rd(tGPIO))
	require.NoError(t, r.m.Err())
	cfg := testCfg()
	cfg.Variant = IMX8MP
	r2 := newRig(t, cfg)
	r2.Rd(tGPIO)
	require.Error(t, r2.m.Err(), "the i.MX8MP model has no GPIO register")
}

// TestSerDes: dwmac-intel reads the SGMII SerDes at MDIO 0x15 for its link
// mode (1G here: 2.5G would make phylink refuse the PHY) and, on TGL/EHL SGMII,
// powers it up by setting GCR0 bits and polling GSR0 for them. Without the
// xPCS (NoXPCS) there is no SerDes either.
func TestSerDes(t *testing.T) {
	const pa, gcr, gsr0, gcr0 = 0x15, 0x0, 0x5, 0xb
	r := newRig(t, testCfg())
	require.Equal(t, uint16(0x2), r.phyRead(pa, gcr)>>1&0x3, "1G link mode left by firmware")
	require.Equal(t, uint16(0x5), r.phyRead(pa, gsr0)&0x77, "PLL clock and lane up, power state P0")
	r.phyWrite(pa, gcr0, r.phyRead(pa, gcr0)&^0x5|0x30) // power down: P3, no clock, lane reset
	require.Equal(t, uint16(0x30), r.phyRead(pa, gsr0)&0x77, "GSR0 follows GCR0")
	require.Equal(t, uint16(0xffff), r.phyRead(pa, 0x3), "an unknown SerDes register")
	require.NoError(t, r.m.Err())

	cfg := testCfg()
	cfg.NoXPCS = true
	r2 := newRig(t, cfg)
	require.Equal(t, uint16(0xffff), r2.phyRead(pa, gcr), "no SerDes without the xPCS")
	_, err := New(Config{PHYAddr: 0x15})
	require.ErrorIs(t, err, ErrConfig, "a PHY on the SerDes's address")
}

// TestVLANPrioritySteering: MAC_RxQ_Ctrl2/3 PSRQn route a C-VLAN priority to
// queue n; a priority two queues select is a fault.
func TestVLANPrioritySteering(t *testing.T) {
	const tRxqCtrl2, tRxqCtrl3 = 0xa8, 0xac
	r := newRig(t, testCfg())
	m := r.m
	tag := func(prio byte) []byte {
		f := make([]byte, 64)
		f[12], f[13], f[14] = 0x81, 0x00, prio<<5
		return f
	}
	r.Wr(tRxqCtrl2, 1<<(8*2+5)) // priority 5 to queue 2
	r.Wr(tRxqCtrl3, 1<<(8*2+7)) // priority 7 to queue 6 (the ADL-S has 6 RX queues: no queue 6)
	m.mu.Lock()
	got := []int{m.steerLocked(tag(5)), m.steerLocked(tag(3)), m.steerLocked(tag(7)), m.steerLocked(make([]byte, 64))}
	m.mu.Unlock()
	require.Equal(t, []int{2, 0, 0, 0}, got, "priority 5, unselected 3, 7 beyond the queues, untagged")
	require.NoError(t, m.Err())
	r.Wr(tRxqCtrl2, 1<<(8*2+5)|1<<(8*1+5))
	m.mu.Lock()
	q := m.steerLocked(tag(5))
	m.mu.Unlock()
	require.Equal(t, 1, q, "the lower queue wins")
	require.ErrorContains(t, m.Err(), "selected by RX queues 1 and 2")
}
