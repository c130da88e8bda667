package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// rxLoop plays a driver that reposts each descriptor as soon as the frame is in
// and moves the tail once per burst of 32.
type rxLoop struct {
	r     *rig
	rx    *rxRing
	next  int
	owed  int
	frame []byte
}

func newRxLoop(tb testing.TB, r *rig, n int) *rxLoop {
	r.linkUp()
	rx := r.setupRx(0, n, 2)
	r.Wr(tRDBAL(0)+0x18, uint32(n-1))
	r.enableRx(tRctlBAM)
	return &rxLoop{r: r, rx: rx, frame: frame(factoryMAC, 60)}
}

func (l *rxLoop) one() bool {
	ok := l.r.m.Inject(l.frame)
	l.rx.post(l.next)
	l.owed++
	if l.owed == 32 {
		l.r.Wr(tRDBAL(0)+0x18, uint32(l.next))
		l.owed = 0
	}
	l.next = (l.next + 1) % l.rx.n
	return ok
}

// txLoop writes bursts of 32 single-descriptor frames and one tail per burst.
type txLoop struct {
	r    *rig
	tx   *txRing
	sent int
}

func newTxLoop(tb testing.TB, r *rig, n int) *txLoop {
	r.linkUp()
	tx := r.setupTx(0, n)
	r.Wr(tTCTL, tTctlEN|tTctlPSP)
	f := frame(factoryMAC, 60)
	for i := 0; i < n; i++ {
		copy(tx.bufs.CPU[i*txBufSize:], f)
	}
	r.m.SetTransmit(func([]byte) {})
	return &txLoop{r: r, tx: tx}
}

func (l *txLoop) burst() {
	for k := 0; k < 32; k++ {
		i := l.tx.tail
		l.tx.desc(i, l.tx.bufs.IOVA+uint64(i*txBufSize), 60, tTxEOP|tTxIFCS|tTxRS, 60)
		l.tx.tail = (l.tx.tail + 1) % l.tx.n
	}
	l.r.Wr(tTDBAL(0)+0x18, uint32(l.tx.tail))
	l.sent += 32
}

func TestPerFrameZeroAlloc(t *testing.T) {
	r := newRig(t, testCfg())
	l := newRxLoop(t, r, 256)
	simtest.ZeroAlloc(t, "Inject", 2000, func() {
		if !l.one() {
			t.Fatal("frame dropped")
		}
	})

	r2 := newRig(t, testCfg())
	tl := newTxLoop(t, r2, 256)
	tl.burst() // first burst sizes the scratch
	simtest.ZeroAlloc(t, "transmit", 200, tl.burst)
	require.Equal(t, uint64(tl.sent), r2.m.Counters().TxFrames)
	require.NoError(t, r.m.Err())
	require.NoError(t, r2.m.Err())
}

func BenchmarkInjectReceive(b *testing.B) {
	r := newRig(b, Config{MAC: factoryMAC[:], AutonegDelay: time.Millisecond, Sched: syncSched})
	r.m.SetPaced(false) // the model's cost, not the wire's time
	l := newRxLoop(b, r, 1024)
	simtest.BenchFrames(b, func() int {
		if !l.one() {
			b.Fatal("frame dropped")
		}
		return 1
	})
	simtest.NoFaults(b, r.m)
}

func BenchmarkTransmit(b *testing.B) {
	r := newRig(b, Config{MAC: factoryMAC[:], AutonegDelay: time.Millisecond, Sched: syncSched})
	r.m.SetPaced(false) // the model's cost, not the wire's time
	l := newTxLoop(b, r, 1024)
	simtest.BenchFrames(b, func() int {
		l.burst()
		return 32
	})
	simtest.NoFaults(b, r.m)
}

// syncSched runs the device's work inside the register writes in the
// benchmarks, so their figures stay comparable with the synchronous model's.
var syncSched = sim.SchedConfig{Sync: true}
