package igb_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// rigSim is the driver on the igb model, the model on one end of an in-memory
// wire, and the test at the other end.
type rigSim struct {
	t    *testing.T
	m    *igbsim.Model
	p    *igb.Port
	wire *sim.PairEnd // the test's end
	rec  sim.Recorder // frames the port transmitted, in order
}

func newRigSim(t *testing.T, mcfg igbsim.Config, cfg igb.Config) *rigSim {
	t.Helper()
	if mcfg.AutonegDelay == 0 {
		mcfg.AutonegDelay = 5 * time.Millisecond
	}
	m, err := igbsim.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rigSim{t: t, m: m}
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = 2 * time.Second
	}
	r.wire = simtest.OpenOnWire(t, m, &r.p, &r.rec, func() (*igb.Port, error) { return igb.Open(m.Device(), cfg) })
	if _, err := r.p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	return r
}

// checkModel fails the test if the model recorded any fault.
func (r *rigSim) checkModel() {
	r.t.Helper()
	simtest.NoFaults(r.t, r.m)
}

func (r *rigSim) sent() [][]byte { return r.rec.Frames() }

// transmit sends frames through TX queue q in bursts of up to burst, reclaiming
// as it goes, and returns when every frame has been taken.
func transmit(t *testing.T, p nic.Port, q int, frames [][]byte, burst int) {
	t.Helper()
	nictest.Transmit(t, p, q, frames, burst, 10*time.Second)
}

// receive collects n frames from the port's RX queues, in arrival order per
// queue, and returns their bytes and queues.
func receive(t *testing.T, p nic.Port, n int) ([][]byte, []int) {
	t.Helper()
	var got [][]byte
	var qs []int
	bufs := make([]*dma.Buf, 32)
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n {
		progress := false
		for q := 0; q < p.NumQueues(); q++ {
			k := p.RxQueue(q).Recv(bufs)
			for _, b := range bufs[:k] {
				if int(b.Queue) != q {
					t.Fatalf("buffer from queue %d says Queue=%d", q, b.Queue)
				}
				if b.Owner() != dma.OwnerApp {
					t.Fatalf("received buffer owned by %v", b.Owner())
				}
				got = append(got, bytes.Clone(b.Data()))
				qs = append(qs, q)
				b.Free()
			}
			progress = progress || k > 0
		}
		if !progress {
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d frames", len(got), n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return got, qs
}

func TestSimBringUp(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE}
	r := newRigSim(t, igbsim.Config{MAC: mac, PHYID: 0x01410CA0}, igb.Config{})
	p := r.p
	if !bytes.Equal(p.MAC(), mac) {
		t.Fatalf("MAC %s, want %s", p.MAC(), mac)
	}
	if p.PHYID() != 0x01410CA0 {
		t.Fatalf("PHY ID %#x", p.PHYID())
	}
	if l := p.Link(); l != (nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}) {
		t.Fatalf("link %+v", l)
	}
	d := p.Dump()
	for _, c := range []struct{ reg, field, want string }{
		{"CTRL", "SLU", "1"}, {"STATUS", "LU", "1"}, {"STATUS", "SPEED", "1000"}, {"RCTL", "EN", "1"},
		{"RCTL", "SECRC", "1"}, {"TCTL", "EN", "1"}, {"TCTL", "PSP", "1"}, {"RXDCTL0", "ENABLE", "1"},
		{"SRRCTL0", "DESCTYPE", "1"}, {"SRRCTL0", "BSIZEPKT_KB", "3"}, {"SRRCTL0", "DROP_EN", "1"},
		{"RAH0", "MAC", mac.String()}, {"RAH0", "AV", "1"}, {"EECD", "AUTO_RD", "1"},
	} {
		reg, ok := d.Reg(c.reg)
		if !ok {
			t.Fatalf("dump has no %s", c.reg)
		}
		if v, _ := reg.Field(c.field); v != c.want {
			t.Errorf("%s.%s = %q, want %q", c.reg, c.field, v, c.want)
		}
	}
	if rdt, _ := d.Reg("RDT0"); rdt.Value != 511 {
		t.Errorf("RDT0 = %d, want 511 (512-descriptor ring, all but one posted)", rdt.Value)
	}
	if s := d.String(); !strings.Contains(s, "STATUS") || !strings.Contains(s, "LU=1") {
		t.Errorf("text dump:\n%s", s)
	}
	js, err := json.Marshal(d)
	if err != nil || !bytes.Contains(js, []byte(`"name":"RCTL"`)) {
		t.Errorf("JSON dump: %v %s", err, js)
	}
	if !r.m.SimDevice().BusMaster() {
		t.Error("bus mastering not enabled")
	}
	r.checkModel()
}

// TestSimTrafficByteExact sends and receives frames of random sizes 60..1514
// over the wire, with rings small enough to wrap many times.
func TestSimTrafficByteExact(t *testing.T) {
	for _, nc := range []bool{false, true} {
		name := "coherent"
		if nc {
			name = "noncoherent"
		}
		t.Run(name, func(t *testing.T) {
			r := newRigSim(t, igbsim.Config{NonCoherent: nc}, igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 3000
			frames := make([][]byte, n)
			for i := range frames {
				frames[i] = nictest.RandFrame(rng, net.HardwareAddr{0x02, 0x99, 0, 0, 0, 1}, 60+rng.IntN(1514-60+1))
			}
			transmit(t, r.p, 0, frames, 16)
			nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
			out := r.sent()
			if len(out) != n {
				t.Fatalf("wire carried %d frames, want %d", len(out), n)
			}
			for i := range frames {
				if !bytes.Equal(out[i], frames[i]) {
					t.Fatalf("TX frame %d (%d bytes) differs on the wire (%d bytes)", i, len(frames[i]), len(out[i]))
				}
			}
			// Receive: the peer sends, in bursts smaller than the ring.
			in := make([][]byte, n)
			for i := range in {
				in[i] = nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1514-60+1))
			}
			var got [][]byte
			for i := 0; i < n; i += 20 {
				for _, f := range in[i:min(i+20, n)] {
					if err := r.wire.Send(f); err != nil {
						t.Fatal(err)
					}
				}
				g, _ := receive(t, r.p, min(20, n-i))
				got = append(got, g...)
			}
			for i := range in {
				if !bytes.Equal(got[i], in[i]) {
					t.Fatalf("RX frame %d (%d bytes) differs (%d bytes received)", i, len(in[i]), len(got[i]))
				}
			}
			if err := r.p.RxQueue(0).Pool().CheckIdle(); err == nil {
				t.Fatal("RX pool idle while its ring holds buffers")
			}
			r.checkModel()
		})
	}
}

// TestSimRingWrapTiny uses 8-descriptor rings: 7 in flight at most.
func TestSimRingWrapTiny(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32})
	if f := r.p.TxQueue(0).Free(); f != 7 {
		t.Fatalf("Free() = %d on an empty 8-ring, want 7", f)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	frames := make([][]byte, 200)
	for i := range frames {
		frames[i] = nictest.RandFrame(rng, net.HardwareAddr{0x02, 1, 2, 3, 4, 5}, 60+rng.IntN(200))
	}
	transmit(t, r.p, 0, frames, 7)
	nictest.ReclaimAll(t, r.p, 8, 5*time.Second)
	if out := r.sent(); len(out) != len(frames) || !bytes.Equal(out[199], frames[199]) {
		t.Fatalf("wire carried %d frames", len(out))
	}
	for round := 0; round < 30; round++ {
		var in [][]byte
		for i := 0; i < 7; i++ {
			f := nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1454))
			in = append(in, f)
			r.wire.Send(f)
		}
		got, _ := receive(t, r.p, 7)
		for i := range in {
			if !bytes.Equal(got[i], in[i]) {
				t.Fatalf("round %d frame %d differs", round, i)
			}
		}
	}
	r.checkModel()
}

func TestSimRSSSpreadsFlows(t *testing.T) {
	key := make([]byte, 40)
	for i := range key {
		key[i] = byte(i*37 + 11)
	}
	r := newRigSim(t, igbsim.Config{Queues: 4}, igb.Config{Queues: 4, RSSKey: key})
	d := r.p.Dump()
	if mrqc, _ := d.Reg("MRQC"); !strings.Contains(mrqc.Fields[1].Value, "ipv4-udp") {
		t.Fatalf("MRQC %+v", mrqc)
	}
	const flows = 64
	var buf []byte
	for f := 0; f < flows; f++ {
		for s := 0; s < 3; s++ {
			buf = traffic.AppendFlowFrame(buf[:0], f, s, r.p.MAC(), net.HardwareAddr{2, 0, 0, 0, 0, 9})
			r.wire.Send(buf)
		}
	}
	bufs := make([]*dma.Buf, 64)
	queueOf := map[int]int{}
	perQueue := make([]int, 4)
	total := 0
	for q := 0; q < 4; q++ {
		rq := r.p.RxQueue(q)
		for k := rq.Recv(bufs); k > 0; k = rq.Recv(bufs) {
			for _, b := range bufs[:k] {
				flow, _, err := traffic.ParseFlow(b.Data())
				if err != nil {
					t.Fatal(err)
				}
				if prev, ok := queueOf[flow]; ok && prev != q {
					t.Fatalf("flow %d on queues %d and %d", flow, prev, q)
				}
				queueOf[flow] = q
				in := traffic.FlowHashInputUDP4(flow)
				want := traffic.Toeplitz(key, in[:])
				if b.Flags&dma.FlagRSSValid == 0 || b.RSSHash != want {
					t.Fatalf("flow %d: hash %#x (flags %#x), want %#x", flow, b.RSSHash, b.Flags, want)
				}
				if int(want&127)%4 != q {
					t.Fatalf("flow %d: hash %#x on queue %d, RETA says %d", flow, want, q, int(want&127)%4)
				}
				perQueue[q]++
				total++
				b.Free()
			}
		}
	}
	if total != flows*3 {
		t.Fatalf("received %d of %d", total, flows*3)
	}
	used := 0
	for _, n := range perQueue {
		if n > 0 {
			used++
		}
	}
	if used < 3 {
		t.Fatalf("flows on %d queues only: %v", used, perQueue)
	}
	if v := nictest.Counter(t, r.p, "rx_queue_3_packets"); v != uint64(perQueue[3]) {
		t.Fatalf("rx_queue_3_packets %d, want %d", v, perQueue[3])
	}
	r.checkModel()
}

func TestSimInterruptWakesReceiver(t *testing.T) {
	r := newRigSim(t, igbsim.Config{Queues: 2}, igb.Config{Queues: 2, Interrupts: true, ITR: 20 * time.Microsecond})
	rq := r.p.RxQueue(0)
	if rq.IRQ() == nil || r.p.RxQueue(1).IRQ() == nil || rq.IRQ() == r.p.RxQueue(1).IRQ() {
		t.Fatal("each queue needs its own vector")
	}
	bufs := make([]*dma.Buf, 8)
	for round := 0; round < 5; round++ {
		// Drain, arm, poll again, block.
		for k := rq.Recv(bufs); k > 0; k = rq.Recv(bufs) {
			for _, b := range bufs[:k] {
				b.Free()
			}
		}
		for fired, _ := rq.IRQ().Wait(0); fired; fired, _ = rq.IRQ().Wait(0) {
		}
		rq.ArmIRQ()
		if k := rq.Recv(bufs); k != 0 {
			t.Fatalf("round %d: %d frames before anything was sent", round, k)
		}
		frame := nictest.RandFrame(rand.New(rand.NewPCG(uint64(round), 0)), r.p.MAC(), 100)
		go func() {
			time.Sleep(20 * time.Millisecond)
			r.wire.Send(frame)
		}()
		start := time.Now()
		fired, err := rq.IRQ().Wait(2 * time.Second)
		if err != nil || !fired {
			t.Fatalf("round %d: no interrupt (fired=%v err=%v)\n%s", round, fired, err, r.p.Dump())
		}
		if time.Since(start) < 10*time.Millisecond {
			t.Fatalf("round %d: woke after %v, before the frame was sent", round, time.Since(start))
		}
		k := rq.Recv(bufs)
		if k != 1 || !bytes.Equal(bufs[0].Data(), frame) {
			t.Fatalf("round %d: Recv after the interrupt gave %d frames", round, k)
		}
		bufs[0].Free()
	}
	// Without ArmIRQ the vector stays masked (EIAM): a frame does not fire it.
	r.wire.Send(nictest.RandFrame(rand.New(rand.NewPCG(9, 9)), r.p.MAC(), 100))
	if fired, _ := rq.IRQ().Wait(50 * time.Millisecond); fired {
		t.Fatal("interrupt fired while the vector should be auto-masked")
	}
	if k := rq.Recv(bufs); k != 1 {
		t.Fatalf("polling found %d frames, want 1", k)
	}
	bufs[0].Free()
	r.checkModel()
}

// TestSimNoBufferDrops: frames that find no posted buffer are dropped by the
// device and counted; frames after a refill get through.
func TestSimNoBufferDrops(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{RxRingSize: 8, PoolSize: 8})
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20; i++ {
		r.wire.Send(nictest.RandFrame(rng, r.p.MAC(), 64))
	}
	got, _ := receive(t, r.p, 7)
	if len(got) != 7 {
		t.Fatalf("received %d", len(got))
	}
	// Open sets SRRCTL.DROP_EN: the 13 frames are dropped at once, each
	// counted once, in RQDPC (rx_fifo_errors); none waited in the packet
	// buffer to overflow it (rx_missed_errors, MPC).
	missed := nictest.Counter(t, r.p, "rx_missed_errors")
	fifo := nictest.Counter(t, r.p, "rx_fifo_errors")
	if missed != 0 || fifo != 13 || nictest.Counter(t, r.p, "rx_queue_0_drops") != 13 {
		t.Fatalf("rx_missed_errors %d, rx_fifo_errors %d: want 0 and 13", missed, fifo)
	}
	// Hold every buffer the pool has: refills fail and are counted, then work.
	bufs := make([]*dma.Buf, 8)
	if k := r.p.RxQueue(0).Recv(bufs); k != 0 { // refills the ring from the returned buffers
		t.Fatalf("Recv %d from an empty ring", k)
	}
	for i := 0; i < 7; i++ {
		r.wire.Send(nictest.RandFrame(rng, r.p.MAC(), 64))
	}
	n := r.p.RxQueue(0).Recv(bufs)
	if n != 7 {
		t.Fatalf("Recv %d", n)
	}
	held := bufs[:n]
	if v := nictest.Counter(t, r.p, "rx_alloc_failed"); v == 0 {
		t.Fatal("rx_alloc_failed not counted with the pool empty")
	}
	// The refill found one buffer: one frame gets in, the next finds no buffer.
	first := nictest.RandFrame(rng, r.p.MAC(), 64)
	r.wire.Send(first)
	r.wire.Send(nictest.RandFrame(rng, r.p.MAC(), 64))
	if v := nictest.Counter(t, r.p, "rx_fifo_errors"); v != fifo+1 {
		t.Fatalf("rx_fifo_errors %d, want %d", v, fifo+1)
	}
	for _, b := range held {
		b.Free()
	}
	if k := r.p.RxQueue(0).Recv(bufs); k != 1 || !bytes.Equal(bufs[0].Data(), first) {
		t.Fatalf("Recv %d, want the one frame that found a buffer", k)
	}
	bufs[0].Free()
	last := nictest.RandFrame(rng, r.p.MAC(), 64)
	r.wire.Send(last)
	g, _ := receive(t, r.p, 1)
	if !bytes.Equal(g[0], last) {
		t.Fatal("frame after refill differs")
	}
	r.checkModel()
}

func TestSimRefusesUnmappedDMA(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	before := r.m.Counters().TxFrames
	testRefusesUnmappedDMA(t, r.p)
	if got := r.m.Counters().TxFrames; got != before {
		t.Fatalf("the model sent %d frames", got-before)
	}
	// A frame too short or beyond its buffer is refused too.
	b := r.p.RxQueue(0).Pool().Get()
	b.Len = 10
	if r.p.TxQueue(0).Send([]*dma.Buf{b}) != 1 || nictest.Counter(t, r.p, "tx_refused_len") != 1 {
		t.Fatal("a 10-byte frame was not refused")
	}
	// A buffer from another pool of the same device memory is fine.
	own, err := dma.NewPool(r.m.Device().DMA(), 4, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	ob := own.Get()
	ob.Len = copy(ob.Mem[ob.Off:], nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), net.HardwareAddr{2, 0, 0, 0, 0, 2}, 80))
	if r.p.TxQueue(0).Send([]*dma.Buf{ob}) != 1 {
		t.Fatal("Send refused a mapped buffer")
	}
	nictest.ReclaimAll(t, r.p, 512, 5*time.Second)
	if err := own.CheckIdle(); err != nil {
		t.Fatal(err)
	}
	if len(r.sent()) != 1 {
		t.Fatalf("wire carried %d frames, want 1", len(r.sent()))
	}
	r.checkModel()
}

func TestSimCloseReopen(t *testing.T) {
	r := newRigSim(t, igbsim.Config{Queues: 2}, igb.Config{Queues: 2, Interrupts: true})
	rng := rand.New(rand.NewPCG(7, 8))
	f := nictest.RandFrame(rng, r.p.MAC(), 300)
	r.wire.Send(f)
	receive(t, r.p, 1)
	transmit(t, r.p, 1, [][]byte{f}, 1) // leaves a buffer in flight for Close
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if r.m.SimDevice().VectorsEnabled() != 0 {
		t.Fatal("vectors still enabled after Close")
	}
	if k := r.p.RxQueue(0).Recv(make([]*dma.Buf, 4)); k != 0 {
		t.Fatal("Recv after Close")
	}
	p2, err := igb.Open(r.m.Device(), igb.Config{Queues: 2, Interrupts: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	r.p = p2
	if _, err := p2.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	g := nictest.RandFrame(rng, p2.MAC(), 1514)
	r.wire.Send(g)
	got, _ := receive(t, p2, 1)
	if !bytes.Equal(got[0], g) {
		t.Fatal("frame after reopen differs")
	}
	r.checkModel()
}

func TestSimStatsAccumulate(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	rng := rand.New(rand.NewPCG(9, 10))
	var rxBytes uint64
	for round := 1; round <= 3; round++ {
		for i := 0; i < 10; i++ {
			f := nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1000))
			rxBytes += uint64(len(f)) + 4 // the counters include the FCS
			r.wire.Send(f)
		}
		receive(t, r.p, 10)
		frames := [][]byte{nictest.RandFrame(rng, net.HardwareAddr{2, 1, 1, 1, 1, 1}, 100)}
		transmit(t, r.p, 0, frames, 1)
		nictest.ReclaimAll(t, r.p, 512, 5*time.Second)
		// Dump in between must not eat the clear-on-read counters.
		_ = r.p.Dump()
		if v := nictest.Counter(t, r.p, "rx_packets"); v != uint64(10*round) {
			t.Fatalf("round %d: rx_packets %d, want %d", round, v, 10*round)
		}
		if v := nictest.Counter(t, r.p, "rx_bytes"); v != rxBytes {
			t.Fatalf("round %d: rx_bytes %d, want %d", round, v, rxBytes)
		}
		if v := nictest.Counter(t, r.p, "tx_packets"); v != uint64(round) {
			t.Fatalf("round %d: tx_packets %d", round, v)
		}
		if v := nictest.Counter(t, r.p, "tx_queue_0_packets"); v != uint64(round) {
			t.Fatalf("round %d: tx_queue_0_packets %d", round, v)
		}
	}
	r.checkModel()
}

func TestSimPromiscAndMulticast(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	rng := rand.New(rand.NewPCG(11, 12))
	other := nictest.RandFrame(rng, net.HardwareAddr{0x02, 7, 7, 7, 7, 7}, 80)
	group := net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	mc := nictest.RandFrame(rng, group, 80)
	r.wire.Send(other)
	r.wire.Send(mc)
	if k := r.p.RxQueue(0).Recv(make([]*dma.Buf, 4)); k != 0 {
		t.Fatalf("received %d frames not for us", k)
	}
	if err := r.p.SetMulticast([]net.HardwareAddr{group}); err != nil {
		t.Fatal(err)
	}
	r.wire.Send(mc)
	got, _ := receive(t, r.p, 1)
	if !bytes.Equal(got[0], mc) {
		t.Fatal("multicast frame differs")
	}
	if err := r.p.SetPromisc(true); err != nil {
		t.Fatal(err)
	}
	r.wire.Send(other)
	got, _ = receive(t, r.p, 1)
	if !bytes.Equal(got[0], other) {
		t.Fatal("promiscuous frame differs")
	}
	if err := r.p.SetMulticast([]net.HardwareAddr{{0x02, 0, 0, 0, 0, 1}}); err == nil {
		t.Fatal("SetMulticast took a unicast address")
	}
	r.checkModel()
}

// TestSimModelCatchesBrokenDriver: the strict model is what makes the tests
// above mean something. A driver that writes a misaligned ring base or a tail
// past the ring must be caught.
func TestSimModelCatchesBrokenDriver(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	r.checkModel()
	regs, err := r.m.Device().Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	regs.Write32(0x2818, 4096) // RDT0 beyond a 512-descriptor ring
	if r.m.Err() == nil {
		t.Fatal("model accepted a tail beyond the ring")
	}
	r.m.FaultLog().Clear()
	regs.Write32(0x2828, 0)      // RXDCTL0: disable the queue
	regs.Write32(0x2800, 0x1008) // RDBAL0 not 128-byte aligned
	regs.Write32(0x2828, 1<<25)
	if r.m.Err() == nil {
		t.Fatal("model accepted a misaligned ring base")
	}
	r.m.FaultLog().Clear()
}

// TestSimInterruptsPerMAC runs the wake-up on each IVAR layout: the 82576 keeps
// one queue per IVAR register, the I350 and I210 two.
func TestSimInterruptsPerMAC(t *testing.T) {
	for _, dev := range []uint16{0x10C9, 0x1521, 0x1533, 0x1539} {
		t.Run(fmt.Sprintf("%04x", dev), func(t *testing.T) {
			r := newRigSim(t, igbsim.Config{DeviceID: dev, Queues: 2}, igb.Config{Queues: 2, Interrupts: true, ITR: 10 * time.Microsecond})
			bufs := make([]*dma.Buf, 4)
			for q := 0; q < 2; q++ {
				rq := r.p.RxQueue(q)
				for fired, _ := rq.IRQ().Wait(0); fired; fired, _ = rq.IRQ().Wait(0) {
				}
				rq.ArmIRQ()
				if k := rq.Recv(bufs); k != 0 {
					t.Fatalf("queue %d: %d frames early", q, k)
				}
				// Frames land on queue 0 without RSS hashing (non-IP); queue 1
				// gets a UDP flow whose hash the RETA maps to it.
				var f []byte
				if q == 0 {
					f = nictest.RandFrame(rand.New(rand.NewPCG(uint64(dev), 1)), r.p.MAC(), 90)
					f[12], f[13] = 0x88, 0xB6
				} else {
					for flow := 0; ; flow++ {
						in := traffic.FlowHashInputUDP4(flow)
						if h := traffic.Toeplitz(r.p.RSSKey(), in[:]); int(h&127)%2 == 1 {
							f = traffic.FlowFrame(flow, 0, r.p.MAC(), net.HardwareAddr{2, 0, 0, 0, 0, 7})
							break
						}
					}
				}
				r.wire.Send(f)
				if fired, err := rq.IRQ().Wait(2 * time.Second); !fired || err != nil {
					t.Fatalf("queue %d: no interrupt (%v)\n%s", q, err, r.p.Dump())
				}
				if k := rq.Recv(bufs); k != 1 || !bytes.Equal(bufs[0].Data(), f) {
					t.Fatalf("queue %d: Recv %d after the interrupt", q, k)
				}
				bufs[0].Free()
			}
			r.checkModel()
		})
	}
}

// TestSimLinkInterrupt: pulling the cable fires the link vector, and so does
// plugging it back in once the link has renegotiated.
func TestSimLinkInterrupt(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{Interrupts: true})
	li := r.p.LinkIRQ()
	if li == nil || li == r.p.RxQueue(0).IRQ() {
		t.Fatal("no separate link vector")
	}
	for fired, _ := li.Wait(0); fired; fired, _ = li.Wait(0) {
	}
	r.p.HandleLinkIRQ()
	r.m.PHY().SetConnected(false)
	if fired, _ := li.Wait(2 * time.Second); !fired {
		t.Fatal("no interrupt when the cable was pulled")
	}
	if l := r.p.HandleLinkIRQ(); l.Up {
		t.Fatalf("link %+v after unplugging", l)
	}
	r.m.PHY().SetConnected(true)
	deadline := time.Now().Add(2 * time.Second)
	for {
		fired, _ := li.Wait(time.Until(deadline))
		if !fired {
			t.Fatal("no interrupt when the link came back")
		}
		if l := r.p.HandleLinkIRQ(); l.Up {
			break
		}
	}
	r.checkModel()
}

// TestSimZeroAllocs: a receive-transmit round through the strict model
// allocates nothing either (driver and model together).
func TestSimZeroAllocs(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{RxRingSize: 64, TxRingSize: 64})
	r.wire.SetReceiver(nil) // transmitted frames go nowhere
	frame := nictest.RandFrame(rand.New(rand.NewPCG(1, 3)), r.p.MAC(), 512)
	nictest.ZeroAllocBounce(t, 200, r.p.RxQueue(0), r.p.TxQueue(0), func() {
		for i := 0; i < 16; i++ {
			r.m.Inject(frame)
		}
	}, r.m.Settle) // the device sends on its own time: let it finish the burst
	r.checkModel()
}

// TestSimControlWhilePolling: control methods run on other goroutines while
// one goroutine owns the queues (run with -race to check the claim).
func TestSimControlWhilePolling(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{RxRingSize: 64, TxRingSize: 64})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = r.p.Stats()
				_ = r.p.Link()
				_ = r.p.Dump()
				_ = r.p.SetPromisc(false)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for round := 0; round < 50; round++ {
		var in [][]byte
		for i := 0; i < 10; i++ {
			f := nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1454))
			in = append(in, f)
			r.wire.Send(f)
		}
		got, _ := receive(t, r.p, len(in))
		for i := range in {
			if !bytes.Equal(got[i], in[i]) {
				t.Fatalf("round %d frame %d differs", round, i)
			}
		}
		transmit(t, r.p, 0, in[:3], 3)
	}
	close(stop)
	wg.Wait()
	nictest.ReclaimAll(t, r.p, 64, 5*time.Second)
	if v := nictest.Counter(t, r.p, "rx_packets"); v != 500 {
		t.Fatalf("rx_packets %d, want 500", v)
	}
	r.checkModel()
}
