package fec_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// newModel builds a model (non-coherent unless mc says otherwise) and closes it
// at the end of the test.
func newModel(t testing.TB, mc fecsim.Config) *fecsim.Model {
	t.Helper()
	if mc.AutonegDelay == 0 {
		mc.AutonegDelay = time.Millisecond
	}
	m, err := fecsim.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// openPort opens the driver on a device and closes it at the end of the test.
func openPort(t testing.TB, dev nic.Device, cfg fec.Config) *fec.Port {
	t.Helper()
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = 2 * time.Second
	}
	p, err := fec.Open(dev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// checkModel fails the test if the model recorded a fault.
func checkModel(t testing.TB, m *fecsim.Model) {
	t.Helper()
	if err := m.Err(); err != nil {
		t.Fatalf("model faults: %v", err)
	}
}

var variants = []struct {
	name string
	v    fecsim.Variant
}{{"imx8mp", fecsim.IMX8MP}, {"imx6", fecsim.IMX6}}

func TestModelBringUp(t *testing.T) {
	for _, v := range variants {
		for _, legacy := range []bool{false, true} {
			name := v.name + "/extended"
			if legacy {
				name = v.name + "/legacy"
			}
			t.Run(name, func(t *testing.T) {
				m := newModel(t, fecsim.Config{Variant: v.v})
				p := openPort(t, m.Device(), fec.Config{LegacyBD: legacy})
				if !bytes.Equal(p.MAC(), m.MAC()) {
					t.Fatalf("MAC %s, model's %s", p.MAC(), m.MAC())
				}
				if p.Extended() == legacy {
					t.Fatalf("extended descriptors %v with LegacyBD %v", p.Extended(), legacy)
				}
				l := p.Link()
				if !l.Up || l.SpeedMbps != 1000 || !l.FullDuplex {
					t.Fatalf("link %+v, want 1000 full", l)
				}
				if pl := p.ProgrammedLink(); pl.SpeedMbps != 1000 || !pl.FullDuplex {
					t.Fatalf("MAC programmed for %+v", pl)
				}
				d := p.Dump()
				ecr, _ := d.Reg("ECR")
				for field, want := range map[string]string{"ETHEREN": "1", "DBSWP": "1", "SPEED1000": "1", "EN1588": map[bool]string{true: "0", false: "1"}[legacy]} {
					if got, _ := ecr.Field(field); got != want {
						t.Errorf("ECR.%s = %s, want %s\n%s", field, got, want, d)
					}
				}
				if v, _ := d.Reg("RDAR"); v.Value == 0 {
					t.Errorf("RDAR reads 0 after Open: ring 0 not active\n%s", d)
				}
				checkModel(t, m)
			})
		}
	}
}

func TestModelRMII100(t *testing.T) {
	m := newModel(t, fecsim.Config{RMII: true})
	p := openPort(t, m.Device(), fec.Config{Interface: fec.RMII})
	if l := p.ProgrammedLink(); l.SpeedMbps != 100 || !l.FullDuplex {
		t.Fatalf("programmed %+v, want 100 full", l)
	}
	peer := newModel(t, fecsim.Config{RMII: true, MAC: []byte{2, 0, 0, 0, 0, 2}})
	pp := openPort(t, peer.Device(), fec.Config{Interface: fec.RMII})
	a, b := sim.NewPair()
	m.Attach(a)
	peer.Attach(b)
	f := frameTo(pp.MAC(), p.MAC(), 100, 1)
	sendFrame(t, p, 0, f)
	if got := recvFrames(t, pp, 1); !bytes.Equal(got[0], f) {
		t.Fatal("frame differs at 100 Mb/s")
	}
	checkModel(t, m)
	checkModel(t, peer)
}

// pair is two ports on two models joined by an in-memory wire.
type pair struct {
	ma, mb *fecsim.Model
	a, b   *fec.Port
}

func newPair(t testing.TB, v fecsim.Variant, cfg fec.Config) *pair {
	t.Helper()
	ma := newModel(t, fecsim.Config{Variant: v, MAC: []byte{2, 0, 0, 0, 0, 0xA}})
	mb := newModel(t, fecsim.Config{Variant: v, MAC: []byte{2, 0, 0, 0, 0, 0xB}})
	wa, wb := sim.NewPair()
	ma.Attach(wa)
	mb.Attach(wb)
	return &pair{ma: ma, mb: mb, a: openPort(t, ma.Device(), cfg), b: openPort(t, mb.Device(), cfg)}
}

// TestModelFramesBothWays: byte-exact frames of every size class, both ways,
// through rings small enough to wrap many times.
func TestModelFramesBothWays(t *testing.T) {
	for _, v := range variants {
		for _, legacy := range []bool{false, true} {
			t.Run(v.name+map[bool]string{false: "/extended", true: "/legacy"}[legacy], func(t *testing.T) {
				const ring = 8
				pr := newPair(t, v.v, fec.Config{RxRingSize: ring, TxRingSize: ring, PoolSize: 32, LegacyBD: legacy})
				sizes := []int{60, 64, 61, 128, 1514, 1000, 14, 1980, 333}
				seq := 0
				for round := 0; round < 12; round++ {
					for dir := 0; dir < 2; dir++ {
						src, dst := pr.a, pr.b
						if dir == 1 {
							src, dst = pr.b, pr.a
						}
						var want [][]byte
						for i := 0; i < ring/2+1; i++ {
							f := frameTo(dst.MAC(), src.MAC(), sizes[seq%len(sizes)], seq)
							seq++
							sendFrame(t, src, 0, f)
							if len(f) < 60 { // padded with zeros by the driver
								f = append(f, make([]byte, 60-len(f))...)
							}
							want = append(want, f)
						}
						// The owner of the port reclaims (on the i.MX6
						// that re-kicks a ring ERR006358 stopped).
						reclaimAll(t, src, ring)
						got := recvFrames(t, dst, len(want))
						for i := range want {
							if !bytes.Equal(got[i], want[i]) {
								t.Fatalf("round %d dir %d frame %d: got %d bytes %x..., want %d bytes %x...", round, dir, i, len(got[i]), got[i][:min(20, len(got[i]))], len(want[i]), want[i][:min(20, len(want[i]))])
							}
						}
						reclaimAll(t, src, ring)
					}
				}
				for _, p := range []*fec.Port{pr.a, pr.b} {
					if s := p.RxQueue(0).Pool().Stats(); s.ByOwner[dma.OwnerRx] != ring || s.ByOwner[dma.OwnerApp] != 0 || s.BadPuts != 0 {
						t.Fatalf("pool accounting %+v", s)
					}
					if got := nictest.Counter(t, p, "tx_packets"); got != uint64(seq/2) {
						t.Errorf("MIB tx_packets %d, want %d", got, seq/2)
					}
					if got := nictest.Counter(t, p, "rx_packets"); got != uint64(seq/2) {
						t.Errorf("MIB rx_packets %d, want %d", got, seq/2)
					}
					if got := nictest.Counter(t, p, "rx_queue_0_packets"); got != uint64(seq/2) {
						t.Errorf("rx_queue_0_packets %d, want %d", got, seq/2)
					}
					if got := nictest.Counter(t, p, "rx_desc_errors"); got != 0 {
						t.Errorf("rx_desc_errors %d", got)
					}
				}
				checkModel(t, pr.ma)
				checkModel(t, pr.mb)
			})
		}
	}
}

// TestModelRingFull: more frames arrive than the ring holds; the excess waits
// in the receive FIFO and reaches the driver after its RDAR writes; only what
// the full FIFO cannot take is dropped, counted once in IEEE_rx_macerr.
func TestModelRingFull(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 4, TxRingSize: 4, PoolSize: 8})
	f := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 0)
	for i := 0; i < 10; i++ {
		if !m.Inject(f) {
			t.Fatalf("frame %d refused: the FIFO holds 28", i)
		}
	}
	if got := recvFrames(t, p, 10); len(got) != 10 {
		t.Fatalf("%d frames", len(got))
	}
	// The ring's 4 BDs, then 28 in the 2 KB FIFO, then 3 dropped.
	refused := 0
	for i := 0; i < 4+2048/72+3; i++ {
		if !m.Inject(f) {
			refused++
		}
	}
	if c := m.Counters(); refused != 3 || c.RxOverflow != 3 {
		t.Fatalf("refused %d, model overflow %d: want 3", refused, c.RxOverflow)
	}
	if got := recvFrames(t, p, 4+2048/72); len(got) != 4+2048/72 {
		t.Fatalf("%d frames after the overflow", len(got))
	}
	if v := nictest.Counter(t, p, "IEEE_rx_macerr"); v != 3 {
		t.Fatalf("IEEE_rx_macerr %d, want 3", v)
	}
	m.Inject(f)
	if got := recvFrames(t, p, 1); !bytes.Equal(got[0], f) {
		t.Fatal("frame after refill differs")
	}
	checkModel(t, m)
}

// syncDropper passes allocations through but drops every Sync for the device:
// what a driver that forgot dma_sync_*_for_device would do.
type syncDropper struct {
	dma.Allocator
	drop bool
}

func (s *syncDropper) Sync(r *dma.Region, off, n int, dir dma.SyncDir) {
	if s.drop && dir == dma.ForDevice {
		return
	}
	s.Allocator.Sync(r, off, n, dir)
}

type dropDevice struct {
	*fecsim.Device
	alloc *syncDropper
}

func (d *dropDevice) DMA() dma.Allocator { return d.alloc }

// TestModelNonCoherentMissingSync: with Syncs for the device dropped, the
// non-coherent model never sees the TX descriptor: nothing goes out. The same
// frame with Syncs arrives (so the test can fail both ways).
func TestModelNonCoherentMissingSync(t *testing.T) {
	for _, drop := range []bool{false, true} {
		m := newModel(t, fecsim.Config{})
		var sent [][]byte
		m.SetTransmit(func(f []byte) { sent = append(sent, append([]byte(nil), f...)) })
		dev := &dropDevice{Device: m.Device(), alloc: &syncDropper{Allocator: m.Device().DMA()}}
		p := openPort(t, dev, fec.Config{RxRingSize: 8, TxRingSize: 8})
		dev.alloc.drop = drop
		f := frameTo([]byte{2, 1, 1, 1, 1, 1}, p.MAC(), 100, 5)
		sendFrame(t, p, 0, f)
		m.Settle() // the device has done what it can with the doorbell
		if drop {
			if len(sent) != 0 {
				t.Fatalf("a frame went out although its descriptor was never synced for the device")
			}
			continue
		}
		if len(sent) != 1 || !bytes.Equal(sent[0], f) {
			t.Fatalf("with syncs: %d frames sent", len(sent))
		}
		checkModel(t, m)
	}
	// Coherent memory needs no Sync: the same dropped Syncs are harmless.
	m := newModel(t, fecsim.Config{Coherent: true})
	var sent int
	m.SetTransmit(func([]byte) { sent++ })
	dev := &dropDevice{Device: m.Device(), alloc: &syncDropper{Allocator: m.Device().DMA(), drop: true}}
	p := openPort(t, dev, fec.Config{RxRingSize: 8, TxRingSize: 8})
	sendFrame(t, p, 0, frameTo([]byte{2, 1, 1, 1, 1, 1}, p.MAC(), 100, 5))
	m.Settle()
	if sent != 1 {
		t.Fatalf("coherent model: %d frames sent", sent)
	}
	checkModel(t, m)
}

// TestModelDMARefusal: memory above 4 GiB is refused at Open; buffers the
// device's allocator did not hand out are refused by Send.
func TestModelDMARefusal(t *testing.T) {
	m := newModel(t, fecsim.Config{HighMemory: true})
	_, err := fec.Open(m.Device(), fec.Config{LinkTimeout: -1})
	if !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("Open on memory above 4 GiB: %v, want ErrTooHigh", err)
	}
	checkModel(t, m)

	m = newModel(t, fecsim.Config{})
	var sent int
	m.SetTransmit(func([]byte) { sent++ })
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 8, TxRingSize: 8})
	far, err := dma.NewPool(&nictest.FarAllocator{}, 4, 2304)
	if err != nil {
		t.Fatal(err)
	}
	b := far.Get()
	b.Len = 64
	if k := p.TxQueue(0).Send([]*dma.Buf{b}); k != 1 {
		t.Fatalf("Send took %d", k)
	}
	if sent != 0 || nictest.Counter(t, p, "tx_refused_dma") != 1 || b.Owner() != dma.OwnerFree {
		t.Fatalf("foreign buffer: sent %d, refused %d, owner %s", sent, nictest.Counter(t, p, "tx_refused_dma"), b.Owner())
	}
	checkModel(t, m)
}

// TestModelCloseReopen: Close returns every buffer and frees every region; a
// second Open on the same device works and moves frames.
func TestModelCloseReopen(t *testing.T) {
	pr := newPair(t, fecsim.IMX8MP, fec.Config{RxRingSize: 16, TxRingSize: 16})
	regions := pr.ma.Memory().Regions()
	if regions == 0 {
		t.Fatal("no regions")
	}
	f := frameTo(pr.b.MAC(), pr.a.MAC(), 200, 1)
	sendFrame(t, pr.a, 0, f)
	recvFrames(t, pr.b, 1)
	sendFrame(t, pr.a, 0, f) // left on the TX ring, not reclaimed
	if err := pr.a.Close(); err != nil {
		t.Fatal(err)
	}
	// Whether it left before the graceful stop depends on when the device got
	// to it (GTS stops before the next frame, the reset drops the rest):
	// drain what arrived.
	time.Sleep(5 * time.Millisecond)
	drain := make([]*dma.Buf, 4)
	for k := pr.b.RxQueue(0).Recv(drain); k > 0; k = pr.b.RxQueue(0).Recv(drain) {
		for _, b := range drain[:k] {
			b.Free()
		}
	}
	if n := pr.ma.Memory().Regions(); n != 0 {
		t.Fatalf("%d regions left after Close", n)
	}
	if err := pr.a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if pr.a.RxQueue(0).Recv(make([]*dma.Buf, 4)) != 0 {
		t.Fatal("Recv after Close")
	}
	a2 := openPort(t, pr.ma.Device(), fec.Config{RxRingSize: 16, TxRingSize: 16})
	for i := 0; i < 3; i++ {
		f := frameTo(pr.b.MAC(), a2.MAC(), 300+i, i)
		sendFrame(t, a2, 0, f)
		if got := recvFrames(t, pr.b, 1); !bytes.Equal(got[0], f) {
			t.Fatal("frame after reopen differs")
		}
		g := frameTo(a2.MAC(), pr.b.MAC(), 90+i, i)
		sendFrame(t, pr.b, 0, g)
		if got := recvFrames(t, a2, 1); !bytes.Equal(got[0], g) {
			t.Fatal("frame to the reopened port differs")
		}
	}
	if got := nictest.Counter(t, a2, "tx_packets"); got != 3 {
		t.Fatalf("MIB tx_packets after reopen %d, want 3 (counts from before the reopen excluded)", got)
	}
	checkModel(t, pr.ma)
	checkModel(t, pr.mb)
}

// TestModelStats: MIB counters count frames and bad FCS, never clear on read;
// Stats reports increments, not raw values twice.
func TestModelStats(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 16, TxRingSize: 16})
	f := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 100, 0)
	for i := 0; i < 5; i++ {
		m.Inject(f)
	}
	m.InjectBadFCS(f)
	recvFrames(t, p, 5)
	s1 := nictest.Counter(t, p, "rx_packets")
	if s1 < 5 {
		t.Fatalf("rx_packets %d after 5 good frames", s1)
	}
	if c := nictest.Counter(t, p, "IEEE_rx_crc"); c != 1 {
		t.Fatalf("IEEE_rx_crc %d, want 1", c)
	}
	if s2 := nictest.Counter(t, p, "rx_packets"); s2 != s1 {
		t.Fatalf("rx_packets moved from %d to %d without traffic (counted twice?)", s1, s2)
	}
	if got := nictest.Counter(t, p, "IEEE_rx_frame_ok"); got != 5 {
		t.Fatalf("IEEE_rx_frame_ok %d, want 5", got)
	}
	if got := nictest.Counter(t, p, "rx_queue_0_bytes"); got != 500 {
		t.Fatalf("rx_queue_0_bytes %d, want 500 (FCS cut off)", got)
	}
	checkModel(t, m)
}

// TestModelInterrupts: with Config.Interrupts, a received frame fires ring 0's
// interrupt; ArmIRQ re-arms it for the next.
func TestModelInterrupts(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m := newModel(t, fecsim.Config{Variant: v.v})
			p := openPort(t, m.Device(), fec.Config{Interrupts: true, RxRingSize: 8, TxRingSize: 8})
			rq := p.RxQueue(0)
			irq := rq.IRQ()
			if irq == nil {
				t.Fatal("no IRQ on ring 0")
			}
			f := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 0)
			for i := 0; i < 3; i++ {
				if fired, _ := irq.Wait(0); fired {
					t.Fatalf("round %d: interrupt pending before a frame arrived", i)
				}
				m.Inject(f)
				if fired, err := irq.Wait(time.Second); !fired || err != nil {
					t.Fatalf("round %d: no interrupt for a received frame (%v)", i, err)
				}
				recvFrames(t, p, 1)
				rq.ArmIRQ()
			}
			checkModel(t, m)
		})
	}
}

// TestModelMultiQueue: frames sent on every TX ring of the i.MX8MP arrive;
// frames with VLAN priority 1 and 5 land on RX rings 1 and 2.
func TestModelMultiQueue(t *testing.T) {
	pr := newPair(t, fecsim.IMX8MP, fec.Config{Queues: 3, RxRingSize: 8, TxRingSize: 8})
	for q := 0; q < 3; q++ {
		f := frameTo(pr.b.MAC(), pr.a.MAC(), 80+q, q)
		sendFrame(t, pr.a, q, f)
		if got := recvFrames(t, pr.b, 1); !bytes.Equal(got[0], f) {
			t.Fatalf("frame from TX ring %d differs", q)
		}
	}
	bufs := make([]*dma.Buf, 4)
	for _, c := range []struct {
		pcp  byte
		ring int
	}{{1, 1}, {5, 2}} {
		f := frameTo(pr.b.MAC(), pr.a.MAC(), 90, 0)
		vf := append(append(append([]byte(nil), f[:12]...), 0x81, 0x00, c.pcp<<5, 7), f[12:]...)
		sendFrame(t, pr.a, 0, vf)
		deadline := time.Now().Add(time.Second)
		for {
			if n := pr.b.RxQueue(c.ring).Recv(bufs); n == 1 {
				if !bytes.Equal(bufs[0].Data(), vf) || int(bufs[0].Queue) != c.ring {
					t.Fatalf("PCP %d: wrong frame or queue %d", c.pcp, bufs[0].Queue)
				}
				bufs[0].Free()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("PCP %d: nothing on RX ring %d", c.pcp, c.ring)
			}
		}
	}
	checkModel(t, pr.ma)
	checkModel(t, pr.mb)
}

// TestModelHostileLength: a frame of 2000 bytes (above MAX_FL 1984) is not
// delivered as a frame; the port keeps working.
func TestModelHostileLength(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 8, TxRingSize: 8})
	big := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 2000, 0)
	m.Inject(big)
	ok := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 70, 1)
	m.Inject(ok)
	got := recvFrames(t, p, 1)
	if !bytes.Equal(got[0], ok) {
		t.Fatalf("got a %d-byte frame, want the 70-byte one", len(got[0]))
	}
	if e := nictest.Counter(t, p, "rx_desc_errors"); e == 0 && m.Counters().RxErrors == 0 {
		t.Fatal("the oversized frame was neither counted by the driver nor dropped by the model")
	}
}

// TestModelCacheLines: the whole-line ring discipline (64-byte lines) moves
// frames byte-exactly through the strict model, legacy and extended. Up to a
// line less one of RX descriptors may wait for their line to be consumed, so
// the RX ring is sized for the largest burst plus a line.
func TestModelCacheLines(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		pr := newPair(t, fecsim.IMX8MP, fec.Config{RxRingSize: 32, TxRingSize: 16, PoolSize: 80, LegacyBD: legacy, CacheLine: 64})
		seq := 0
		for round := 0; round < 20; round++ {
			var want [][]byte
			for i := 0; i < 1+round%11; i++ {
				f := frameTo(pr.b.MAC(), pr.a.MAC(), 60+seq*37%1400, seq)
				seq++
				want = append(want, f)
				sendFrame(t, pr.a, 0, f)
			}
			got := recvFrames(t, pr.b, len(want))
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("legacy=%v round %d frame %d differs", legacy, round, i)
				}
			}
		}
		checkModel(t, pr.ma)
		checkModel(t, pr.mb)
	}
}

// TestModelLinkLater: a cable plugged in after Open: Open warns and programs
// the MAC for 1000/full, the link comes up, frames pass.
func TestModelLinkLater(t *testing.T) {
	m := newModel(t, fecsim.Config{Unplugged: true})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 8, TxRingSize: 8, LinkTimeout: 30 * time.Millisecond})
	if len(p.Warnings()) == 0 || p.Link().Up {
		t.Fatalf("no warning for a link that stayed down (warnings %q, link %+v)", p.Warnings(), p.Link())
	}
	if _, err := p.WaitLink(10 * time.Millisecond); !errors.Is(err, nic.ErrLinkDown) {
		t.Fatalf("WaitLink with no cable: %v", err)
	}
	m.PHY().SetConnected(true)
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	m.SetTransmit(func(f []byte) { sent = append(sent, append([]byte(nil), f...)) })
	f := frameTo([]byte{2, 1, 1, 1, 1, 1}, p.MAC(), 100, 1)
	sendFrame(t, p, 0, f)
	m.Settle()
	if len(sent) != 1 || !bytes.Equal(sent[0], f) {
		t.Fatalf("%d frames sent after the link came up", len(sent))
	}
	checkModel(t, m)
}

// TestModelPromisc: frames to another address are filtered until SetPromisc.
func TestModelPromisc(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 8, TxRingSize: 8})
	other := frameTo([]byte{2, 7, 7, 7, 7, 7}, []byte{2, 9, 9, 9, 9, 9}, 64, 0)
	m.Inject(other)
	if n := p.RxQueue(0).Recv(make([]*dma.Buf, 4)); n != 0 || m.Counters().RxFiltered != 1 {
		t.Fatalf("a frame to another address was received (%d) or not filtered (%d)", n, m.Counters().RxFiltered)
	}
	if err := p.SetPromisc(true); err != nil {
		t.Fatal(err)
	}
	m.Inject(other)
	if got := recvFrames(t, p, 1); !bytes.Equal(got[0], other) {
		t.Fatal("promiscuous frame differs")
	}
	p.Close()
	if err := p.SetPromisc(false); !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("SetPromisc after Close: %v", err)
	}
	checkModel(t, m)
}

// TestModelAdjustLink: the cable goes into a 10/100 partner after Open
// programmed 1000/full; AdjustLink restarts the MAC at 100 and frames pass
// (the model faults a frame at the wrong speed, so checkModel would catch a
// restart that did not take).
func TestModelAdjustLink(t *testing.T) {
	m := newModel(t, fecsim.Config{Unplugged: true, PartnerNo1000: true})
	p := openPort(t, m.Device(), fec.Config{RxRingSize: 8, TxRingSize: 8, LinkTimeout: 20 * time.Millisecond})
	if l := p.ProgrammedLink(); l.SpeedMbps != 1000 {
		t.Fatalf("programmed %+v with the link down, want the 1000 Mb/s default", l)
	}
	if _, restarted, err := p.AdjustLink(); restarted || err != nil {
		t.Fatalf("AdjustLink with the link down: restarted %v, %v", restarted, err)
	}
	m.PHY().SetConnected(true)
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	l, restarted, err := p.AdjustLink()
	if err != nil || !restarted || l.SpeedMbps != 100 || p.ProgrammedLink().SpeedMbps != 100 {
		t.Fatalf("AdjustLink: %+v restarted %v err %v", l, restarted, err)
	}
	if _, again, _ := p.AdjustLink(); again {
		t.Fatal("a second AdjustLink restarted again")
	}
	var sent [][]byte
	m.SetTransmit(func(f []byte) { sent = append(sent, append([]byte(nil), f...)) })
	f := frameTo([]byte{2, 1, 1, 1, 1, 1}, p.MAC(), 100, 1)
	sendFrame(t, p, 0, f)
	g := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 80, 2)
	m.Inject(g)
	if got := recvFrames(t, p, 1); !bytes.Equal(got[0], g) {
		t.Fatal("received frame differs after the restart")
	}
	m.Settle()
	if len(sent) != 1 || !bytes.Equal(sent[0], f) {
		t.Fatalf("%d frames sent after the restart", len(sent))
	}
	if s := p.RxQueue(0).Pool().Stats(); s.ByOwner[dma.OwnerRx] != 8 || s.ByOwner[dma.OwnerApp] != 0 {
		t.Fatalf("pool after restart %+v", s)
	}
	checkModel(t, m)
}
