package dwmacsim

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim"
)

// Deliberately broken drivers against the device's own time: each must be
// caught (a fault or a visibly wrong frame) while the same steps done right
// pass. MDIO while GB is set and access during SWR are in TestMDIO and
// TestSoftwareReset*; a status bit left set holding the line in
// TestSingleVector.

// TestBrokenDriverReclaimEarly: a TX buffer reused right after the tail write,
// before the write-back clears OWN, puts the new bytes on the wire.
func TestBrokenDriverReclaimEarly(t *testing.T) {
	// A long latency: the overwrite certainly comes first, and Settle runs the
	// DMA on this goroutine (the race detector would rightly flag the broken
	// driver's write racing the DMA's read otherwise).
	cfg := testCfg()
	cfg.Sched = sim.SchedConfig{MinLatency: time.Hour, MaxLatency: time.Hour}
	r := newRig(t, cfg)
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	caught := false
	for i := 0; i < 30 && !caught; i++ {
		f, g := frame(peerMAC, 100), frame(peerMAC, 100)
		f[20], g[20] = byte(i), byte(i)+100
		cap.frames = nil
		k := tx.queue(f, false)
		tx.r.WrRaw(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32(tx.tail*16))
		copy(tx.bufs.CPU[k*bufSize:], g) // "done": reuse the buffer
		r.A.Sync(tx.bufs, k*bufSize, len(g), dma.ForDevice)
		r.m.Settle()
		require.Len(t, cap.frames, 1)
		caught = bytes.Equal(cap.frames[0], g)
		if !caught {
			require.Equal(t, f, cap.frames[0])
		}
	}
	require.True(t, caught, "the device never read a TX buffer after the tail write returned")

	// Done right: wait for OWN to clear before reusing the buffer.
	r = newRig(t, testCfg())
	r.bringUp()
	r.m.SetTransmit(cap.fn)
	tx = r.setupTx(0, 8)
	for i := 0; i < 5; i++ {
		f := frame(peerMAC, 100)
		f[20] = byte(i)
		cap.frames = nil
		k := tx.queue(f, false)
		tx.r.WrRaw(tCh(0)+tTxTail, uint32(tx.ring.IOVA)+uint32(tx.tail*16))
		deadline := time.Now().Add(time.Second)
		for tx.des3(k)&tOWN != 0 {
			require.True(t, time.Now().Before(deadline), "OWN never cleared")
			time.Sleep(10 * time.Microsecond)
			r.Rd(tCh(0) + tStatus)
		}
		copy(tx.bufs.CPU[k*bufSize:], frame(bcast, 100))
		require.Len(t, cap.frames, 1)
		require.Equal(t, f, cap.frames[0])
	}
	require.NoError(t, r.m.Err())
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
			// The DMA's fetch at the tail write is what catches it; a long
			// latency keeps the DMA's later read off the test's write (the
			// race detector would flag the deliberate race otherwise).
			cfg.Sched = sim.SchedConfig{MinLatency: time.Hour, MaxLatency: time.Hour}
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
