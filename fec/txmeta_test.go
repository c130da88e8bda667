package fec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// buildL4 builds a TCP or UDP frame to dst with gopacket (nictest.BuildL4)
// around n random bytes, with random ports, VLAN ID and IPv4 source.
func buildL4(t testing.TB, r *rand.Rand, dst net.HardwareAddr, v6, tcp, vlan bool, n int) nictest.L4Frame {
	t.Helper()
	s := nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, Src: net.HardwareAddr{2, 0xAA, 0, 0, 0, 1}, Dst: dst, Payload: make([]byte, n)}
	for i := range s.Payload {
		s.Payload[i] = byte(r.Uint32())
	}
	if vlan {
		s.VLANID = uint16(r.IntN(4095))
	}
	if v6 {
		s.SrcIP, s.DstIP = net.ParseIP("2001:db8::7"), net.ParseIP("2001:db8::9")
	} else {
		s.SrcIP, s.DstIP = net.IP{192, 0, 2, byte(r.Uint32())}, net.IP{198, 51, 100, 9}
	}
	s.SrcPort, s.DstPort = uint16(r.Uint32()), 4789
	if tcp {
		s.DstPort, s.Seq, s.Window = 443, r.Uint32(), 4096
	}
	return nictest.BuildL4(t, s)
}

// bufWith copies frame into a buffer of the port's RX pool.
func bufWith(t testing.TB, p nic.Port, frame []byte) *dma.Buf {
	t.Helper()
	b := p.RxQueue(0).Pool().Get()
	if b == nil {
		t.Fatal("pool empty")
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	return b
}

// sendAll sends bufs on tq, reclaiming while the ring is full.
func sendAll(t testing.TB, tq nic.TxQueue, bufs []*dma.Buf) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for len(bufs) > 0 {
		n := tq.Send(bufs)
		bufs = bufs[n:]
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d frames not taken for 3 s", len(bufs))
			}
			time.Sleep(10 * time.Microsecond)
		}
		tq.Reclaim()
	}
}

func metaQueue(t testing.TB, p *fec.Port) nic.TxMetaQueue {
	t.Helper()
	tq, ok := p.TxQueue(0).(nic.TxMetaQueue)
	if !ok {
		t.Fatal("the TX queue is not a nic.TxMetaQueue")
	}
	return tq
}

// TestModelTxChecksum: CHECKSUM_PARTIAL requests over random IPv4/IPv6 x
// TCP/UDP frames (some 802.1Q tagged) leave with exactly gopacket's
// checksums, as the model's wire recorded them; frames between them that
// ask for nothing, wrong checksums and all, leave byte-identical.
func TestModelTxChecksum(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m := newModel(t, fecsim.Config{Variant: v.v})
			var rec sim.Recorder
			m.SetTransmit(rec.Receive)
			p := openPort(t, m.Device(), fec.Config{TxRingSize: 16})
			tq := metaQueue(t, p)
			if c := tq.TxMeta(); c != nic.TxMetaTimestamp|nic.TxMetaChecksum {
				t.Fatalf("TxMeta %v, want tx-timestamp tx-checksum", c)
			}
			r := rand.New(rand.NewPCG(21, uint64(v.v)))
			var want [][]byte
			var bufs []*dma.Buf
			for i := 0; i < 200; i++ {
				f := buildL4(t, r, net.HardwareAddr{2, 0, 0, 0, 0, 0xB}, r.IntN(2) == 1, r.IntN(2) == 1, r.IntN(4) == 0, r.IntN(1300))
				if i%5 == 4 { // no request: a wrong checksum must leave as it is
					bad := f.Partial()
					b := bufWith(t, p, bad)
					bufs, want = append(bufs, b), append(want, bad)
					continue
				}
				b := bufWith(t, p, f.Partial())
				b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(f.L4), uint16(f.Field())
				if err := tq.CheckTxMeta(b); err != nil {
					t.Fatalf("frame %d (v6 %v tcp %v vlan %v): %v", i, f.V6, f.Proto == 6, f.L3 == 18, err)
				}
				bufs, want = append(bufs, b), append(want, f.Bytes)
			}
			sendAll(t, tq, bufs)
			reclaimAll(t, p, 16)
			m.Settle()
			got := rec.Frames()
			if len(got) != len(want) {
				t.Fatalf("%d frames on the wire, want %d", len(got), len(want))
			}
			for i := range want {
				if len(got[i]) < len(want[i]) || !bytes.Equal(got[i][:len(want[i])], want[i]) {
					t.Fatalf("frame %d on the wire differs from gopacket's\n got %x\nwant %x", i, got[i], want[i])
				}
				if len(got[i]) > len(want[i]) && (len(want[i]) >= 60 || !isZero(got[i][len(want[i]):])) {
					t.Fatalf("frame %d: %d bytes on the wire for %d", i, len(got[i]), len(want[i]))
				}
			}
			checkModel(t, m)
		})
	}
}

func isZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// TestModelTxMetaRefused: requests the ENET cannot carry out are refused by
// CheckTxMeta with ErrTxMeta, and Send stops at them: they and the frames
// after them stay with the caller, nothing reaches the wire.
func TestModelTxMetaRefused(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	var rec sim.Recorder
	m.SetTransmit(rec.Receive)
	p := openPort(t, m.Device(), fec.Config{})
	tq := metaQueue(t, p)
	r := rand.New(rand.NewPCG(2, 3))
	udp4 := buildL4(t, r, net.HardwareAddr{2, 0, 0, 0, 0, 0xB}, false, false, false, 100)
	tcp6 := buildL4(t, r, net.HardwareAddr{2, 0, 0, 0, 0, 0xB}, true, true, false, 100)
	csum := func(f nictest.L4Frame, start, off int) func(*dma.Buf) {
		return func(b *dma.Buf) {
			b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(start), uint16(off)
		}
	}
	cases := []struct {
		name  string
		frame []byte
		set   func(*dma.Buf)
	}{
		{"start not the L4 header", udp4.Partial(), csum(udp4, udp4.L4-2, udp4.Field()+2)},
		{"offset not the checksum field", tcp6.Partial(), csum(tcp6, tcp6.L4, 6)},
		{"beyond the frame", udp4.Partial(), csum(udp4, 2000, 6)},
		{"not IP", func() []byte { f := udp4.Partial(); f[12], f[13] = 0x88, 0xB5; return f }(), csum(udp4, udp4.L4, 6)},
		{"IPv4 fragment", func() []byte { f := udp4.Partial(); f[20] |= 0x20; return f }(), csum(udp4, udp4.L4, 6)},
		{"IP length beyond the frame", func() []byte {
			f := udp4.Partial()
			binary.BigEndian.PutUint16(f[16:], 1500)
			return f
		}(), csum(udp4, udp4.L4, 6)},
		{"IPv6 extension header", func() []byte { f := tcp6.Partial(); f[20] = 0; return f }(), csum(tcp6, tcp6.L4, 16)},
		{"launch time", udp4.Bytes, func(b *dma.Buf) { b.TxFlags, b.LaunchTime = dma.TxFlagLaunchTime, 1 }},
		{"unknown flag", udp4.Bytes, func(b *dma.Buf) { b.TxFlags = 1 << 5 }},
		{"length beyond the buffer", udp4.Partial(), func(b *dma.Buf) {
			csum(udp4, udp4.L4, 6)(b)
			b.Len = len(b.Mem) - b.Off + 1
		}},
	}
	for _, c := range cases {
		b := bufWith(t, p, c.frame)
		c.set(b)
		err := tq.CheckTxMeta(b)
		if !errors.Is(err, nic.ErrTxMeta) {
			t.Fatalf("%s: CheckTxMeta %v, want ErrTxMeta", c.name, err)
		}
		ok := bufWith(t, p, udp4.Bytes)
		if n := tq.Send([]*dma.Buf{b, ok}); n != 0 {
			t.Fatalf("%s: Send took %d", c.name, n)
		}
		if b.Owner() == dma.OwnerTx || ok.Owner() == dma.OwnerTx {
			t.Fatalf("%s: a refused frame went to the ring", c.name)
		}
		if n := tq.Send([]*dma.Buf{ok, b}); n != 1 {
			t.Fatalf("%s: Send took %d of a good frame then a refused one, want 1", c.name, n)
		}
		t.Logf("%s: %v", c.name, err)
		b.Free()
	}
	reclaimAll(t, p, 256)
	m.Settle()
	if n := len(rec.Frames()); n != len(cases) {
		t.Fatalf("%d frames on the wire, want the %d good ones", n, len(cases))
	}
	if !bytes.Contains([]byte(tq.CheckTxMeta(func() *dma.Buf {
		b := bufWith(t, p, udp4.Bytes)
		b.TxFlags = dma.TxFlagLaunchTime
		defer b.Free()
		return b
	}()).Error()), []byte("no launch time")) {
		t.Fatal("launch time refused without saying the ENET has none")
	}
	checkModel(t, m)
}

// TestModelTxMetaLegacyBDs: legacy BDs have no esc word: the queue claims
// nothing and refuses every request.
func TestModelTxMetaLegacyBDs(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{LegacyBD: true})
	tq := metaQueue(t, p)
	if tq.TxMeta() != 0 {
		t.Fatalf("TxMeta %v with legacy BDs", tq.TxMeta())
	}
	f := buildL4(t, rand.New(rand.NewPCG(1, 1)), p.MAC(), false, true, false, 64)
	for _, flags := range []uint8{dma.TxFlagTimestamp, dma.TxFlagChecksum} {
		b := bufWith(t, p, f.Partial())
		b.TxFlags, b.CsumStart, b.CsumOffset = flags, uint16(f.L4), uint16(f.Field())
		if err := tq.CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) {
			t.Fatalf("flags %#x: CheckTxMeta %v", flags, err)
		}
		if tq.Send([]*dma.Buf{b}) != 0 {
			t.Fatalf("flags %#x: Send took it", flags)
		}
		b.Free()
	}
	checkModel(t, m)
}

// TestModelTxTimestamps: frames that ask for a timestamp complete through
// TxStamps with their own buffer address, a time from the PHC's clock within
// the PHC readings taken around the send, in sending order and increasing;
// frames that do not ask add nothing.
func TestModelTxTimestamps(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m := newModel(t, fecsim.Config{Variant: v.v})
			var rec sim.Recorder
			m.SetTransmit(rec.Receive)
			p := openPort(t, m.Device(), fec.Config{TxRingSize: 16})
			tq := metaQueue(t, p)
			phc, err := p.PHC()
			if err != nil {
				t.Fatal(err)
			}
			out := make([]nic.TxStamp, 8)
			var prev uint64
			seen := 0
			for round := 0; round < 20; round++ {
				var bufs []*dma.Buf
				var addrs []uint64
				for i := 0; i < 6; i++ {
					b := bufWith(t, p, frameTo([]byte{2, 0, 0, 0, 0, 0xB}, p.MAC(), 60+8*i, round*6+i))
					if i != 2 {
						b.TxFlags = dma.TxFlagTimestamp
					}
					bufs = append(bufs, b)
				}
				before, _ := phc.Time()
				sendAll(t, tq, bufs)
				for _, b := range bufs {
					if b.TxFlags != 0 {
						addrs = append(addrs, b.DataIOVA())
					}
				}
				reclaimAll(t, p, 16)
				after, _ := phc.Time()
				n := tq.TxStamps(out)
				if n != len(addrs) {
					t.Fatalf("round %d: %d stamps, want %d", round, n, len(addrs))
				}
				for i, s := range out[:n] {
					if s.Addr != addrs[i] || !s.OK {
						t.Fatalf("round %d stamp %d: %+v, want address %#x, OK", round, i, s, addrs[i])
					}
					if int64(s.Time) < before || int64(s.Time) > after || s.Time <= prev {
						t.Fatalf("round %d stamp %d: time %d outside the PHC's [%d, %d] or not after %d", round, i, s.Time, before, after, prev)
					}
					prev = s.Time
					seen++
				}
			}
			if seen != 100 {
				t.Fatalf("%d stamps", seen)
			}
			if d, _ := fec.Counter(p.Stats(), "tx_hwtstamp_dropped"); d != 0 {
				t.Fatalf("tx_hwtstamp_dropped %d", d)
			}
			checkModel(t, m)
		})
	}
}

// TestModelTxStampsDropped: completions nobody collects are kept up to
// nic.StampRingSize, then counted in tx_hwtstamp_dropped.
func TestModelTxStampsDropped(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{TxRingSize: 64})
	tq := metaQueue(t, p)
	const n = nic.StampRingSize + 40
	for i := 0; i < n; i++ {
		b := bufWith(t, p, frameTo([]byte{2, 0, 0, 0, 0, 0xB}, p.MAC(), 64, i))
		b.TxFlags = dma.TxFlagTimestamp
		sendAll(t, tq, []*dma.Buf{b})
	}
	reclaimAll(t, p, 64)
	if d := nictest.Counter(t, p, "tx_hwtstamp_dropped"); d != 40 {
		t.Fatalf("tx_hwtstamp_dropped %d, want 40", d)
	}
	out := make([]nic.TxStamp, nic.StampRingSize+1)
	if k := tq.TxStamps(out); k != nic.StampRingSize {
		t.Fatalf("%d stamps kept, want %d", k, nic.StampRingSize)
	}
	checkModel(t, m)
}

// TestModelTxMetaZeroAllocs: Send, Reclaim and TxStamps allocate nothing,
// with checksum and timestamp requests and without.
func TestModelTxMetaZeroAllocs(t *testing.T) {
	const ring = 64
	m := newModel(t, fecsim.Config{Coherent: true, Sched: sim.SchedConfig{Sync: true}})
	p := openPort(t, m.Device(), fec.Config{TxRingSize: ring, PoolSize: 512})
	tq := metaQueue(t, p)
	f := buildL4(t, rand.New(rand.NewPCG(9, 9)), net.HardwareAddr{2, 0, 0, 0, 0, 0xB}, false, false, false, 200)
	pool := p.RxQueue(0).Pool()
	bufs := make([]*dma.Buf, 16)
	out := make([]nic.TxStamp, 16)
	for _, meta := range []bool{false, true} {
		stamps, sentTotal, done := 0, 0, 0
		allocs := testing.AllocsPerRun(200, func() {
			k := pool.GetBurst(bufs)
			for _, b := range bufs[:k] {
				b.Len = copy(b.Mem[b.Off:], f.Bytes)
				if meta {
					b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum|dma.TxFlagTimestamp, uint16(f.L4), uint16(f.Field())
				}
			}
			sent := tq.Send(bufs[:k])
			sentTotal += sent
			for _, b := range bufs[sent:k] {
				b.Free()
			}
			done += tq.Reclaim()
			stamps += tq.TxStamps(out)
		})
		if allocs != 0 {
			t.Fatalf("requests %v: %v allocations per burst", meta, allocs)
		}
		// The wire carries the frames at line rate, so completions (and
		// their stamps) trail the bursts: once the wire has drained, every
		// frame sent has completed, and every frame sent with a request has
		// its stamp, and none came without. How many the bursts sent depends
		// on how fast this machine ran them against the wire; the first
		// bursts fill the empty ring whatever it is.
		want := 0
		if meta {
			want = sentTotal
		}
		for deadline := time.Now().Add(5 * time.Second); (done < sentTotal || stamps < want) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			done += tq.Reclaim()
			for n := tq.TxStamps(out); n > 0; n = tq.TxStamps(out) {
				stamps += n
			}
		}
		if sentTotal < ring-1 || done != sentTotal {
			t.Fatalf("requests %v: %d frames sent in 201 bursts, %d completed", meta, sentTotal, done)
		}
		if stamps != want {
			t.Fatalf("requests %v: %d stamps for %d frames sent", meta, stamps, sentTotal)
		}
	}
	checkModel(t, m)
}
