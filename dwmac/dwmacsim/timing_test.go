package dwmacsim

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// Deliberately broken drivers against the device's own time: each must be
// caught (a fault or a visibly wrong frame) while the same steps done right
// pass. MDIO while GB is set and access during SWR are in TestMDIO and
// TestSoftwareReset*; a status bit left set holding the line in
// TestSingleVector.

// TestBrokenDriverReclaimEarly: a TX buffer reused right after the tail write,
// before the write-back clears OWN, puts the new bytes on the wire
// (simtest.ReclaimEarly).
func TestBrokenDriverReclaimEarly(t *testing.T) {
	cfg := testCfg()
	cfg.Sched = simtest.SlowDevice // the overwrite certainly comes first
	good := newRig(t, testCfg())
	simtest.ReclaimEarly(t, txPlay(newRig(t, cfg)), txPlay(good), func(i int) []byte {
		f := frame(peerMAC, 100)
		f[20] = byte(i)
		return f
	}, 30, 5)
	require.NoError(t, good.m.Err())
}

// txPlay brings r up with TX channel 0 as simtest.ReclaimEarly drives it: the
// doorbell is the tail pointer, the write-back clears OWN.
func txPlay(r *rig) simtest.TxPlay {
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	return simtest.TxPlay{
		Send: func(f []byte) int {
			k := tx.queue(f, false)
			tx.r.WrRaw(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32(tx.tail*16))
			return k
		},
		Rewrite: func(k int, f []byte) {
			copy(tx.bufs.CPU[k*bufSize:], f)
			r.A.Sync(tx.bufs, k*bufSize, len(f), dma.ForDevice)
		},
		Done: func(k int) bool { return tx.des3(k)&tOWN == 0 },
		Wire: func() [][]byte {
			f := cap.frames
			cap.frames = nil
			return f
		},
		Settle: r.m.Settle,
		Poll:   func() { r.Rd(tCh(0) + tStatus) },
	}
}

// TestBrokenDriverRxOwnFirst: stmmac hands the whole RX ring over with the
// tail, so OWN alone gives a descriptor to the DMA. A refill that sets OWN
// before writing the buffer address lets a frame arriving in between land in
// the old buffer; the new one stays empty.
func TestBrokenDriverRxOwnFirst(t *testing.T) {
	for _, broken := range []bool{false, true} {
		r := newRig(t, testCfg())
		r.bringUp()
		rx := r.setupRx(0, 4, 1536)
		// Four frames fill the ring; the DMA wraps to descriptor 0, which the
		// driver takes and refills (the same buffer: the write-back replaced
		// RDES0, so the address must be written again).
		for i := 0; i < 4; i++ {
			require.True(t, r.m.Inject(frame(factoryMAC, 80)))
		}
		require.Zero(t, rx.des3(0)&tOWN)
		d := rx.ring.CPU[0:16]
		newBuf := rx.bufAddr(0)
		syncD := func() { r.A.Sync(rx.ring, 0, 16, dma.ForDevice) }
		second := frame(factoryMAC, 90)
		second[30] = 0x5a
		if broken {
			binary.LittleEndian.PutUint32(d[12:], tOWN|tBUF1V|tRxIOC)
			syncD()
		} else {
			binary.LittleEndian.PutUint32(d[0:], uint32(newBuf))
			binary.LittleEndian.PutUint32(d[4:], uint32(newBuf>>32))
			binary.LittleEndian.PutUint32(d[8:], 0)
			syncD()
			binary.LittleEndian.PutUint32(d[12:], tOWN|tBUF1V|tRxIOC)
			syncD()
		}
		// Suspended with RBU at descriptor 0: the tail write resumes it, then
		// the frame arrives while the driver is between its writes.
		rx.tailTo(4)
		delivered := r.m.Inject(second)
		if broken {
			binary.LittleEndian.PutUint32(d[0:], uint32(newBuf))
			binary.LittleEndian.PutUint32(d[4:], uint32(newBuf>>32))
			syncD()
		}
		got := rx.buf(0, len(second))
		t.Logf("broken %v: delivered %v, frame in the new buffer %v, faults %v", broken, delivered, bytes.Equal(got, second), r.m.Faults())
		if broken {
			require.False(t, delivered && bytes.Equal(got, second) && r.m.Err() == nil, "OWN before the address: the frame must not land in the new buffer unnoticed")
		} else {
			require.True(t, delivered)
			require.Equal(t, second, got, "refilled in order: the frame lands in the new buffer")
			require.NoError(t, r.m.Err())
		}
	}
}

// TestBrokenDriverTailBeforeDescriptor: moving the TX tail before writing the
// descriptor hands the running DMA a descriptor it fetches at once; finishing
// it afterwards is a fault even when the DMA gets to the frame later.
func TestBrokenDriverTailBeforeDescriptor(t *testing.T) {
	for _, broken := range []bool{false, true} {
		cfg := testCfg()
		if broken {
			cfg.Sched = simtest.SlowDevice // the DMA's fetch at the tail write catches it
		}
		r := newRig(t, cfg)
		r.bringUp()
		var cap capture
		r.m.SetTransmit(cap.fn)
		tx := r.setupTx(0, 8)
		f := frame(peerMAC, 100)
		i := tx.tail
		copy(tx.bufs.CPU[i*bufSize:], f)
		tail := func() {
			tx.tail = (tx.tail + 1) % tx.n
			tx.r.WrRaw(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32(tx.tail*16))
		}
		if broken {
			tail()
			tx.put(i, len(f), 0, tOWN|tFD|tLD, len(f))
		} else {
			tx.put(i, len(f), 0, tOWN|tFD|tLD, len(f))
			tail()
		}
		r.m.Settle()
		if broken {
			// Either the DMA fetched the unwritten descriptor (no OWN: TBU,
			// the frame never goes) or the one it fetched changed: a fault.
			lost := len(cap.frames) == 0 && r.Rd(tCh(0)+tStatus)&tTBU != 0
			require.True(t, lost || r.m.Err() != nil && strings.Contains(r.m.Err().Error(), "changed after the tail write"),
				"descriptor written after the tail: sent %d frames, faults %v", len(cap.frames), r.m.Faults())
			continue
		}
		require.Equal(t, [][]byte{f}, cap.frames)
		require.NoError(t, r.m.Err())
	}
}
