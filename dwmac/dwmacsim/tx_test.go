package dwmacsim

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// capture collects transmitted frames (copies: the frame is valid only during
// the call).
type capture struct{ frames [][]byte }

func (c *capture) fn(f []byte) { c.frames = append(c.frames, append([]byte(nil), f...)) }

func TestTxSeveralFrames(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	require.Zero(t, r.Rd(tCh(0)+tStatus)&tTBU, "start with tail == base fetches nothing")

	frames := [][]byte{frame(bcast, 60), frame(peerMAC, 100), frame(peerMAC, 1514)}
	for i, f := range frames {
		tx.queue(f, i == len(frames)-1)
	}
	require.Empty(t, cap.frames, "nothing is sent before the tail write")
	tx.kick()
	require.Len(t, cap.frames, 3)
	for i, f := range frames {
		require.Equal(t, f, cap.frames[i])
		d3 := tx.des3(i)
		require.Zero(t, d3&tOWN, "OWN handed back on descriptor %d", i)
		require.Equal(t, uint32(tFD|tLD), d3&(tFD|tLD|tES|tDE), "write-back of descriptor %d", i)
	}
	require.Equal(t, uint32(0), r.Rd(tCh(0)+tStatus)&tTBU, "stopped at the tail, not at a descriptor without OWN")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tTI, "IOC on the last frame sets TI")
	require.Equal(t, uint32(tx.ring.IOVA)+3*16, r.Rd(tCh(0)+tCurTx))

	// A second burst continues from the current pointer.
	tx.queue(frame(peerMAC, 200), false)
	tx.kick()
	require.Len(t, cap.frames, 4)
	require.Equal(t, 200, len(cap.frames[3]))

	// MMC counts them, with the FCS.
	require.Equal(t, uint32(4), r.Rd(tMMC+tMMCTxFrGB))
	require.Equal(t, uint32(60+100+1514+200+4*4), r.Rd(tMMC+tMMCTxOctGB))
	require.Equal(t, uint64(4), r.m.Counters().TxFrames)
	require.NoError(t, r.m.Err())
}

var (
	bcast   = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	peerMAC = []byte{0x02, 0x99, 0x88, 0x77, 0x66, 0x55}
)

func TestTxPadAndMultiDescriptor(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)

	// A 42-byte frame is padded to 60.
	tx.queue(frame(peerMAC, 42), false)
	// A 300-byte frame in three descriptors: FD on the first, LD on the last,
	// FL = 300 in the first; OWN of the first set last.
	f := frame(peerMAC, 300)
	parts := []int{100, 150, 50}
	start := tx.tail
	off := 0
	for k, ln := range parts {
		i := (start + k) % tx.n
		copy(tx.bufs.CPU[i*bufSize:], f[off:off+ln])
		off += ln
		var d3 uint32 = tOWN
		if k == 0 {
			d3 |= tFD
		}
		if k == len(parts)-1 {
			d3 |= tLD
		}
		tx.put(i, ln, 0, d3, 300)
	}
	tx.tail = (start + 3) % tx.n
	tx.kick()
	require.Len(t, cap.frames, 2)
	require.Len(t, cap.frames[0], 60)
	require.True(t, bytes.Equal(cap.frames[0][42:], make([]byte, 18)), "padding is zeros")
	require.Equal(t, f, cap.frames[1])
	require.Equal(t, uint32(tFD), tx.des3(start)&(tFD|tLD|tOWN))
	require.Equal(t, uint32(0), tx.des3(start+1)&(tFD|tLD|tOWN))
	require.Equal(t, uint32(tLD), tx.des3(start+2)&(tFD|tLD|tOWN))
	require.NoError(t, r.m.Err())
}

func TestTxWrapAndTBU(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 4)
	sent := 0
	for round := 0; round < 5; round++ { // wraps the 4-entry ring several times
		for k := 0; k < 3; k++ {
			tx.queue(frame(peerMAC, 64+sent), false)
			sent++
		}
		tx.kick()
		require.Len(t, cap.frames, sent)
	}
	for i, f := range cap.frames {
		require.Len(t, f, 64+i)
	}

	// A tail moved past a descriptor software did not hand over (no OWN): TBU,
	// and the DMA suspends there until the next tail write.
	i := tx.tail
	binary.LittleEndian.PutUint32(tx.ring.CPU[i*16+12:], 0)
	tx.tail = (tx.tail + 1) % tx.n
	tx.kick()
	require.Len(t, cap.frames, sent)
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tTBU)
	r.Wr(tCh(0)+tStatus, tTBU)
	require.Zero(t, r.Rd(tCh(0)+tStatus)&tTBU, "TBU is write-1-to-clear")
	// Hand it over and write the tail again: the DMA resumes there.
	copy(tx.bufs.CPU[i*bufSize:], frame(peerMAC, 70))
	tx.put(i, 70, 0, tOWN|tFD|tLD, 70)
	tx.kick()
	require.Len(t, cap.frames, sent+1)
	require.NoError(t, r.m.Err())
}

func TestTxWaitsForTEAndLD(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	r.Wr(tMACConfig, tRE|tDM) // TE clear: the MTL holds the frames
	tx := r.setupTx(0, 8)
	tx.queue(frame(peerMAC, 60), false)
	tx.kick()
	require.Empty(t, cap.frames)
	r.Wr(tMACConfig, tRE|tTE|tDM)
	require.Len(t, cap.frames, 1, "setting TE resumes the DMA")

	// A frame whose LD is beyond the tail waits.
	i := tx.tail
	tx.put(i, 60, 0, tOWN|tFD, 120)
	tx.put((i+1)%tx.n, 60, 0, tOWN|tLD, 120)
	r.Wr(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32((i+1)*16))
	require.Len(t, cap.frames, 1)
	r.Wr(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32((i+2)*16))
	require.Len(t, cap.frames, 2)
	require.Len(t, cap.frames[1], 120)
	require.NoError(t, r.m.Err())
}

func TestTxFaults(t *testing.T) {
	cases := []struct {
		name       string
		des2, des3 uint32
		ln, fl     int
		want       string
	}{
		{"no FD", 0, tOWN | tLD, 60, 60, "without FD"},
		{"length 0", 0, tOWN | tFD | tLD, 0, 0, "length 0"},
		{"FL mismatch", 0, tOWN | tFD | tLD, 60, 61, "differs"},
		{"context", 0, tOWN | tCTXT, 60, 60, "context descriptor"},
		{"checksum without TXCOESEL", 0, tOWN | tFD | tLD | 3<<16, 60, 60, "TXCOESEL"},
		{"buffer 2", 10 << 16, tOWN | tFD | tLD, 60, 60, "buffer 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.NoTxCOE = true
			r := newRig(t, cfg)
			require.Zero(t, r.Rd(tHWF0)&(1<<14), "NoTxCOE: TXCOESEL reads 0")
			r.bringUp()
			var cap capture
			r.m.SetTransmit(cap.fn)
			tx := r.setupTx(0, 4)
			tx.put(0, tc.ln, tc.des2, tc.des3, tc.fl)
			tx.tail = 1
			tx.kick()
			require.Empty(t, cap.frames)
			r.expectFault(tc.want)
			d3 := tx.des3(0)
			require.Zero(t, d3&tOWN, "the bad descriptor is handed back")
			if tc.des3&tCTXT != 0 { // tso.go: CDE in a context descriptor's write-back
				require.Equal(t, uint32(tCTXT|1<<23), d3&(tCTXT|tDE|tES|1<<23))
			} else {
				require.Equal(t, uint32(tDE|tES), d3&(tDE|tES))
			}
			// The ring keeps moving.
			tx.queue(frame(peerMAC, 60), false)
			tx.kick()
			require.Len(t, cap.frames, 1)
			require.NoError(t, r.m.Err())
		})
	}
}

func TestTxTXQENAndEAME(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	r.Wr(tMTLTxOp0, tTSF) // TXQEN 0
	tx := r.setupTx(0, 4)
	tx.queue(frame(peerMAC, 60), false)
	tx.kick()
	require.Empty(t, cap.frames)
	r.expectFault("TXQEN")
	r.Wr(tMTLTxOp0, tTSF|tTXQEN)
	require.Len(t, cap.frames, 1, "enabling the queue resumes the DMA")

	// EAME off while the ring lies above 4 GiB: starting the channel is refused.
	r.Wr(tCh(0)+tTxCtrl, 0)
	r.m.FaultLog().Clear()
	r.Wr(tSysBus, 0)
	r.Wr(tCh(0)+tTxCtrl, tST)
	r.expectFault("EAME is off")
	require.Zero(t, r.Rd(tCh(0)+tTxCtrl)&tST, "the refused start leaves ST clear")
}

func TestTxBufferHighBitsWithoutEAME(t *testing.T) {
	cfg := testCfg()
	cfg.Below4G = true
	r := newRig(t, cfg)
	r.bringUp()
	r.Wr(tSysBus, 0) // everything is below 4 GiB: no EAME needed
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 4)
	tx.queue(frame(peerMAC, 60), false)
	tx.kick()
	require.Len(t, cap.frames, 1)
	require.NoError(t, r.m.Err())
	i := tx.queue(frame(peerMAC, 60), false)
	binary.LittleEndian.PutUint32(tx.ring.CPU[i*16+4:], 1) // DES1: address bit 32
	tx.kick()
	require.Len(t, cap.frames, 1)
	r.expectFault("EAME off")
}

func TestTxBusMasterOff(t *testing.T) {
	cfg := testCfg()
	m, err := New(cfg)
	require.NoError(t, err)
	r := &rig{Rig: simtest.NewRigOff(t, m), m: m}
	r.bringUp()
	tx := r.setupTx(0, 4)
	tx.queue(frame(peerMAC, 60), false)
	tx.kick()
	r.expectFault("bus mastering is disabled")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tFBE, "a refused DMA is a fatal bus error")
	require.Equal(t, uint32(1<<16), r.Rd(tCh(0)+tStatus)&(7<<16), "TEB: a read transfer")
	// Restart the channel the way stmmac_tx_err does, with bus mastering on.
	require.NoError(t, m.Device().EnableBusMaster())
	var cap capture
	m.SetTransmit(cap.fn)
	r.Wr(tCh(0)+tTxCtrl, 0)
	r.Wr(tCh(0)+tStatus, 0xffffffff)
	r.Wr(tCh(0)+tTxBaseLo, uint32(tx.ring.IOVA))
	tx.tail = 0
	tx.queue(frame(peerMAC, 60), false)
	r.Wr(tCh(0)+tTxTail, uint32(tx.ring.IOVA))
	r.Wr(tCh(0)+tTxCtrl, tST)
	tx.kick()
	require.Len(t, cap.frames, 1)
}

// TestBackToBack joins an Intel mGbE model and an i.MX8MP model with an
// in-memory wire: what one transmits, the other receives.
func TestBackToBack(t *testing.T) {
	a := newRig(t, testCfg())
	cfgB := testCfg()
	cfgB.Variant = IMX8MP
	cfgB.NonCoherent = true
	cfgB.MAC = peerMAC
	b := newRig(t, cfgB)
	ea, eb := sim.NewPair()
	a.m.Attach(ea)
	b.m.Attach(eb)
	a.bringUp()
	b.bringUp()
	rxB := b.setupRx(0, 8, 1536)
	txA := a.setupTx(0, 8)
	f := frame(peerMAC, 200)
	txA.queue(f, true)
	txA.kick()
	require.Equal(t, uint32(204), rxB.des3(0)&0x7fff)
	require.Equal(t, f, rxB.buf(0, 200))
	require.Equal(t, uint64(1), b.m.Counters().RxFrames)
	require.NoError(t, a.m.Err())
	require.NoError(t, b.m.Err())
}

func TestTxNonCoherentNeedsSync(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	cfg.NonCoherent = true
	r := newRig(t, cfg)
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 4)
	// A descriptor written without Sync(ForDevice): the device reads its own,
	// stale copy (OWN clear) and reports TBU.
	f := frame(peerMAC, 60)
	copy(tx.bufs.CPU, f)
	d := tx.ring.CPU[0:16]
	binary.LittleEndian.PutUint32(d[0:], uint32(tx.bufAddr(0)))
	binary.LittleEndian.PutUint32(d[4:], uint32(tx.bufAddr(0)>>32))
	binary.LittleEndian.PutUint32(d[8:], 60)
	binary.LittleEndian.PutUint32(d[12:], tOWN|tFD|tLD|60)
	tx.tail = 1
	tx.kick()
	require.Empty(t, cap.frames)
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tTBU)
	// Synced (buffer and descriptor), the same tail write sends it.
	tx.put(0, 60, 0, tOWN|tFD|tLD, 60)
	tx.kick()
	require.Len(t, cap.frames, 1)
	require.Equal(t, f, cap.frames[0])
	// Without Sync(ForCPU) the CPU's copy still shows OWN.
	require.NotZero(t, binary.LittleEndian.Uint32(tx.ring.CPU[12:])&tOWN)
	require.Zero(t, tx.des3(0)&tOWN)
	require.NoError(t, r.m.Err())
}

// TestTxDMAErrorAfterGoodFrames: frames before an unmapped buffer are sent and
// written back; the refused one stops the channel with FBE.
func TestTxDMAErrorAfterGoodFrames(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	tx.queue(frame(peerMAC, 60), false)
	tx.queue(frame(peerMAC, 61), false)
	i := tx.queue(frame(peerMAC, 62), false)
	binary.LittleEndian.PutUint32(tx.ring.CPU[i*16+4:], 0x99) // DES1: nowhere
	tx.kick()
	require.Len(t, cap.frames, 2)
	require.Zero(t, tx.des3(0)&tOWN)
	require.Zero(t, tx.des3(1)&tOWN)
	require.NotZero(t, tx.des3(2)&tOWN, "the refused descriptor stays the device's")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tFBE)
	r.expectFault("not inside a live mapping")
}
