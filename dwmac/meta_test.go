package dwmac_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

func recvOne(t *testing.T, p nic.Port) *dma.Buf {
	t.Helper()
	return nictest.RecvOne(t, p, 0)
}

func TestSimRxVLAN(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 9))
	for _, strip := range []bool{false, true} {
		r := newRig(t, dwmacsim.Config{}, dwmac.Config{VLANStrip: strip})
		nictest.CheckRxVLAN(t, r.p, 0, strip, rng, func(f []byte) { r.m.Inject(f) })
		r.checkModel()
	}
}

func TestSimRxTimestampsAndPHC(t *testing.T) {
	for _, v := range []dwmacsim.Variant{dwmacsim.IntelMGbE, dwmacsim.IMX8MP} {
		r := newRig(t, dwmacsim.Config{Variant: v}, dwmac.Config{RxTimestamp: true, RxRingSize: 16})
		if r.p.RxMeta()&nic.RxMetaTimestamp == 0 {
			t.Fatal("RxMeta without timestamps")
		}
		phc, err := r.p.PHC()
		if err != nil {
			t.Fatal(err)
		}
		if d := r.m.Clock() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
			t.Fatalf("variant %v: the clock is %d ns off the host's after Open", v, d)
		}
		const t0 = 1_800_000_000_987_654_321
		if err := phc.SetTime(t0); err != nil {
			t.Fatal(err)
		}
		if c := r.m.Clock(); c < t0 || c > t0+int64(time.Second) {
			t.Fatalf("model clock %d after SetTime(%d)", c, int64(t0))
		}
		rng := rand.New(rand.NewPCG(3, 3))
		var prev uint64
		// More frames than the ring: context descriptors wrap with it.
		for i := 0; i < 40; i++ {
			f := nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1400))
			before := r.m.Clock()
			if !r.m.Inject(f) {
				t.Fatalf("frame %d not received by the model", i)
			}
			after := r.m.Clock()
			b := recvOne(t, r.p)
			if b.Flags&dma.FlagTimestamp == 0 {
				t.Fatalf("frame %d: no timestamp", i)
			}
			if ts := int64(b.Timestamp); ts < before || ts > after || b.Timestamp <= prev {
				t.Fatalf("frame %d: timestamp %d outside [%d, %d] or not after %d", i, ts, before, after, prev)
			}
			prev = b.Timestamp
			if !bytes.Equal(b.Data(), f) {
				t.Fatalf("frame %d: data differs", i)
			}
			b.Free()
		}

		for _, step := range []int64{-2_500_000_001, 1_000_000_007, -999} {
			a := r.m.Clock()
			if err := phc.AdjTime(step); err != nil {
				t.Fatal(err)
			}
			if d := r.m.Clock() - a; d < step || d > step+int64(50*time.Millisecond) {
				t.Fatalf("AdjTime(%d) moved the model clock by %d", step, d)
			}
		}
		for _, ppb := range []int64{40_000_000, -40_000_000} {
			if err := phc.AdjFreq(ppb); err != nil {
				t.Fatal(err)
			}
			rate := sim.MeasureRate(r.m.Clock, 30*time.Millisecond)
			if want := 1 + float64(ppb)/1e9; rate < want-0.005 || rate > want+0.005 {
				t.Fatalf("AdjFreq(%d): model clock rate %.4f, want %.4f", ppb, rate, want)
			}
			got, err := phc.Time()
			if err != nil {
				t.Fatal(err)
			}
			if m := r.m.Clock(); got > m || got < m-int64(50*time.Millisecond) {
				t.Fatalf("PHC.Time %d, model %d", got, m)
			}
		}
		r.checkModel()
	}
}

func TestSimNoTimestampsByDefault(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{})
	if r.p.RxMeta() != 0 {
		t.Fatalf("RxMeta %b without options", r.p.RxMeta())
	}
	f := nictest.RandFrame(rand.New(rand.NewPCG(1, 2)), r.p.MAC(), 100)
	r.m.Inject(f)
	b := recvOne(t, r.p)
	if b.Flags&dma.FlagTimestamp != 0 || !bytes.Equal(b.Data(), f) {
		t.Fatalf("flags %#x", b.Flags)
	}
	b.Free()
	if _, err := r.p.PHC(); err != nil {
		t.Fatalf("the clock runs without RX timestamps too: %v", err)
	}
	r.checkModel()
}

func TestSimZeroAllocsWithMeta(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{RxRingSize: 128, TxRingSize: 128, RxTimestamp: true, VLANStrip: true})
	r.m.SetTransmit(nil)
	frame := nictest.Tagged(nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), r.p.MAC(), 64), 0x0042)
	nictest.ZeroAllocRxMeta(t, func() { r.m.Inject(frame) }, dma.FlagTimestamp|dma.FlagVLAN, r.p.RxQueue(0))
	r.checkModel()
}
