package igbsim

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/sim/simtest"
)

// Deliberately broken drivers against the device's own time: each must be
// caught (a fault or a visibly wrong frame) while the same steps done right
// pass. A register write during CTRL.RST is in TestResetSequence; a cause left
// set in EICR in TestLatchedCauseRaisesNoMessage.

// TestBrokenDriverReclaimEarly: a TX buffer reused right after the TDT write,
// before the device writes DD back, goes out with the new bytes
// (simtest.ReclaimEarly).
func TestBrokenDriverReclaimEarly(t *testing.T) {
	cfg := testCfg()
	cfg.Sched = simtest.SlowDevice // the overwrite certainly comes first
	r, tx, c := txRig(t)
	simtest.ReclaimEarly(t, txPlay(txRigCfg(t, cfg)), txPlay(r, tx, c), func(i int) []byte {
		f := frame(bcastMAC, 100)
		f[20] = byte(i)
		return f
	}, 30, 5)
	require.NoError(t, r.m.Err())
}

// txPlay is the test's TX ring 0 as simtest.ReclaimEarly drives it: the
// doorbell is TDT, the write-back DD.
func txPlay(r *rig, tx *txRing, c *capture) simtest.TxPlay {
	seen := 0
	return simtest.TxPlay{
		Send: func(f []byte) int {
			k := tx.put(f)
			r.WrRaw(tTDBAL(0)+0x18, uint32(tx.tail))
			return k
		},
		Rewrite: func(k int, f []byte) { copy(tx.bufs.CPU[k*txBufSize:], f) },
		Done:    tx.dd,
		Wire: func() [][]byte {
			got := c.got()
			n := got[seen:]
			seen = len(got)
			return n
		},
		Settle: r.m.Settle,
		Poll:   func() { r.Rd(tSTATUS) },
	}
}

// TestBrokenDriverMDICBusy: an MDIC command written while the last one has not
// set READY is refused with a fault; polling READY works.
func TestBrokenDriverMDICBusy(t *testing.T) {
	r := newRig(t, testCfg())
	read := uint32(tMDICRead | 1<<21 | 2<<16)
	caught := false
	for i := 0; i < 30 && !caught; i++ {
		r.WrRaw(tMDIC, read)
		r.WrRaw(tMDIC, read) // no wait for READY
		for _, f := range r.m.Faults() {
			caught = caught || strings.Contains(f.String(), "previous MDI cycle is still running")
		}
		r.m.Settle()
	}
	require.True(t, caught, "a second MDIC write right after the first was never refused")
	r.m.FaultLog().Clear()
	for i := 0; i < 5; i++ {
		r.WrRaw(tMDIC, read)
		deadline := time.Now().Add(time.Second)
		var v uint32
		for v = r.Rd(tMDIC); v&tMDICReady == 0; v = r.Rd(tMDIC) {
			require.True(t, time.Now().Before(deadline), "READY never set")
		}
		require.Equal(t, uint32(0x02A8), v&0xFFFF, "82576 internal PHY ID1")
	}
	require.NoError(t, r.m.Err())
}

// TestBrokenDriverTailBeforeDescriptor: moving TDT before writing the
// descriptor hands the device a descriptor it fetches at once; finishing it
// afterwards is a fault even when the device gets to the frame later.
func TestBrokenDriverTailBeforeDescriptor(t *testing.T) {
	for _, broken := range []bool{false, true} {
		cfg := testCfg()
		if broken {
			cfg.Sched = simtest.SlowDevice // the fetch at the TDT write catches it
		}
		r, tx, c := txRigCfg(t, cfg)
		f := frame(bcastMAC, 100)
		i := tx.tail
		copy(tx.bufs.CPU[i*txBufSize:], f)
		addr := tx.bufs.IOVA + uint64(i*txBufSize)
		if broken {
			tx.desc(i, 0, 0, 0, 0) // stale: nothing written yet
			tx.tail = (tx.tail + 1) % tx.n
			r.WrRaw(tTDBAL(0)+0x18, uint32(tx.tail))
			tx.desc(i, addr, uint32(len(f)), tTxEOP|tTxIFCS|tTxRS, uint32(len(f)))
		} else {
			tx.desc(i, addr, uint32(len(f)), tTxEOP|tTxIFCS|tTxRS, uint32(len(f)))
			tx.tail = (tx.tail + 1) % tx.n
			r.WrRaw(tTDBAL(0)+0x18, uint32(tx.tail))
		}
		r.m.Settle()
		if broken {
			require.Error(t, r.m.Err(), "descriptor written after the tail")
			require.Contains(t, r.m.Err().Error(), "changed after the TDT write")
			continue
		}
		require.Equal(t, [][]byte{f}, c.got())
		require.NoError(t, r.m.Err())
	}
}

// TestBrokenDriverRxTailBeforeDescriptor: an RX refill that moves RDT before
// writing the descriptor hands over one the device may fetch at once;
// finishing it afterwards is a fault even if no frame arrived in between.
func TestBrokenDriverRxTailBeforeDescriptor(t *testing.T) {
	for _, broken := range []bool{false, true} {
		r := newRig(t, testCfg())
		r.linkUp()
		rx := r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(0)+0x18, 6) // descriptors 0-5 the device's, 6 and 7 ours
		r.enableRx(0)
		// Descriptor 6 (written by setupRx) was ours; the driver gives it
		// a new buffer (descriptor 7's) and moves RDT past it.
		newBuf := rx.bufs.IOVA + uint64(7*rx.bsize)
		d := rx.ring.CPU[6*16:]
		le.PutUint64(d[0:], 0) // the old contents: a write-back, say
		if broken {
			r.Wr(tRDBAL(0)+0x18, 7)
			le.PutUint64(d[0:], newBuf)
		} else {
			le.PutUint64(d[0:], newBuf)
			r.Wr(tRDBAL(0)+0x18, 7)
		}
		f := frame(factoryMAC, 80)
		for i := 0; i < 7; i++ {
			require.True(t, r.m.Inject(f), "frame %d", i)
		}
		if broken {
			require.Error(t, r.m.Err())
			require.Contains(t, r.m.Err().Error(), "changed after the RDT write")
			continue
		}
		require.Equal(t, f, rx.buf(7, 80), "the refilled descriptor's frame is in the new buffer")
		require.NoError(t, r.m.Err())
	}
}
