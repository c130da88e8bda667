package dwmacsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// rxLoop plays a driver that reposts each descriptor as soon as the frame is
// in and moves the tail once per 32 frames (tail = base + next-to-refill*16).
type rxLoop struct {
	r     *rig
	rx    *rxRing
	next  int
	owed  int
	frame []byte
}

func newRxLoop(r *rig, n int) *rxLoop {
	r.bringUp()
	rx := r.setupRx(0, n, 1536)
	rx.tailTo(n - 1) // keep one descriptor back so the tail never equals cur with work pending
	return &rxLoop{r: r, rx: rx, frame: frame(factoryMAC, 60)}
}

func (l *rxLoop) one() bool {
	ok := l.r.m.Inject(l.frame)
	l.rx.post(l.next)
	l.owed++
	l.next = (l.next + 1) % l.rx.n
	if l.owed == 32 {
		l.rx.tailTo((l.next + l.rx.n - 1) % l.rx.n)
		l.owed = 0
	}
	return ok
}

// txLoop writes bursts of 32 single-descriptor frames and one tail per burst.
type txLoop struct {
	r    *rig
	tx   *txRing
	sent int
}

func newTxLoop(r *rig, n int) *txLoop {
	r.bringUp()
	tx := r.setupTx(0, n)
	f := frame(peerMAC, 60)
	for i := 0; i < n; i++ {
		copy(tx.bufs.CPU[i*bufSize:], f)
	}
	r.m.SetTransmit(func([]byte) {})
	return &txLoop{r: r, tx: tx}
}

func (l *txLoop) burst() {
	for k := 0; k < 32; k++ {
		i := l.tx.tail
		l.tx.put(i, 60, 0, tOWN|tFD|tLD, 60)
		l.tx.tail = (l.tx.tail + 1) % l.tx.n
	}
	l.tx.kick()
	l.sent += 32
}

func TestPerFrameZeroAlloc(t *testing.T) {
	r := newRig(t, testCfg())
	l := newRxLoop(r, 256)
	simtest.ZeroAlloc(t, "Inject", 2000, func() {
		if !l.one() {
			t.Fatal("frame dropped")
		}
	})

	r2 := newRig(t, testCfg())
	tl := newTxLoop(r2, 256)
	tl.burst() // the first burst sizes the scratch
	simtest.ZeroAlloc(t, "transmit", 200, tl.burst)
	require.Equal(t, uint64(tl.sent), r2.m.Counters().TxFrames)
	require.NoError(t, r.m.Err())
	require.NoError(t, r2.m.Err())
}

func BenchmarkInjectReceive(b *testing.B) {
	r := newRig(b, benchCfg())
	r.m.SetPaced(false) // the model's cost, not the wire's time
	l := newRxLoop(r, 1024)
	simtest.BenchFrames(b, func() int {
		if !l.one() {
			b.Fatal("frame dropped")
		}
		return 1
	})
	simtest.NoFaults(b, r.m)
}

func BenchmarkTransmit(b *testing.B) {
	r := newRig(b, benchCfg())
	r.m.SetPaced(false) // the model's cost, not the wire's time
	l := newTxLoop(r, 1024)
	simtest.BenchFrames(b, func() int {
		l.burst()
		return 32
	})
	simtest.NoFaults(b, r.m)
}

// benchCfg runs the device's work inside the register writes, so the
// benchmarks' figures stay comparable with the synchronous model's.
func benchCfg() Config {
	c := testCfg()
	c.Sched.Sync = true
	return c
}
