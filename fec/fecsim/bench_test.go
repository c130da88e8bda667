package fecsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// The per-frame paths (Inject into an RX ring, a TDAR write sending a frame)
// must not allocate. The harness plays a driver that recycles each BD at once.

func rxRecycler(b *bed) func() {
	i := 0
	return func() {
		b.giveRX(0, i)
		i = (i + 1) % b.n
	}
}

func TestAllocsPerFrame(t *testing.T) {
	for _, ext := range []bool{false, true} {
		b := newBed(t, bedOpts{ext: ext, shift16: true})
		b.m.SetTransmit(func([]byte) {})
		f := testFrame(b.m, 1000, 1)
		recycle := rxRecycler(b)
		n := testing.AllocsPerRun(200, func() {
			if !b.m.Inject(f) {
				t.Fatal("frame dropped")
			}
			recycle()
		})
		require.Zero(t, n, "Inject allocates (ext=%v)", ext)

		i := 0
		n = testing.AllocsPerRun(200, func() {
			b.queueTX(0, i, f, txR|txL|txTC, txeINT)
			b.r.Write32(regTDAR, darActive)
			i = (i + 1) % b.n
		})
		require.Zero(t, n, "TDAR allocates (ext=%v)", ext)
		require.Equal(t, uint64(201), b.m.Counters().TxFrames)
		b.noFaults()
	}
}

func BenchmarkInject(bm *testing.B) {
	for _, size := range []int{64, 1500} {
		bm.Run(itoa(size), func(bm *testing.B) {
			b := newBed(bm, bedOpts{cfg: Config{Sched: syncSched}})
			b.m.SetPaced(false) // the model's cost, not the wire's time
			f := testFrame(b.m, size-4, 1)
			recycle := rxRecycler(b)
			bm.ReportAllocs()
			bm.SetBytes(int64(size))
			n := 0
			for bm.Loop() {
				if !b.m.Inject(f) {
					bm.Fatal("dropped")
				}
				recycle()
				n++
			}
			bm.ReportMetric(float64(n)/bm.Elapsed().Seconds(), "pkts/s")
		})
	}
}

func BenchmarkTransmit(bm *testing.B) {
	b := newBed(bm, bedOpts{cfg: Config{Sched: syncSched}})
	b.m.SetPaced(false) // the model's cost, not the wire's time
	b.m.SetTransmit(func([]byte) {})
	f := testFrame(b.m, 60, 1)
	bm.ReportAllocs()
	i, n := 0, 0
	for bm.Loop() {
		b.queueTX(0, i, f, txR|txL|txTC, 0)
		b.r.Write32(regTDAR, darActive)
		i = (i + 1) % b.n
		n++
	}
	bm.ReportMetric(float64(n)/bm.Elapsed().Seconds(), "pkts/s")
}

func itoa(n int) string {
	if n == 64 {
		return "64B"
	}
	return "1500B"
}

// syncSched runs the device's work inside the register writes in the
// benchmarks, so their figures stay comparable with the synchronous model's.
var syncSched = sim.SchedConfig{Sync: true}
