package dwmacsim

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
)

func TestRxWriteBackWithFCS(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	rx := r.setupRx(0, 8, 1536)
	f := frame(factoryMAC, 100)
	require.True(t, r.m.Inject(f))
	d3 := rx.des3(0)
	require.Zero(t, d3&tOWN, "OWN cleared")
	require.Equal(t, uint32(tFD|tLD), d3&(tFD|tLD|tES))
	require.Equal(t, uint32(104), d3&0x7fff, "PL counts the 4-byte FCS (ACS/CST clear)")
	require.Equal(t, uint32(1), d3>>16&7, "LT: type frame")
	got := rx.buf(0, 104)
	require.Equal(t, f, got[:100])
	require.Equal(t, crc32.ChecksumIEEE(f), binary.LittleEndian.Uint32(got[100:]), "the FCS follows the frame")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRI, "IOC sets RI")
	require.Equal(t, uint32(rx.ring.IOVA)+16, r.Rd(tCh(0)+tCurRx))

	// CST strips the FCS of type frames.
	r.Wr(tMACConfig, r.Rd(tMACConfig)|tCST)
	require.True(t, r.m.Inject(f))
	require.Equal(t, uint32(100), rx.des3(1)&0x7fff)
	require.Equal(t, uint32(2), r.Rd(tMMC+tMMCRxUcast), "MMC unicast counter")
	require.NoError(t, r.m.Err())
}

// A frame that finds no descriptor sets RBU and waits in its MTL RX queue's
// FIFO (RQS+1 units of 256 bytes); the tail write resumes the DMA, which takes
// the waiting frames first. Only a frame the full FIFO cannot take is dropped,
// counted in OVFPKTCNT and MMC rx_fifo_overflow; the DMA's missed-frame
// counters stay zero (they count flushed frames).
func TestRxRBUAndResume(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	rx := r.setupRx(0, 4, 1536)
	for i := 0; i < 4; i++ {
		require.True(t, r.m.Inject(frame(factoryMAC, 60+i)), "frame %d", i)
	}
	// The ring is full of frames software has not taken back: RBU, the
	// frame waits.
	waiting := frame(factoryMAC, 70)
	require.True(t, r.m.Inject(waiting))
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRBU)
	require.Equal(t, 1, r.m.RxHeld())
	require.Zero(t, r.Rd(tCh(0)+tMissFrame)&0x7ff, "DMA_CH_Miss_Frame_Cnt")
	require.Zero(t, r.Rd(tMTLMissed0), "MTL missed and overflow counters")
	// Still suspended until a tail write, even once a descriptor is posted.
	rx.post(0)
	require.True(t, r.m.Inject(frame(factoryMAC, 71)))
	require.Equal(t, 2, r.m.RxHeld())
	rx.tailTo(1)
	require.Equal(t, 1, r.m.RxHeld(), "the tail write resumes the DMA: the first waiting frame")
	require.Zero(t, rx.des3(0)&tOWN)
	require.Equal(t, waiting, rx.buf(0, len(waiting)))
	// Fill the FIFO: the next frame overflows it.
	size := (int(r.Rd(tMTLRxOp0)>>20&0x3ff) + 1) * 256
	held := 1
	for r.m.Inject(frame(factoryMAC, 60)) {
		held++
		require.Less(t, held, 1000, "the FIFO never fills")
	}
	// The 71-byte frame takes 80 bytes (FCS, 8-byte words), each 60-byte one 64.
	require.Equal(t, 1+(size-80)/64, held, "frames a %d-byte FIFO holds", size)
	v := r.Rd(tMTLMissed0)
	require.Equal(t, uint32(1), v&0x7ff, "OVFPKTCNT")
	require.Zero(t, v>>16&0x7ff, "MISPKTCNT")
	require.Equal(t, uint32(1), r.Rd(tMMC+tMMCRxFIFOOvf), "MMC rx_fifo_overflow")
	r.Wr(tCh(0)+tStatus, tRBU|tRI|tNIS|tAIS)
	require.Zero(t, r.Rd(tCh(0)+tStatus)&(tRBU|tRI), "W1C")
	require.NoError(t, r.m.Err())
}

func TestRxWrapLikeStmmac(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	const n = 8
	rx := r.setupRx(0, n, 1536)
	// Receive 5 rings' worth, refilling each descriptor as soon as it is
	// read and writing tail = base + dirty*16 (stmmac_rx_refill).
	next := 0
	for i := 0; i < 5*n; i++ {
		f := frame(factoryMAC, 60+i)
		require.True(t, r.m.Inject(f), "frame %d", i)
		d3 := rx.des3(next)
		require.Zero(t, d3&tOWN)
		require.Equal(t, uint32(60+i+4), d3&0x7fff)
		require.Equal(t, f, rx.buf(next, 60+i))
		rx.post(next)
		next = (next + 1) % n
		rx.tailTo(next)
	}
	require.Equal(t, uint64(5*n), r.m.Counters().RxFrames)
	require.Equal(t, uint32(5*n), r.Rd(tMMC+tMMCRxFrGB))
	require.NoError(t, r.m.Err())
}

func TestRxMultiDescriptor(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	rx := r.setupRx(0, 8, 512)
	f := frame(factoryMAC, 1200) // 1204 with FCS: 512 + 512 + 180
	require.True(t, r.m.Inject(f))
	require.Equal(t, uint32(tFD), rx.des3(0)&(tFD|tLD|tOWN))
	require.Equal(t, uint32(0), rx.des3(1)&(tFD|tLD|tOWN))
	d3 := rx.des3(2)
	require.Equal(t, uint32(tLD), d3&(tFD|tLD|tOWN))
	require.Equal(t, uint32(1204), d3&0x7fff, "PL on the last descriptor is the whole frame")
	got := append(append(append([]byte{}, rx.buf(0, 512)...), rx.buf(1, 512)...), rx.buf(2, 180)...)
	require.Equal(t, f, got[:1200])
	require.NoError(t, r.m.Err())
}

func TestRxQueueDisabledAndStopped(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.Wr(tRxqCtrl0, 0) // queue 0 not enabled
	r.setupRx(0, 4, 1536)
	require.False(t, r.m.Inject(frame(factoryMAC, 60)))
	require.Equal(t, uint64(1), r.m.Counters().RxOverflow)
	require.Equal(t, uint32(1), r.Rd(tMTLMissed0)&0x7ff, "MTL overflow count")
	require.Equal(t, uint32(1), r.Rd(tMMC+tMMCRxFIFOOvf))
	r.Wr(tRxqCtrl0, 1) // AV mode also enables it
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	// Stopping SR raises RPS and drops.
	r.Wr(tCh(0)+tRxCtrl, 1536<<1)
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRPS)
	require.False(t, r.m.Inject(frame(factoryMAC, 60)))
	require.NoError(t, r.m.Err())
}

func TestRxQueueMapAndLinkGates(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.Wr(tRxqCtrl0, 2|2<<2)   // queues 0 and 1
	r.Wr(tRxqDMAMap0, 0|1<<8) // queue 1 to channel 1
	rx1 := r.setupRx(1, 4, 1536)
	require.True(t, r.m.InjectQueue(1, frame(factoryMAC, 60)))
	require.Zero(t, rx1.des3(0)&tOWN)
	require.False(t, r.m.Inject(frame(factoryMAC, 60)), "channel 0 has no ring")

	// Speed mismatch: the MAC at 100 Mb/s, the PHY at 1000.
	r.Wr(tMACConfig, tRE|tTE|tDM|tPS|tFES)
	before := r.m.Counters().RxNoLink
	require.False(t, r.m.InjectQueue(1, frame(factoryMAC, 60)))
	require.Equal(t, before+1, r.m.Counters().RxNoLink)
	// RE clear.
	r.Wr(tMACConfig, tTE|tDM)
	require.False(t, r.m.InjectQueue(1, frame(factoryMAC, 60)))
	require.NoError(t, r.m.Err())
}

func TestRxFilter(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.setupRx(0, 16, 1536)
	other := []byte{0x02, 0, 0, 0, 0, 9}
	mc := []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	require.True(t, r.m.Inject(frame(factoryMAC, 60)), "own unicast")
	require.True(t, r.m.Inject(frame(bcast, 60)), "broadcast")
	require.False(t, r.m.Inject(frame(other, 60)), "other unicast")
	require.False(t, r.m.Inject(frame(mc, 60)), "multicast not in the hash")
	require.Equal(t, uint64(2), r.m.Counters().RxFiltered)

	// Hash filter: bit = top 6 bits of the bit-reversed CRC-32 of the address.
	crc := crc32.ChecksumIEEE(mc)
	var rev uint32
	for i := 0; i < 32; i++ {
		rev |= (crc >> i & 1) << (31 - i)
	}
	h := rev >> 26
	r.Wr(tHash0+4*(h>>5), 1<<(h&31))
	r.Wr(tPktFilter, tHMC)
	require.True(t, r.m.Inject(frame(mc, 60)), "multicast with its hash bit")
	r.Wr(tPktFilter, tPM)
	require.True(t, r.m.Inject(frame([]byte{0x01, 0, 0x5e, 1, 2, 3}, 60)), "pass all multicast")
	r.Wr(tPktFilter, tDBF)
	require.False(t, r.m.Inject(frame(bcast, 60)), "broadcast disabled")
	r.Wr(tPktFilter, tPR)
	require.True(t, r.m.Inject(frame(other, 60)), "promiscuous")

	// A new address takes effect when its low word is written.
	r.Wr(tPktFilter, 0)
	r.Wr(tAddrHi0, 0x0900)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)), "old address until the low word")
	r.Wr(tAddrLo0, 0x00000002)
	require.True(t, r.m.Inject(frame(other, 60)), "new address")
	require.False(t, r.m.Inject(frame(factoryMAC, 60)))
	require.NoError(t, r.m.Err())
}

func TestRxSizes(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.setupRx(0, 8, 2048-16)
	require.False(t, r.m.Inject(frame(factoryMAC, 40)), "runt")
	require.True(t, r.m.Inject(frame(factoryMAC, 1514)))
	require.False(t, r.m.Inject(frame(factoryMAC, 1515)), "oversize without JE")
	require.Equal(t, uint64(2), r.m.Counters().RxErrors)
	require.NoError(t, r.m.Err())
}

func TestRxDescriptorFaults(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	rx := r.setupRx(0, 4, 1536)
	binary.LittleEndian.PutUint32(rx.ring.CPU[12:], tOWN|tRxIOC) // no BUF1V
	require.False(t, r.m.Inject(frame(factoryMAC, 60)))
	r.expectFault("without BUF1V")
	d3 := rx.des3(0)
	require.Zero(t, d3&tOWN, "handed back")
	require.NotZero(t, d3&(1<<19), "RDES3.DE")
	require.True(t, r.m.Inject(frame(factoryMAC, 60)), "the next descriptor is used")
	require.NoError(t, r.m.Err())
}

func TestNonCoherent(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	cfg.NonCoherent = true
	r := newRig(t, cfg)
	r.bringUp()
	rx := r.setupRx(0, 4, 1536) // posts with Sync(ForDevice)
	f := frame(factoryMAC, 60)
	require.True(t, r.m.Inject(f))
	// Without Sync(ForCPU) the CPU still sees its own descriptor (OWN set).
	raw := binary.LittleEndian.Uint32(rx.ring.CPU[12:])
	require.NotZero(t, raw&tOWN, "the CPU's copy is stale until synced")
	require.Zero(t, rx.des3(0)&tOWN, "after Sync(ForCPU) the write-back is visible")

	// A descriptor written without Sync(ForDevice) is not seen by the device.
	binary.LittleEndian.PutUint32(rx.ring.CPU[16+12:], 0) // software takes it back...
	rx.r.A.Sync(rx.ring, 16, 16, dma.ForDevice)
	d := rx.ring.CPU[16:32]
	binary.LittleEndian.PutUint32(d[12:], tOWN|tBUF1V|tRxIOC) // ...and re-posts it without Sync
	rx.tailTo(2)
	require.True(t, r.m.Inject(f), "the device still sees OWN clear: the frame waits in the MTL FIFO")
	require.Equal(t, 1, r.m.RxHeld())
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRBU)
	require.ErrorContains(t, r.m.Err(), "RX descriptor 1 handed to the running DMA by the tail write without OWN",
		"the tail moved over a descriptor the device sees without OWN")
}

// TestRxTailBeforeFill: a driver that moves the RX tail first and fills the
// descriptors it covers afterwards is a fault at the tail write (the
// descriptors are not the DMA's yet) and, if it then fills them, again when
// the DMA uses one that changed since the tail write handed it over. The
// same refill in the right order (descriptors, then the tail) is clean.
func TestRxTailBeforeFill(t *testing.T) {
	for _, broken := range []bool{false, true} {
		r := newRig(t, testCfg())
		r.bringUp()
		rx := r.setupRx(0, 4, 1536)
		for i := 0; i < 3; i++ { // the DMA consumes 0..2, suspends at 3 (the tail is the ring's end)
			require.True(t, r.m.Inject(frame(factoryMAC, 60)))
		}
		if broken {
			rx.tailTo(3) // hands 0..2 back before refilling them
			for i := 0; i < 3; i++ {
				rx.post(i)
			}
		} else {
			for i := 0; i < 3; i++ {
				rx.post(i)
			}
			rx.tailTo(3)
		}
		require.True(t, r.m.Inject(frame(factoryMAC, 60))) // descriptor 3
		require.True(t, r.m.Inject(frame(factoryMAC, 60))) // descriptor 0, as refilled
		err := r.m.Err()
		if !broken {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, "handed to the running DMA by the tail write without OWN")
		require.ErrorContains(t, err, "RX descriptor 0 changed after the tail write")
	}
}

// TestStmmacOrder programs the channel in stmmac's order (stmmac_init_dma_engine
// then stmmac_set_rings_length, stmmac_set_dma_bfsize, start): the tail
// pointers before the ring lengths, RBSZ before SR.
func TestStmmacOrder(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	const n = 16
	rxr, err := r.A.Alloc(n*16, 0)
	require.NoError(t, err)
	bufs, err := r.A.Alloc(n*bufSize, 0)
	require.NoError(t, err)
	x := &rxRing{r: r, c: 0, ring: rxr, bufs: bufs, n: n, bsz: 1536}
	for i := 0; i < n; i++ {
		x.post(i)
	}
	txr, err := r.A.Alloc(n*16, 0)
	require.NoError(t, err)
	b := tCh(0)
	r.Wr(b+tChCtrl, 1<<16)                   // PBLx8
	r.Wr(b+tRxCtrl, 32<<16)                  // RxPBL
	r.Wr(b+tRxBaseHi, uint32(rxr.IOVA>>32))  // init_rx_chan
	r.Wr(b+tRxBaseLo, uint32(rxr.IOVA))      //
	r.Wr(b+tRxTail, uint32(rxr.IOVA)+n*16)   // rx_tail_addr = base + n*16
	r.Wr(b+tTxCtrl, 32<<16)                  // TxPBL
	r.Wr(b+tTxBaseHi, uint32(txr.IOVA>>32))  // init_tx_chan
	r.Wr(b+tTxBaseLo, uint32(txr.IOVA))      //
	r.Wr(b+tTxTail, uint32(txr.IOVA))        // tx_tail_addr = base
	r.Wr(b+tIntEn, tNIE|tAIE|tRI|tTI|1<<12)  // DMA_CHAN_INTR_DEFAULT_MASK_4_10
	r.Wr(b+tTxLen, n-1)                      // set_rings_length
	r.Wr(b+tRxLen, n-1)                      //
	r.Wr(b+tRxCtrl, r.Rd(b+tRxCtrl)|1536<<1) // set_bfsize
	r.Wr(b+tRxCtrl, r.Rd(b+tRxCtrl)|tSR)     // start_rx
	r.Wr(b+tTxCtrl, r.Rd(b+tTxCtrl)|tST)     // start_tx
	require.Zero(t, r.Rd(tCh(0)+tStatus)&tTBU, "TX started at its tail: suspended without a fetch")
	for i := 0; i < 2*n; i++ {
		require.True(t, r.m.Inject(frame(factoryMAC, 60)), "frame %d", i)
		x.post(i % n)
		x.tailTo((i + 1) % n) // tail = base + dirty*16 == cur: the DMA keeps running
	}
	require.NoError(t, r.m.Err())
}
