package igbsim

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// rxLoop plays a driver that reposts each descriptor as soon as the frame is in
// and moves the tail (RDT) once per burst.
type rxLoop struct {
	r      *rig
	repost simtest.RxRepost
	frame  []byte
}

func newRxLoop(tb testing.TB, r *rig, n int) *rxLoop {
	r.linkUp()
	rx := r.setupRx(0, n, 2)
	r.Wr(tRDBAL(0)+0x18, uint32(n-1))
	r.enableRx(tRctlBAM)
	return &rxLoop{r: r, frame: frame(factoryMAC, 60), repost: simtest.RxRepost{N: n, Post: rx.post,
		Tail: func(i int) { r.Wr(tRDBAL(0)+0x18, uint32(i)) }}}
}

func (l *rxLoop) one() bool {
	ok := l.r.m.Inject(l.frame)
	l.repost.Step()
	return ok
}

// newTxLoop writes bursts of single-descriptor frames and one tail (TDT) per
// burst.
func newTxLoop(tb testing.TB, r *rig, n int) *simtest.TxBurst {
	r.linkUp()
	tx := r.setupTx(0, n)
	r.Wr(tTCTL, tTctlEN|tTctlPSP)
	f := frame(factoryMAC, 60)
	for i := 0; i < n; i++ {
		copy(tx.bufs.CPU[i*txBufSize:], f)
	}
	r.m.SetTransmit(func([]byte) {})
	return &simtest.TxBurst{N: n,
		Put:  func(i int) { tx.desc(i, tx.bufs.IOVA+uint64(i*txBufSize), 60, tTxEOP|tTxIFCS|tTxRS, 60) },
		Kick: func(tail int) { tx.tail = tail; r.Wr(tTDBAL(0)+0x18, uint32(tail)) }}
}

func TestPerFrameZeroAlloc(t *testing.T) {
	r, r2 := newRig(t, testCfg()), newRig(t, testCfg())
	simtest.ZeroAllocFrames(t, newRxLoop(t, r, 256).one, newTxLoop(t, r2, 256), func() uint64 { return r2.m.Counters().TxFrames })
	simtest.NoFaults(t, r.m)
	simtest.NoFaults(t, r2.m)
}

func BenchmarkInjectReceive(b *testing.B) {
	r := newRig(b, Config{MAC: factoryMAC[:], AutonegDelay: time.Millisecond, Sched: syncSched})
	r.m.SetPaced(false) // the model's cost, not the wire's time
	simtest.BenchRx(b, newRxLoop(b, r, 1024).one)
	simtest.NoFaults(b, r.m)
}

func BenchmarkTransmit(b *testing.B) {
	r := newRig(b, Config{MAC: factoryMAC[:], AutonegDelay: time.Millisecond, Sched: syncSched})
	r.m.SetPaced(false) // the model's cost, not the wire's time
	simtest.BenchTx(b, newTxLoop(b, r, 1024))
	simtest.NoFaults(b, r.m)
}

// syncSched runs the device's work inside the register writes in the
// benchmarks, so their figures stay comparable with the synchronous model's.
var syncSched = sim.SchedConfig{Sync: true}
