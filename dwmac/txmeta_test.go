package dwmac_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// The TX requests end to end: the driver's TX queue (nic.TxMetaQueue) on the
// model, the frames checked as the wire carried them.

// l4Frame builds an Ethernet (optionally 802.1Q tagged) / IPv4 or IPv6 / TCP
// or UDP frame with gopacket (nictest.BuildL4), whose checksums are the
// reference.
func l4Frame(t testing.TB, v6, tcp, vlan bool, payload []byte) nictest.L4Frame {
	t.Helper()
	s := nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, VLANID: 7, Priority: 3, Dst: net.HardwareAddr{2, 9, 9, 9, 9, 9},
		SrcIP: net.IP{192, 0, 2, 1}, DstIP: net.IP{192, 0, 2, 2}, SrcPort: 4000, DstPort: 4789, Payload: payload}
	if v6 {
		s.SrcIP, s.DstIP = net.ParseIP("fd00::1"), net.ParseIP("fd00::2")
	}
	if tcp {
		s.DstPort, s.Seq, s.PSH, s.Window = 443, 99, true, 1000
	}
	return nictest.BuildL4(t, s)
}

func metaQueue(t *testing.T, p nic.Port, i int) nic.TxMetaQueue {
	t.Helper()
	q, ok := p.TxQueue(i).(nic.TxMetaQueue)
	if !ok {
		t.Fatalf("TX queue %d is not a nic.TxMetaQueue", i)
	}
	return q
}

// bufFor copies f into a buffer of the port's RX pool.
func bufFor(t *testing.T, p nic.Port, f []byte) *dma.Buf {
	t.Helper()
	b := p.RxQueue(0).Pool().Get()
	if b == nil {
		t.Fatal("pool empty")
	}
	b.Len = copy(b.Mem[b.Off:], f)
	return b
}

// sendAll sends bs on q, reclaiming until all were taken.
func sendAll(t *testing.T, q nic.TxQueue, bs []*dma.Buf) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(bs) > 0 {
		n := q.Send(bs)
		bs = bs[n:]
		q.Reclaim()
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d frames never taken", len(bs))
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// waitSent waits until the wire has n frames.
func (r *rig) waitSent(n int) [][]byte {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.sent()) < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d frames on the wire", len(r.sent()), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return r.sent()
}

func TestSimTxMetaCaps(t *testing.T) {
	const all = nic.TxMetaTimestamp | nic.TxMetaChecksum
	cases := []struct {
		name  string
		m     dwmacsim.Config
		c     dwmac.Config
		want  []nic.TxMetaCaps
		error bool
	}{
		{"ADL", dwmacsim.Config{}, dwmac.Config{Queues: 2}, []nic.TxMetaCaps{all, all}, false},
		{"EHL launch time on 1 and 3", dwmacsim.Config{PCIDevice: 0x4b32}, dwmac.Config{Queues: 4, LaunchTimeQueues: 0b1010},
			[]nic.TxMetaCaps{all, all | nic.TxMetaLaunchTime, all, all | nic.TxMetaLaunchTime}, false},
		{"TGL launch time on 1", dwmacsim.Config{PCIDevice: 0xa0ac}, dwmac.Config{Queues: 2, LaunchTimeQueues: 0b10},
			[]nic.TxMetaCaps{all, all | nic.TxMetaLaunchTime}, false},
		{"no TX COE", dwmacsim.Config{NoTxCOE: true}, dwmac.Config{}, []nic.TxMetaCaps{nic.TxMetaTimestamp}, false},
		{"no COE on queue 1", dwmacsim.Config{Variant: dwmacsim.IMX8MP, NoTxCOEQueues: 0b10}, dwmac.Config{Queues: 3, NoTxCOEQueues: 0b10},
			[]nic.TxMetaCaps{all, nic.TxMetaTimestamp, all}, false},
		{"i.MX8MP", dwmacsim.Config{Variant: dwmacsim.IMX8MP}, dwmac.Config{Queues: 3}, []nic.TxMetaCaps{all, all, all}, false},
		{"i.MX8MP has no TBS", dwmacsim.Config{Variant: dwmacsim.IMX8MP}, dwmac.Config{Queues: 2, LaunchTimeQueues: 0b10}, nil, true},
		{"launch time beyond the queues", dwmacsim.Config{}, dwmac.Config{Queues: 1, LaunchTimeQueues: 0b10}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.error {
				m, err := dwmacsim.New(tc.m)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				tc.c.LinkTimeout = -1
				p, err := dwmac.Open(m.Device(), tc.c)
				if err == nil {
					p.Close()
					t.Fatal("Open accepted launch time queues the device cannot have")
				}
				t.Logf("refused: %v", err)
				return
			}
			r := newRig(t, tc.m, tc.c)
			for i, w := range tc.want {
				if got := metaQueue(t, r.p, i).TxMeta(); got != w {
					t.Errorf("queue %d: caps %v, want %v", i, got, w)
				}
			}
			r.checkModel()
		})
	}
}

func TestSimTxChecksum(t *testing.T) {
	for _, v := range []dwmacsim.Variant{dwmacsim.IntelMGbE, dwmacsim.IMX8MP} {
		r := newRig(t, dwmacsim.Config{Variant: v, NonCoherent: v == dwmacsim.IMX8MP}, dwmac.Config{})
		q := metaQueue(t, r.p, 0)
		rng := rand.New(rand.NewPCG(uint64(v), 77))
		var want [][]byte
		var bs []*dma.Buf
		for i := 0; i < 96; i++ {
			v6, tcp, vlan := i&1 != 0, i&2 != 0, i&4 != 0
			p := make([]byte, rng.IntN(1400))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			lf := l4Frame(t, v6, tcp, vlan, p)
			ref, l4, off := lf.Bytes, lf.L4, lf.Field()
			b := bufFor(t, r.p, lf.Partial())
			if i%8 == 5 {
				// No request: the frame leaves as it is, its (wrong) checksum
				// field included.
				want = append(want, b.Data())
			} else {
				b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(l4), uint16(off)
				want = append(want, ref)
			}
			if err := q.CheckTxMeta(b); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			want[len(want)-1] = append([]byte(nil), want[len(want)-1]...)
			bs = append(bs, b)
		}
		sendAll(t, q, bs)
		got := r.waitSent(len(want))
		for i := range want {
			if !bytes.Equal(got[i][:len(want[i])], want[i]) || len(got[i]) != max(len(want[i]), 60) {
				t.Fatalf("%v frame %d: the wire's bytes differ from gopacket's", v, i)
			}
		}
		reclaimAll(t, r.p, 512)
		r.checkModel()
	}
}

func TestSimTxMetaRefused(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{Queues: 2, LaunchTimeQueues: 0b10})
	q := metaQueue(t, r.p, 0)
	lf := l4Frame(t, false, true, false, make([]byte, 64))
	ref, l4, off := lf.Bytes, lf.L4, lf.Field()
	cases := []struct {
		name string
		set  func(b *dma.Buf)
	}{
		{"offset the engine does not use", func(b *dma.Buf) { b.CsumOffset = 6 }},
		{"start the engine does not use", func(b *dma.Buf) { b.CsumStart = 14 }},
		{"not IP", func(b *dma.Buf) { b.Data()[12] = 0x88 }},
		{"IP length beyond the frame", func(b *dma.Buf) { binary.BigEndian.PutUint16(b.Data()[16:], 1400) }},
		{"fragment", func(b *dma.Buf) { b.Data()[20] = 0x20 }},
		{"checksum beyond the frame", func(b *dma.Buf) { b.CsumStart = uint16(b.Len) }},
		{"unknown flag", func(b *dma.Buf) { b.TxFlags |= 1 << 5 }},
		{"launch time on a queue without TBS", func(b *dma.Buf) { b.TxFlags |= dma.TxFlagLaunchTime }},
	}
	for _, tc := range cases {
		good := bufFor(t, r.p, ref)
		good.TxFlags, good.CsumStart, good.CsumOffset = dma.TxFlagChecksum, uint16(l4), uint16(off)
		bad := bufFor(t, r.p, ref)
		bad.TxFlags, bad.CsumStart, bad.CsumOffset = dma.TxFlagChecksum, uint16(l4), uint16(off)
		tc.set(bad)
		after := bufFor(t, r.p, ref)
		err := q.CheckTxMeta(bad)
		if !errors.Is(err, nic.ErrTxMeta) {
			t.Fatalf("%s: CheckTxMeta %v, want ErrTxMeta", tc.name, err)
		}
		t.Logf("%s: %v", tc.name, err)
		before := len(r.sent())
		if n := q.Send([]*dma.Buf{good, bad, after}); n != 1 {
			t.Fatalf("%s: Send took %d, want 1 (stop at the refused frame)", tc.name, n)
		}
		if bad.Owner() == dma.OwnerTx || after.Owner() == dma.OwnerTx {
			t.Fatalf("%s: a frame after the refusal went to the ring", tc.name)
		}
		bad.Free()
		after.Free()
		r.waitSent(before + 1)
	}
	// A launch time the queue has is accepted; the same on queue 0 is not.
	b := bufFor(t, r.p, ref)
	b.TxFlags = dma.TxFlagLaunchTime
	if err := metaQueue(t, r.p, 1).CheckTxMeta(b); err != nil {
		t.Fatalf("launch time on queue 1: %v", err)
	}
	if err := q.CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("launch time on queue 0: %v", err)
	}
	b.LaunchTime = 1 << 63
	if err := metaQueue(t, r.p, 1).CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("launch time beyond the clock's range: %v", err)
	}
	b.Free()
	reclaimAll(t, r.p, 512)
	r.checkModel()
}

func TestSimTxTimestamps(t *testing.T) {
	for _, v := range []dwmacsim.Variant{dwmacsim.IntelMGbE, dwmacsim.IMX8MP} {
		// The i.MX8MP is not coherent: the write-back's timestamp words are
		// seen only through the driver's syncs.
		r := newRig(t, dwmacsim.Config{Variant: v, NonCoherent: v == dwmacsim.IMX8MP}, dwmac.Config{TxRingSize: 64})
		q := metaQueue(t, r.p, 0)
		rng := rand.New(rand.NewPCG(9, uint64(v)))
		out := make([]nic.TxStamp, 8)
		var prev uint64
		for burst := 0; burst < 12; burst++ {
			var bs []*dma.Buf
			var asked []uint64
			for i := 0; i < 5; i++ {
				f := make([]byte, 60+rng.IntN(1000))
				copy(f, []byte{2, 9, 9, 9, 9, 9})
				b := bufFor(t, r.p, f)
				if i != 2 {
					b.TxFlags = dma.TxFlagTimestamp
					asked = append(asked, b.DataIOVA())
				}
				bs = append(bs, b)
			}
			before := r.m.Clock()
			sendAll(t, q, bs)
			reclaimAll(t, r.p, 64)
			after := r.m.Clock()
			n := q.TxStamps(out)
			if n != len(asked) {
				t.Fatalf("%v burst %d: %d stamps, want %d", v, burst, n, len(asked))
			}
			for i, s := range out[:n] {
				if s.Addr != asked[i] || !s.OK {
					t.Fatalf("%v burst %d stamp %d: %+v, want addr %#x OK", v, burst, i, s, asked[i])
				}
				if int64(s.Time) < before || int64(s.Time) > after || s.Time <= prev {
					t.Fatalf("%v burst %d stamp %d: time %d outside [%d, %d] or not after %d", v, burst, i, s.Time, before, after, prev)
				}
				prev = s.Time
			}
		}
		// Completions nobody collects: the ring keeps nic.StampRingSize.
		for sent := 0; sent < nic.StampRingSize+20; {
			var bs []*dma.Buf
			for i := 0; i < min(10, nic.StampRingSize+20-sent); i++ {
				b := bufFor(t, r.p, make([]byte, 64))
				b.TxFlags = dma.TxFlagTimestamp
				bs = append(bs, b)
			}
			sendAll(t, q, bs)
			sent += len(bs)
			reclaimAll(t, r.p, 64)
		}
		if d := counter(t, r.p, "tx_hwtstamp_dropped"); d != 20 {
			t.Fatalf("tx_hwtstamp_dropped %d, want 20", d)
		}
		if s := counter(t, r.p, "tx_hwtstamp_skipped"); s != 0 {
			t.Fatalf("tx_hwtstamp_skipped %d", s)
		}
		if n := q.TxStamps(make([]nic.TxStamp, 2*nic.StampRingSize)); n != nic.StampRingSize {
			t.Fatalf("%d stamps kept, want %d", n, nic.StampRingSize)
		}
		r.checkModel()
	}
}

func counter(t *testing.T, p nic.Port, name string) uint64 {
	t.Helper()
	v, ok := dwmac.Counter(p.Stats(), name)
	if !ok {
		t.Fatalf("no counter %s", name)
	}
	return v
}

func TestSimTxLaunchTime(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{Queues: 2, LaunchTimeQueues: 0b10, TxRingSize: 16})
	at := make(chan int64, 64)
	r.wire.SetReceiver(func(f []byte) {
		at <- r.m.Clock() // the model's time as the frame reaches the wire
		r.rec.Receive(f)
	})
	phc, err := r.p.PHC()
	if err != nil {
		t.Fatal(err)
	}
	q := metaQueue(t, r.p, 1)
	for round, delay := range []time.Duration{20 * time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond} {
		now, err := phc.Time()
		if err != nil {
			t.Fatal(err)
		}
		lt := uint64(now + int64(delay))
		var bs []*dma.Buf
		for i := 0; i < 3; i++ {
			b := bufFor(t, r.p, make([]byte, 100+i))
			b.TxFlags = dma.TxFlagTimestamp
			if i == 1 {
				b.TxFlags |= dma.TxFlagLaunchTime
				b.LaunchTime = lt
			}
			bs = append(bs, b)
		}
		sendAll(t, q, bs)
		var times [3]int64
		for i := range times {
			select {
			case times[i] = <-at:
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: frame %d never left", round, i)
			}
		}
		if times[1] < int64(lt&^0xff) || times[2] < times[1] {
			t.Fatalf("round %d: frames left at %v, launch time %d (the third must wait behind the second)", round, times, lt)
		}
		if delay >= 8*time.Millisecond && times[0] >= int64(lt) {
			t.Fatalf("round %d: the frame before the launch time was held too (%d >= %d)", round, times[0], lt)
		}
		reclaimAll(t, r.p, 16)
		out := make([]nic.TxStamp, 4)
		if n := q.TxStamps(out); n != 3 || out[1].Time < lt&^0xff || !out[1].OK {
			t.Fatalf("round %d: stamps %v, want 3 with the second at or after %d", round, out[:n], lt)
		}
	}
	// Queue 0 (normal descriptors) sends unchanged alongside.
	transmit(t, r.p, [][]byte{bytes.Repeat([]byte{2}, 80)}, 1)
	reclaimAll(t, r.p, 16)
	r.checkModel()
}

// TestSimTxMetaWrongDriverCaught: a driver that asks the engine for what it
// cannot do, or lays out enhanced descriptors without EDSE, is caught by the
// model's fault log.
func TestSimTxMetaWrongDriverCaught(t *testing.T) {
	cfg := dwmac.Config{}
	dwmac.UncheckedTxMeta(&cfg)
	r := newRig(t, dwmacsim.Config{}, cfg)
	q := metaQueue(t, r.p, 0)
	lf := l4Frame(t, false, true, false, make([]byte, 64))
	ref, l4, off := lf.Bytes, lf.L4, lf.Field()
	b := bufFor(t, r.p, ref)
	binary.BigEndian.PutUint16(b.Data()[16:], 1400) // an IPv4 total length beyond the frame
	b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(l4), uint16(off)
	sendAll(t, q, []*dma.Buf{b})
	r.waitSent(1)
	reclaimAll(t, r.p, 512)
	if err := r.m.Err(); err == nil {
		t.Fatal("CIC with an IP length beyond the frame: no model fault")
	} else {
		t.Logf("caught: %v", err)
	}
	if n := counter(t, r.p, "tx_errors"); n != 1 {
		t.Fatalf("tx_errors %d: the write-back's PCE|ES not counted", n)
	}
	r.m.FaultLog().Clear()

	cfg = dwmac.Config{Queues: 2, LaunchTimeQueues: 0b10}
	dwmac.NoEDSE(&cfg)
	r2 := newRig(t, dwmacsim.Config{}, cfg)
	sendAll(t, metaQueue(t, r2.p, 1), []*dma.Buf{bufFor(t, r2.p, make([]byte, 80))})
	r2.m.Settle()
	if err := r2.m.Err(); err == nil {
		t.Fatal("enhanced descriptors without EDSE: no model fault")
	} else {
		t.Logf("caught: %v", err)
	}
	r2.m.FaultLog().Clear()
}

func TestSimTxMetaZeroAllocs(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{TxRingSize: 128, Queues: 2, LaunchTimeQueues: 0b10})
	r.m.SetTransmit(nil)
	lf := l4Frame(t, false, false, false, make([]byte, 200))
	ref, l4, off := lf.Bytes, lf.L4, lf.Field()
	for qi := 0; qi < 2; qi++ {
		q := metaQueue(t, r.p, qi)
		for _, flags := range []uint8{0, dma.TxFlagChecksum | dma.TxFlagTimestamp} {
			bs := make([]*dma.Buf, 16)
			out := make([]nic.TxStamp, 16)
			allocs := testing.AllocsPerRun(100, func() {
				for i := range bs {
					b := r.p.RxQueue(0).Pool().Get()
					b.Len = copy(b.Mem[b.Off:], ref)
					b.TxFlags, b.CsumStart, b.CsumOffset = flags, uint16(l4), uint16(off)
					bs[i] = b
				}
				for k := 0; k < len(bs); {
					k += q.Send(bs[k:])
					q.Reclaim()
				}
				r.m.Settle()
				q.Reclaim()
				q.TxStamps(out)
			})
			if allocs != 0 {
				t.Errorf("queue %d flags %#x: %.1f allocations per burst of 16", qi, flags, allocs)
			}
		}
	}
	reclaimAll(t, r.p, 128)
	r.checkModel()
}
