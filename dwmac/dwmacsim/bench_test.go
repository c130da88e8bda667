package dwmacsim

import (
	"testing"

	"github.com/xnic-dev/xnic/sim/simtest"
)

// rxLoop plays a driver that reposts each descriptor as soon as the frame is
// in and moves the tail once per burst (tail = base + next-to-refill*16).
type rxLoop struct {
	r      *rig
	repost simtest.RxRepost
	frame  []byte
}

func newRxLoop(r *rig, n int) *rxLoop {
	r.bringUp()
	rx := r.setupRx(0, n, 1536)
	rx.tailTo(n - 1) // keep one descriptor back so the tail never equals cur with work pending
	return &rxLoop{r: r, repost: simtest.RxRepost{N: n, Post: rx.post, Tail: rx.tailTo}, frame: frame(factoryMAC, 60)}
}

func (l *rxLoop) one() bool {
	ok := l.r.m.Inject(l.frame)
	l.repost.Step()
	return ok
}

// newTxLoop writes bursts of single-descriptor frames and one tail per burst.
func newTxLoop(r *rig, n int) *simtest.TxBurst {
	r.bringUp()
	tx := r.setupTx(0, n)
	f := frame(peerMAC, 60)
	for i := 0; i < n; i++ {
		copy(tx.bufs.CPU[i*bufSize:], f)
	}
	r.m.SetTransmit(func([]byte) {})
	return &simtest.TxBurst{N: n,
		Put:  func(i int) { tx.put(i, 60, 0, tOWN|tFD|tLD, 60) },
		Kick: func(tail int) { tx.tail = tail; tx.kick() }}
}

func TestPerFrameZeroAlloc(t *testing.T) {
	r, r2 := newRig(t, testCfg()), newRig(t, testCfg())
	simtest.ZeroAllocFrames(t, newRxLoop(r, 256).one, newTxLoop(r2, 256), func() uint64 { return r2.m.Counters().TxFrames })
	simtest.NoFaults(t, r.m)
	simtest.NoFaults(t, r2.m)
}

func BenchmarkInjectReceive(b *testing.B) {
	r := newRig(b, benchCfg())
	r.m.SetPaced(false) // the model's cost, not the wire's time
	simtest.BenchRx(b, newRxLoop(r, 1024).one)
	simtest.NoFaults(b, r.m)
}

func BenchmarkTransmit(b *testing.B) {
	r := newRig(b, benchCfg())
	r.m.SetPaced(false) // the model's cost, not the wire's time
	simtest.BenchTx(b, newTxLoop(r, 1024))
	simtest.NoFaults(b, r.m)
}

// benchCfg runs the device's work inside the register writes, so the
// benchmarks' figures stay comparable with the synchronous model's.
func benchCfg() Config {
	c := testCfg()
	c.Sched.Sync = true
	return c
}
