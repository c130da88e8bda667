package dwmac_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// rig is the driver on the dwmac model, the model on one end of an in-memory
// wire, and the test at the other end.
type rig struct {
	t    *testing.T
	m    *dwmacsim.Model
	p    *dwmac.Port
	wire *sim.PairEnd // the test's end
	rec  sim.Recorder // frames the port transmitted, in order
}

func newRig(t *testing.T, mcfg dwmacsim.Config, cfg dwmac.Config) *rig {
	t.Helper()
	r := openRig(t, mcfg, cfg)
	if _, err := r.p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	return r
}

// openRig opens the port on a new model without waiting for the link.
func openRig(t *testing.T, mcfg dwmacsim.Config, cfg dwmac.Config) *rig {
	t.Helper()
	if mcfg.AutonegDelay == 0 {
		mcfg.AutonegDelay = 5 * time.Millisecond
	}
	m, err := dwmacsim.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, m: m}
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = 2 * time.Second
	}
	r.wire = simtest.OpenOnWire(t, m, &r.p, &r.rec, func() (*dwmac.Port, error) { return dwmac.Open(m.Device(), cfg) })
	return r
}

func (r *rig) checkModel() {
	r.t.Helper()
	simtest.NoFaults(r.t, r.m)
}

func (r *rig) sent() [][]byte { return r.rec.Frames() }

// transmit sends frames through TX queue 0 in bursts, reclaiming as it goes.
func transmit(t *testing.T, p nic.Port, frames [][]byte, burst int) {
	t.Helper()
	nictest.Transmit(t, p, 0, frames, burst, 10*time.Second)
}

// receive collects n frames from the port's RX queues.
func receive(t *testing.T, p nic.Port, n int) [][]byte {
	t.Helper()
	return nictest.RecvFrames(t, p, n, 10*time.Second)
}

// reclaimAll waits until every TX descriptor of the port is complete.
func reclaimAll(t *testing.T, p nic.Port, ringSize int) {
	t.Helper()
	nictest.ReclaimAll(t, p, ringSize, 5*time.Second)
}

// exchange sends n random frames each way and checks them byte for byte.
func exchange(t *testing.T, r *rig, rng *rand.Rand, n, burst int) {
	t.Helper()
	in := make([][]byte, n)
	for i := range in {
		in[i] = nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1514-60+1))
	}
	// Wire -> port, interleaved with receiving so small rings do not overflow.
	var got [][]byte
	for i := 0; i < n; i += burst {
		end := min(i+burst, n)
		for _, f := range in[i:end] {
			if err := r.wire.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, receive(t, r.p, end-i)...)
	}
	for i := range in {
		if !bytes.Equal(got[i], in[i]) {
			t.Fatalf("RX frame %d: got %d bytes, want %d (first differing data)", i, len(got[i]), len(in[i]))
		}
	}
	// Port -> wire.
	before := len(r.sent())
	out := make([][]byte, n)
	for i := range out {
		out[i] = nictest.RandFrame(rng, net.HardwareAddr{0x02, 9, 9, 9, 9, 9}, 60+rng.IntN(1514-60+1))
	}
	transmit(t, r.p, out, burst)
	deadline := time.Now().Add(5 * time.Second)
	for len(r.sent())-before < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d frames on the wire", len(r.sent())-before, n)
		}
		time.Sleep(time.Millisecond)
	}
	sent := r.sent()[before:]
	for i := range out {
		if !bytes.Equal(sent[i], out[i]) {
			t.Fatalf("TX frame %d: wire has %d bytes, want %d", i, len(sent[i]), len(out[i]))
		}
	}
}

func TestSimBringUpIntel(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE}
	r := newRig(t, dwmacsim.Config{MAC: mac}, dwmac.Config{})
	p := r.p
	if !bytes.Equal(p.MAC(), mac) {
		t.Fatalf("MAC %s, want the firmware's %s (read before the DMA reset clears it)", p.MAC(), mac)
	}
	if p.PHYID() != 0x01410DD0 {
		t.Fatalf("PHY ID %#x", p.PHYID())
	}
	if l := p.Link(); l != (nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}) {
		t.Fatalf("link %+v", l)
	}
	if p.AddrBits() != 40 || !p.StripsFCS() {
		t.Fatalf("AddrBits %d, StripsFCS %v", p.AddrBits(), p.StripsFCS())
	}
	d := p.Dump()
	for _, c := range []struct{ reg, field, want string }{
		{"MAC_CONFIG", "RE", "1"}, {"MAC_CONFIG", "TE", "1"}, {"MAC_CONFIG", "SPEED", "1000"}, {"MAC_CONFIG", "DM", "1"},
		{"DMA_SYSBUS_MODE", "EAME", "1"}, {"DMA_CH0_RX_CONTROL", "SR", "1"}, {"DMA_CH0_TX_CONTROL", "ST", "1"},
		{"MTL_TXQ0_OP_MODE", "TXQEN", "2"}, {"MTL_RXQ0_OP_MODE", "RSF", "1"}, {"MAC_ADDR0_HIGH", "MAC", mac.String()},
		{"MAC_ADDR0_HIGH", "AE", "1"}, {"MAC_RXQ_CTRL0", "Q0", "dcb"}, {"DMA_MODE", "SWR", "0"},
	} {
		reg, ok := d.Reg(c.reg)
		if !ok {
			t.Fatalf("dump has no %s", c.reg)
		}
		if v, _ := reg.Field(c.field); v != c.want {
			t.Errorf("%s.%s = %q, want %q", c.reg, c.field, v, c.want)
		}
	}
	r.checkModel()
}

func TestSimFramesBothWaysIntel(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{})
	exchange(t, r, rand.New(rand.NewPCG(1, 2)), 300, 32)
	if n := nictest.Counter(t, r.p, "rx_packets"); n != 300 {
		t.Fatalf("rx_packets %d", n)
	}
	if err := r.p.CheckDMA(); err != nil {
		t.Fatalf("CheckDMA after traffic: %v", err)
	}
	r.checkModel()
}

func TestSimFramesBothWaysIMX8MPNonCoherent(t *testing.T) {
	r := newRig(t, dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true}, dwmac.Config{})
	if r.p.AddrBits() != 34 || r.p.Model().Integration != dwmac.IntegrationIMX8MP {
		t.Fatalf("AddrBits %d, model %+v", r.p.AddrBits(), r.p.Model())
	}
	exchange(t, r, rand.New(rand.NewPCG(3, 4)), 200, 16)
	r.checkModel()
}

func TestSimRingWrapSmallRings(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{RxRingSize: 4, TxRingSize: 4, PoolSize: 8})
	exchange(t, r, rand.New(rand.NewPCG(5, 6)), 97, 3)
	reclaimAll(t, r.p, 4)
	r.checkModel()
}

func TestSimLink100(t *testing.T) {
	r := newRig(t, dwmacsim.Config{PartnerNo1000: true}, dwmac.Config{})
	if l := r.p.Link(); l.SpeedMbps != 100 || !l.FullDuplex {
		t.Fatalf("link %+v, want 100 full", l)
	}
	exchange(t, r, rand.New(rand.NewPCG(7, 8)), 20, 8)
	r.checkModel()
}

func TestSimLinkDownReported(t *testing.T) {
	m, err := dwmacsim.New(dwmacsim.Config{Unplugged: true, AutonegDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := dwmac.Open(m.Device(), dwmac.Config{LinkTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open with the cable out must succeed (link down is reported, not fatal): %v", err)
	}
	defer p.Close()
	if l := p.Link(); l.Up {
		t.Fatalf("link %+v with the cable out", l)
	}
	_, err = p.WaitLink(50 * time.Millisecond)
	if !errors.Is(err, nic.ErrLinkDown) || !strings.Contains(err.Error(), "cable") {
		t.Fatalf("WaitLink: %v", err)
	}
	if w := strings.Join(p.Warnings(), "; "); !strings.Contains(w, "link down") {
		t.Fatalf("warnings %q do not mention the link", w)
	}
	// Plug in: the link comes up and the MAC follows.
	m.PHY().SetConnected(true)
	if l, err := p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
		t.Fatalf("after plugging in: %+v, %v", l, err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSimNoRxClock(t *testing.T) {
	m, err := dwmacsim.New(dwmacsim.Config{NoRxClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = dwmac.Open(m.Device(), dwmac.Config{})
	if !errors.Is(err, nic.ErrTimeout) || !strings.Contains(err.Error(), "RX clock") {
		t.Fatalf("Open without the PHY's RX clock: %v", err)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("the driver touched registers during the reset: %v", err)
	}
	if n := m.Memory().Regions(); n != 0 {
		t.Fatalf("%d DMA regions left after the failed Open", n)
	}
}

// TestSimInterruptWakesReceiver: a receiver blocked on its queue's vector wakes
// when a frame arrives, on both interrupt layouts.
func TestSimInterruptWakesReceiver(t *testing.T) {
	for _, c := range []struct {
		name   string
		mcfg   dwmacsim.Config
		queues int
	}{
		{"intel-per-channel", dwmacsim.Config{}, 2},
		{"imx8mp-macirq", dwmacsim.Config{Variant: dwmacsim.IMX8MP}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.mcfg, dwmac.Config{Queues: c.queues, Interrupts: true})
			q := r.p.NumQueues() - 1
			rq := r.p.RxQueue(q)
			if rq.IRQ() == nil {
				t.Fatal("no IRQ with Interrupts set")
			}
			bufs := make([]*dma.Buf, 8)
			for round := 0; round < 3; round++ {
				rq.ArmIRQ()
				if n := rq.Recv(bufs); n != 0 {
					t.Fatalf("frames before injecting: %d", n)
				}
				frame := nictest.RandFrame(rand.New(rand.NewPCG(uint64(round), 1)), r.p.MAC(), 100)
				woke := make(chan error, 1)
				go func() {
					ok, err := rq.IRQ().Wait(5 * time.Second)
					if err == nil && !ok {
						err = fmt.Errorf("Wait timed out")
					}
					woke <- err
				}()
				time.Sleep(20 * time.Millisecond)
				if !r.m.InjectQueue(q, frame) {
					t.Fatalf("round %d: model did not take the frame", round)
				}
				if err := <-woke; err != nil {
					t.Fatalf("round %d: receiver not woken: %v", round, err)
				}
				if n := rq.Recv(bufs); n != 1 || !bytes.Equal(bufs[0].Data(), frame) {
					t.Fatalf("round %d: Recv %d after the interrupt", round, n)
				}
				bufs[0].Free()
			}
			r.checkModel()
		})
	}
}

// noSyncDevice hides Sync from the driver: what a driver that forgets its
// cache maintenance would do on the i.MX8MP.
type noSyncDevice struct {
	nic.Device
	a noSyncAlloc
}

type noSyncAlloc struct{ dma.Allocator }

func (noSyncAlloc) Sync(*dma.Region, int, int, dma.SyncDir) {}

func (d *noSyncDevice) DMA() dma.Allocator { return d.a }

func TestSimNonCoherentMissingSyncFails(t *testing.T) {
	m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true, AutonegDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dev := &noSyncDevice{Device: m.Device()}
	dev.a = noSyncAlloc{m.Device().DMA()}
	p, err := dwmac.Open(dev, dwmac.Config{RxRingSize: 8})
	if err == nil {
		defer p.Close()
		if _, err := p.WaitLink(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		// The device never saw the posted descriptors: it has nowhere to write.
		frame := nictest.RandFrame(rand.New(rand.NewPCG(9, 9)), p.MAC(), 200)
		took := m.Inject(frame)
		bufs := make([]*dma.Buf, 4)
		n := p.RxQueue(0).Recv(bufs)
		if took && n == 1 && bytes.Equal(bufs[0].Data(), frame) {
			t.Fatal("a frame went through a non-coherent device with every Sync missing")
		}
		for _, b := range bufs[:n] {
			b.Free()
		}
		if took {
			t.Logf("model took the frame (%d received), but it did not arrive intact", n)
		}
		// TX likewise: the device never sees OWN on a descriptor the CPU did
		// not clean, so nothing reaches the wire.
		var wire int
		m.SetTransmit(func([]byte) { wire++ })
		b := p.RxQueue(0).Pool().Get()
		b.Len = copy(b.Mem[b.Off:], frame)
		p.TxQueue(0).Send([]*dma.Buf{b})
		if wire != 0 {
			t.Fatal("a frame was sent from a descriptor that was never synced for the device")
		}
	} else {
		t.Logf("Open failed without Sync: %v", err)
	}
	// The same with Sync: works (the positive control).
	m2, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true, AutonegDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	p2, err := dwmac.Open(m2.Device(), dwmac.Config{RxRingSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if _, err := p2.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	frame := nictest.RandFrame(rand.New(rand.NewPCG(9, 9)), p2.MAC(), 200)
	if !m2.Inject(frame) {
		t.Fatal("model refused the frame with Sync in place")
	}
	got := receive(t, p2, 1)
	if !bytes.Equal(got[0], frame) {
		t.Fatal("frame corrupted with Sync in place")
	}
	if err := m2.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSimDMARefusal(t *testing.T) {
	// The model's memory lies above 4 GiB; a board with 32 address lines
	// refuses it instead of truncating addresses.
	m, err := dwmacsim.New(dwmacsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := dwmac.Open(m.Device(), dwmac.Config{AddrBits: 32}); !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("Open with 32 address bits and memory above 4 GiB: %v, want ErrTooHigh", err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}

	// TX buffers the device's allocator did not map are refused before any
	// descriptor carries them.
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{TxRingSize: 16})
	far, err := dma.NewPool(&nictest.FarAllocator{}, 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := far.Get()
	b.Len = copy(b.Mem[b.Off:], nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), r.p.MAC(), 100))
	if k := r.p.TxQueue(0).Send([]*dma.Buf{b}); k != 1 {
		t.Fatalf("Send took %d", k)
	}
	if n := nictest.Counter(t, r.p, "tx_refused_dma"); n != 1 {
		t.Fatalf("tx_refused_dma %d", n)
	}
	if len(r.sent()) != 0 {
		t.Fatal("a refused frame reached the wire")
	}
	if err := far.CheckIdle(); err != nil {
		t.Fatal(err)
	}
	r.checkModel()
}

func TestSimCloseAndReopen(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{RxRingSize: 16, TxRingSize: 16})
	rng := rand.New(rand.NewPCG(11, 12))
	exchange(t, r, rng, 20, 8)
	// Leave frames in flight on both rings, then close.
	for i := 0; i < 5; i++ {
		r.m.Inject(nictest.RandFrame(rng, r.p.MAC(), 80))
	}
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := r.m.Memory().Regions(); n != 0 {
		t.Fatalf("%d DMA regions after Close", n)
	}
	if err := r.p.SetPromisc(true); !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("SetPromisc after Close: %v", err)
	}
	if n := r.p.RxQueue(0).Recv(make([]*dma.Buf, 4)); n != 0 {
		t.Fatalf("Recv after Close: %d", n)
	}
	p, err := dwmac.Open(r.m.Device(), dwmac.Config{RxRingSize: 16, TxRingSize: 16, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	r.p = p
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	exchange(t, r, rng, 20, 8)
	r.checkModel()
}

func TestSimStats(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{})
	rng := rand.New(rand.NewPCG(13, 14))
	exchange(t, r, rng, 40, 8)
	s1 := nictest.Counter(t, r.p, "mmc_rx_framecount_gb")
	t1 := nictest.Counter(t, r.p, "mmc_tx_framecount_gb")
	if s1 != 40 || t1 != 40 {
		t.Fatalf("MMC frames rx %d tx %d, want 40 each", s1, t1)
	}
	// Reset on read: a second read adds nothing, and more traffic adds on top.
	if s2 := nictest.Counter(t, r.p, "mmc_rx_framecount_gb"); s2 != 40 {
		t.Fatalf("MMC rx frames %d after a second read, want 40 (accumulated)", s2)
	}
	exchange(t, r, rng, 10, 8)
	if s3 := nictest.Counter(t, r.p, "mmc_rx_framecount_gb"); s3 != 50 {
		t.Fatalf("MMC rx frames %d, want 50", s3)
	}
	if n := nictest.Counter(t, r.p, "tx_packets"); n != 50 {
		t.Fatalf("tx_packets %d", n)
	}
	if n := nictest.Counter(t, r.p, "rx_queue_0_packets"); n != 50 {
		t.Fatalf("rx_queue_0_packets %d", n)
	}
	r.checkModel()
}

func TestSimMultiQueue(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{Queues: 4})
	if r.p.NumQueues() != 4 {
		t.Fatalf("%d queues", r.p.NumQueues())
	}
	rng := rand.New(rand.NewPCG(15, 16))
	bufs := make([]*dma.Buf, 8)
	for q := 0; q < 4; q++ {
		f := nictest.RandFrame(rng, r.p.MAC(), 64+q)
		if !r.m.InjectQueue(q, f) {
			t.Fatalf("queue %d: model refused the frame", q)
		}
		n := r.p.RxQueue(q).Recv(bufs)
		if n != 1 || !bytes.Equal(bufs[0].Data(), f) || bufs[0].Queue != uint16(q) {
			t.Fatalf("queue %d: Recv %d", q, n)
		}
		bufs[0].Free()
	}
	// TX on every channel reaches the wire.
	for q := 0; q < 4; q++ {
		b := r.p.RxQueue(0).Pool().Get()
		b.Len = copy(b.Mem[b.Off:], nictest.RandFrame(rng, net.HardwareAddr{2, 0, 0, 0, 0, 1}, 70+q))
		if r.p.TxQueue(q).Send([]*dma.Buf{b}) != 1 {
			t.Fatalf("TX queue %d refused", q)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(r.sent()) < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if len(r.sent()) != 4 {
		t.Fatalf("%d frames on the wire from 4 TX queues", len(r.sent()))
	}
	r.checkModel()
}

func TestSimPromiscAndFilter(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{})
	rng := rand.New(rand.NewPCG(17, 18))
	other := nictest.RandFrame(rng, net.HardwareAddr{0x02, 1, 2, 3, 4, 5}, 100)
	if r.m.Inject(other) {
		t.Fatal("a frame for another station passed the filter")
	}
	if err := r.p.SetPromisc(true); err != nil {
		t.Fatal(err)
	}
	if !r.m.Inject(other) {
		t.Fatal("promiscuous mode did not take a frame for another station")
	}
	receive(t, r.p, 1)
	group := net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	if err := r.p.SetPromisc(false); err != nil {
		t.Fatal(err)
	}
	mc := nictest.RandFrame(rng, group, 100)
	copy(mc, group)
	if r.m.Inject(mc) {
		t.Fatal("multicast passed with no group joined")
	}
	if err := r.p.SetMulticast([]net.HardwareAddr{group}); err != nil {
		t.Fatal(err)
	}
	if !r.m.Inject(mc) {
		t.Fatal("the model's hash filter refused a joined group: driver and model disagree on the hash")
	}
	receive(t, r.p, 1)
	r.checkModel()
}

// TestSimZeroAllocs: the driver's RX and TX paths allocate nothing per packet
// against the model.
func TestSimZeroAllocs(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{RxRingSize: 128, TxRingSize: 128})
	r.m.SetTransmit(nil)
	frame := nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), r.p.MAC(), 64)
	nictest.ZeroAllocBounce(t, 200, r.p.RxQueue(0), r.p.TxQueue(0), func() {
		for i := 0; i < 16; i++ {
			r.m.Inject(frame)
		}
	}, r.m.Settle) // the device sends on its own time: let it finish the burst
	if n := nictest.Counter(t, r.p, "rx_packets"); n < 16*200 {
		t.Fatalf("rx_packets %d: the loop did not move frames", n)
	}
	r.checkModel()
}
