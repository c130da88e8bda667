package fec_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

const mask31 = 1<<31 - 1

func recvOne(t *testing.T, p nic.Port) *dma.Buf {
	t.Helper()
	return nictest.RecvOne(t, p, 0)
}

// within reports whether counter value v lies in [lo, hi] modulo 2^31.
func within(v, lo, hi uint32) bool { return (v-lo)&mask31 <= (hi-lo)&mask31 }

func TestModelRxTimestampsAndPHC(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{RxTimestamp: true, RxRingSize: 16})
	if p.RxMeta()&(nic.RxMetaTimestamp|nic.RxMetaVLAN) != nic.RxMetaTimestamp|nic.RxMetaVLAN {
		t.Fatalf("RxMeta %b", p.RxMeta())
	}
	phc, err := p.PHC()
	if err != nil {
		t.Fatal(err)
	}
	now, err := phc.Time()
	if err != nil {
		t.Fatal(err)
	}
	if d := now - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("PHC %d ns off the host's time after Open", d)
	}
	const t0 = 1_900_000_000_555_555_555
	if err := phc.SetTime(t0); err != nil {
		t.Fatal(err)
	}
	t0c := uint32(int64(t0) & mask31)
	if c := m.Timer(); !within(c, t0c, t0c+uint32(time.Second)) {
		t.Fatalf("model timer %d after SetTime(%d) (counter %d)", c, int64(t0), t0c)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var prev uint64
	for i := 0; i < 40; i++ {
		f := nictest.RandFrame(rng, p.MAC(), 60+rng.IntN(1400))
		f[12], f[13] = 0x08, 0x00
		before := m.Timer()
		if !m.Inject(f) {
			t.Fatalf("frame %d not received by the model", i)
		}
		after := m.Timer()
		b := recvOne(t, p)
		if b.Flags&dma.FlagTimestamp == 0 {
			t.Fatalf("frame %d: no timestamp", i)
		}
		if !within(uint32(b.Timestamp)&mask31, before, after) || b.Timestamp <= prev {
			t.Fatalf("frame %d: timestamp %d (counter %d) outside [%d, %d] or not after %d", i, b.Timestamp, b.Timestamp&mask31, before, after, prev)
		}
		if d := int64(b.Timestamp) - t0; d < 0 || d > int64(5*time.Second) {
			t.Fatalf("frame %d: timestamp %d not extended from the clock (t0 %d)", i, b.Timestamp, int64(t0))
		}
		prev = b.Timestamp
		if !bytes.Equal(b.Data(), f) || b.Flags&dma.FlagVLAN != 0 {
			t.Fatalf("frame %d: data differs or VLAN flag %#x", i, b.Flags)
		}
		b.Free()
	}

	a, _ := phc.Time()
	ca := m.Timer()
	if err := phc.AdjTime(-3 * int64(time.Second)); err != nil {
		t.Fatal(err)
	}
	cb := m.Timer()
	b, _ := phc.Time()
	if d := b - a; d < -3*int64(time.Second) || d > -3*int64(time.Second)+int64(50*time.Millisecond) {
		t.Fatalf("AdjTime(-3 s): PHC moved by %d", d)
	}
	if d := (ca - cb) & mask31; !within(d, 3e9-5e7-(1<<31), 3e9-(1<<31)) {
		t.Fatalf("AdjTime(-3 s): model timer moved back by %d mod 2^31", d)
	}
	for _, ppb := range []int64{40_000_000, -40_000_000, 1000} {
		if err := phc.AdjFreq(ppb); err != nil {
			t.Fatal(err)
		}
		start := m.Timer()
		rate := sim.MeasureRate(func() int64 { return int64((m.Timer() - start) & mask31) }, 30*time.Millisecond)
		if want := 1 + float64(ppb)/1e9; rate < want-0.005 || rate > want+0.005 {
			t.Fatalf("AdjFreq(%d): model timer rate %.4f, want %.4f", ppb, rate, want)
		}
	}
	if err := phc.AdjFreq(200_000_000); err == nil {
		t.Fatal("AdjFreq beyond the range accepted")
	}
	checkModel(t, m)
}

func TestModelRxVLAN(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{})
	if p.RxMeta()&nic.RxMetaVLAN == 0 || p.RxMeta()&nic.RxMetaTimestamp != 0 {
		t.Fatalf("RxMeta %b", p.RxMeta())
	}
	rng := rand.New(rand.NewPCG(8, 1))
	for i := 0; i < 4; i++ {
		f := nictest.RandFrame(rng, p.MAC(), 200)
		tci := uint16(rng.Uint32())
		f[12], f[13], f[14], f[15] = 0x81, 0x00, byte(tci>>8), byte(tci)
		m.Inject(f)
		b := recvOne(t, p)
		if b.Flags&dma.FlagVLAN == 0 || b.VLANProto != 0x8100 || b.VLANTCI != tci || !bytes.Equal(b.Data(), f) {
			t.Fatalf("flags %#x proto %#x tci %#x, want 0x8100 %#x, frame unchanged", b.Flags, b.VLANProto, b.VLANTCI, tci)
		}
		if b.Flags&dma.FlagTimestamp != 0 {
			t.Fatal("timestamp without Config.RxTimestamp")
		}
		b.Free()
	}
	checkModel(t, m)
}

func TestModelRxTimestampNeedsEnhancedBDs(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	if p, err := fec.Open(m.Device(), fec.Config{RxTimestamp: true, LegacyBD: true, LinkTimeout: -1}); err == nil {
		p.Close()
		t.Fatal("RX timestamps with legacy BDs accepted")
	}
	p := openPort(t, m.Device(), fec.Config{LegacyBD: true})
	if _, err := p.PHC(); err == nil {
		t.Fatal("PHC with legacy BDs")
	}
	if p.RxMeta() != 0 {
		t.Fatalf("RxMeta %b with legacy BDs", p.RxMeta())
	}
}

func TestModelZeroAllocsWithMeta(t *testing.T) {
	m := newModel(t, fecsim.Config{Coherent: true})
	p := openPort(t, m.Device(), fec.Config{RxTimestamp: true, RxRingSize: 64})
	f := nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), p.MAC(), 128)
	f[12], f[13], f[14], f[15] = 0x81, 0x00, 0x00, 0x05
	nictest.ZeroAllocRxMeta(t, func() { m.Inject(f) }, dma.FlagTimestamp|dma.FlagVLAN, p.RxQueue(0))
	checkModel(t, m)
}
