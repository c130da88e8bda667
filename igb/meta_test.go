package igb_test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// enum xdp_rss_hash_type (include/net/xdp.h), transcribed for the tests.
const (
	xdpL3IPv4, xdpL4, xdpL4UDP = 1 << 0, 1 << 3, 1 << 5
)

// recvOne polls every queue until one frame arrives.
func recvOne(t *testing.T, p nic.Port) *dma.Buf {
	t.Helper()
	return nictest.RecvOne(t, p, -1)
}

func TestSimRxHashType(t *testing.T) {
	key := make([]byte, 40)
	for i := range key {
		key[i] = byte(i*29 + 3)
	}
	for _, queues := range []int{1, 2} {
		testRxHashType(t, key, queues)
	}
}

func testRxHashType(t *testing.T, key []byte, queues int) {
	r := newRigSim(t, igbsim.Config{Queues: 2}, igb.Config{Queues: queues, RSSKey: key})
	if c := r.p.RxMeta(); c&nic.RxMetaHash == 0 {
		t.Fatalf("RxMeta %b without the hash on %d queues", c, queues)
	}
	peer := net.HardwareAddr{2, 0, 0, 0, 0, 9}
	for f := 0; f < 8; f++ {
		frame := traffic.AppendFlowFrame(nil, f, 0, r.p.MAC(), peer)
		r.wire.Send(frame)
		b := recvOne(t, r.p)
		in := traffic.FlowHashInputUDP4(f)
		if want := traffic.Toeplitz(key, in[:]); b.Flags&dma.FlagRSSValid == 0 || b.RSSHash != want {
			t.Fatalf("flow %d: hash %#x flags %#x, want %#x", f, b.RSSHash, b.Flags, want)
		}
		if b.HashType != xdpL3IPv4|xdpL4|xdpL4UDP {
			t.Fatalf("flow %d: hash type %#x, want IPv4 UDP", f, b.HashType)
		}
		b.Free()

		// The same addresses, not UDP: an IPv4 (L3) hash of the addresses only.
		frame[14+9] = 1 // ICMP
		r.wire.Send(frame)
		b = recvOne(t, r.p)
		if want := traffic.Toeplitz(key, in[:8]); b.Flags&dma.FlagRSSValid == 0 || b.RSSHash != want || b.HashType != xdpL3IPv4 {
			t.Fatalf("flow %d ICMP: hash %#x type %#x flags %#x, want %#x IPv4", f, b.RSSHash, b.HashType, b.Flags, want)
		}
		b.Free()
	}
	r.checkModel()
}

func TestSimRxVLAN(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, strip := range []bool{false, true} {
		r := newRigSim(t, igbsim.Config{}, igb.Config{VLANStrip: strip})
		nictest.CheckRxVLAN(t, r.p, -1, strip, rng, func(f []byte) { r.wire.Send(f) })
		r.checkModel()
	}
}

func TestSimRxTimestampsAndPHC(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1533}, igb.Config{RxTimestamp: true})
	if r.p.RxMeta()&nic.RxMetaTimestamp == 0 {
		t.Fatal("RxMeta without timestamps")
	}
	phc, err := r.p.PHC()
	if err != nil {
		t.Fatal(err)
	}
	model := func() int64 {
		ns, ok := r.m.Clock()
		if !ok {
			t.Fatal("model has no clock")
		}
		return ns
	}
	if d := model() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("the clock is %d ns off the host's after Open", d)
	}
	const t0 = 1_700_000_000_123_456_789
	if err := phc.SetTime(t0); err != nil {
		t.Fatal(err)
	}
	if v := model(); v < t0 || v > t0+int64(time.Second) {
		t.Fatalf("model clock %d after SetTime(%d)", v, int64(t0))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var prev uint64
	for i := 0; i < 16; i++ {
		f := nictest.RandFrame(rng, r.p.MAC(), 64+rng.IntN(1000))
		before := model()
		r.wire.Send(f)
		b := recvOne(t, r.p)
		after := model()
		if b.Flags&dma.FlagTimestamp == 0 {
			t.Fatalf("frame %d: no timestamp (flags %#x)", i, b.Flags)
		}
		if ts := int64(b.Timestamp); ts < before || ts > after || b.Timestamp <= prev {
			t.Fatalf("frame %d: timestamp %d outside [%d, %d] or not after %d", i, ts, before, after, prev)
		}
		prev = b.Timestamp
		if !bytes.Equal(b.Data(), f) {
			t.Fatalf("frame %d: data differs (the header was not stripped?)", i)
		}
		b.Free()
	}

	// AdjTime steps the model clock.
	a := model()
	if err := phc.AdjTime(-3 * int64(time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := model() - a; d > -3*int64(time.Second)+int64(100*time.Millisecond) || d < -3*int64(time.Second) {
		t.Fatalf("AdjTime(-3 s) moved the model clock by %d", d)
	}
	// AdjFreq changes its rate.
	for _, ppb := range []int64{30_000_000, -30_000_000} {
		if err := phc.AdjFreq(ppb); err != nil {
			t.Fatal(err)
		}
		rate := sim.MeasureRate(model, 30*time.Millisecond)
		if want := 1 + float64(ppb)/1e9; rate < want-0.005 || rate > want+0.005 {
			t.Fatalf("AdjFreq(%d): model clock rate %.4f, want %.4f", ppb, rate, want)
		}
		got, err := phc.Time()
		if err != nil {
			t.Fatal(err)
		}
		if m := model(); got > m || got < m-int64(50*time.Millisecond) {
			t.Fatalf("PHC.Time %d, model %d", got, m)
		}
	}
	if err := phc.AdjFreq(70_000_000); err == nil {
		t.Fatal("AdjFreq beyond the INCVALUE range accepted")
	}
	r.checkModel()
}

func TestSimRxTimestampRefused(t *testing.T) {
	m, err := igbsim.New(igbsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if p, err := igb.Open(m.Device(), igb.Config{RxTimestamp: true, LinkTimeout: -1}); err == nil {
		p.Close()
		t.Fatal("RX timestamps on the 82576 accepted")
	}
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	if _, err := r.p.PHC(); err == nil {
		t.Fatal("PHC on the 82576")
	}
	if r.p.RxMeta()&nic.RxMetaTimestamp != 0 {
		t.Fatal("82576 reports timestamps")
	}
}

func TestSimZeroAllocsWithMeta(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1533, Queues: 2}, igb.Config{Queues: 2, RxRingSize: 64, TxRingSize: 64, RxTimestamp: true, VLANStrip: true})
	r.wire.SetReceiver(nil)
	frame := nictest.Tagged(traffic.AppendFlowFrame(nil, 1, 0, r.p.MAC(), net.HardwareAddr{2, 0, 0, 0, 0, 9}), 0x0123)
	nictest.ZeroAllocRxMeta(t, func() { r.m.Inject(frame) }, dma.FlagTimestamp|dma.FlagVLAN|dma.FlagRSSValid,
		r.p.RxQueue(0), r.p.RxQueue(1))
	r.checkModel()
}
