package igb_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// csumFrame is a TCP or UDP frame built by gopacket with its correct
// checksums (want), and the same frame as a CHECKSUM_PARTIAL sender hands it
// over (req: the L4 field holds the folded pseudo-header sum), with the
// request's start and offset.
type csumFrame struct {
	want, req     []byte
	start, offset int
}

// csumPort is the destination port of buildCsumFrame's frames ("XC"), by
// which the VM tier's host side finds them in QEMU's pcap.
const csumPort = 0x5843

// buildCsumFrame builds a frame of payload random bytes between two made-up
// addresses.
func buildCsumFrame(t testing.TB, rng *rand.Rand, v6, tcp, vlan bool, payload int) csumFrame {
	t.Helper()
	return buildCsumFrameTo(t, rng, net.HardwareAddr{2, 0, 0, 0, 0, 2}, net.HardwareAddr{2, 0, 0, 0, 0, 1}, v6, tcp, vlan, payload, nil)
}

// buildCsumFrameTo builds a frame from src to dst (nictest.BuildL4) whose
// payload of random bytes starts with mark, with random addresses and ports.
func buildCsumFrameTo(t testing.TB, rng *rand.Rand, dst, src net.HardwareAddr, v6, tcp, vlan bool, payload int, mark []byte) csumFrame {
	t.Helper()
	s := nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, Src: src, Dst: dst, DstPort: csumPort}
	if vlan {
		s.VLANID = uint16(rng.IntN(4095))
	}
	if v6 {
		s.SrcIP = net.IP{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(rng.Uint32()), 0, 0, 1}
		s.DstIP = net.IP{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(rng.Uint32()), 0, 2}
	} else {
		s.IPID = uint16(rng.Uint32())
		s.SrcIP = net.IP{10, 0, byte(rng.Uint32()), 1}
		s.DstIP = net.IP{10, 0, 0, byte(rng.Uint32())}
	}
	s.SrcPort = uint16(rng.Uint32())
	if tcp {
		s.Seq, s.Ack = rng.Uint32(), rng.Uint32()
	}
	s.Payload = make([]byte, max(payload, len(mark)))
	for i := range s.Payload {
		s.Payload[i] = byte(rng.Uint32())
	}
	copy(s.Payload, mark)
	f := nictest.BuildL4(t, s)
	return csumFrame{want: f.Bytes, req: f.Partial(), start: f.L4, offset: f.Field()}
}

// metaQueue is TX queue q of p as a nic.TxMetaQueue.
func metaQueue(t testing.TB, p nic.Port, q int) nic.TxMetaQueue {
	t.Helper()
	mq, ok := p.TxQueue(q).(nic.TxMetaQueue)
	if !ok {
		t.Fatalf("TX queue %d is not a nic.TxMetaQueue", q)
	}
	return mq
}

// txReq is one frame to send with its requests.
type txReq struct {
	frame      []byte
	flags      uint8
	start, off int
	launch     uint64
}

// sendReqs sends frames through q (one burst each of up to burst frames),
// reclaiming as it goes, and returns the IOVA each frame was sent from.
func sendReqs(t *testing.T, p nic.Port, q int, reqs []txReq, burst int) []uint64 {
	t.Helper()
	tx := metaQueue(t, p, q)
	addrs := make([]uint64, len(reqs))
	nictest.SendAll(t, p.RxQueue(0).Pool(), tx, len(reqs), burst, 10*time.Second, func(b *dma.Buf, j int) {
		r := reqs[j]
		b.Len = copy(b.Mem[b.Off:], r.frame)
		b.TxFlags, b.CsumStart, b.CsumOffset, b.LaunchTime = r.flags, uint16(r.start), uint16(r.off), r.launch
		if err := tx.CheckTxMeta(b); err != nil {
			t.Fatalf("frame %d: CheckTxMeta: %v", j, err)
		}
		addrs[j] = b.DataIOVA()
	})
	return addrs
}

// TestSimTxChecksum: IPv4 and IPv6, TCP and UDP, with and without a VLAN tag,
// random payloads: each frame that asks leaves with gopacket's checksum, each
// that does not leaves byte-identical, through the model's checksum engine.
func TestSimTxChecksum(t *testing.T) {
	for _, dev := range []uint16{0x10C9, 0x1533} {
		r := newRigSim(t, igbsim.Config{DeviceID: dev}, igb.Config{TxRingSize: 64, RxRingSize: 64})
		if c := metaQueue(t, r.p, 0).TxMeta(); c&nic.TxMetaChecksum == 0 {
			t.Fatalf("device %#x: TxMeta %v without tx-checksum", dev, c)
		}
		rng := rand.New(rand.NewPCG(uint64(dev), 9))
		var reqs []txReq
		var want [][]byte
		for i := 0; i < 400; i++ {
			v6, tcp, vlan := rng.IntN(2) == 1, rng.IntN(2) == 1, rng.IntN(4) == 0
			f := buildCsumFrame(t, rng, v6, tcp, vlan, rng.IntN(1400))
			if rng.IntN(3) == 0 { // no request: sent as it is, the field unfinished
				reqs = append(reqs, txReq{frame: f.req})
				want = append(want, f.req)
				continue
			}
			reqs = append(reqs, txReq{frame: f.req, flags: dma.TxFlagChecksum, start: f.start, off: f.offset})
			want = append(want, f.want)
		}
		sendReqs(t, r.p, 0, reqs, 1+rng.IntN(16))
		nictest.ReclaimAll(t, r.p, 64, 5*time.Second)
		got := r.sent()
		if len(got) != len(want) {
			t.Fatalf("device %#x: %d frames on the wire, want %d", dev, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("device %#x frame %d (flags %d, start %d, offset %d): wire differs from gopacket's\n got %x\nwant %x",
					dev, i, reqs[i].flags, reqs[i].start, reqs[i].off, got[i], want[i])
			}
		}
		r.checkModel()
	}
}

// TestSimTxChecksumContextReuse: a context equal to the one its slot holds is
// not sent again; a frame that needs one takes two descriptors, and the
// ring's accounting (Free) follows.
func TestSimTxChecksumContextReuse(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{TxRingSize: 64})
	rng := rand.New(rand.NewPCG(1, 1))
	udp := buildCsumFrame(t, rng, false, false, false, 100)
	tcp := buildCsumFrame(t, rng, false, true, false, 100)
	tcp6 := buildCsumFrame(t, rng, true, true, false, 100)
	tx := metaQueue(t, r.p, 0)
	pool := r.p.RxQueue(0).Pool()
	send := func(f csumFrame, n int) {
		t.Helper()
		bufs := make([]*dma.Buf, n)
		for i := range bufs {
			b := pool.Get()
			b.Len = copy(b.Mem[b.Off:], f.req)
			b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(f.start), uint16(f.offset)
			bufs[i] = b
		}
		if k := tx.Send(bufs); k != n {
			t.Fatalf("Send took %d of %d", k, n)
		}
	}
	for _, c := range []struct {
		f    csumFrame
		n    int
		used int // descriptors: n data plus the contexts that changed
	}{
		{udp, 5, 6},  // slot 0 loaded once
		{tcp, 3, 4},  // slot 1 loaded once
		{udp, 2, 2},  // slot 0 still holds the UDP context
		{tcp6, 1, 2}, // another IPLEN: slot 1 loaded again
		{tcp, 1, 2},  // and back
	} {
		before := tx.Free()
		send(c.f, c.n)
		if d := before - tx.Free(); d != c.used {
			t.Fatalf("%d frames took %d descriptors, want %d", c.n, d, c.used)
		}
	}
	nictest.ReclaimAll(t, r.p, 64, 5*time.Second)
	if tx.Free() != 63 {
		t.Fatalf("Free %d after reclaiming everything, want 63", tx.Free())
	}
	got := r.sent()
	if len(got) != 12 || !bytes.Equal(got[0], udp.want) || !bytes.Equal(got[5], tcp.want) ||
		!bytes.Equal(got[9], udp.want) || !bytes.Equal(got[10], tcp6.want) || !bytes.Equal(got[11], tcp.want) {
		t.Fatalf("wire: %d frames, or a checksum wrong", len(got))
	}
	r.checkModel()
}

// TestSimTxMetaRefused: requests the hardware cannot do are refused by
// CheckTxMeta with ErrTxMeta, and Send stops at them: the frame and the rest
// stay with the caller, the frames before go out.
func TestSimTxMetaRefused(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{Queues: 2, TxRingSize: 32})
	rng := rand.New(rand.NewPCG(3, 3))
	f := buildCsumFrame(t, rng, false, true, false, 60)
	tx := metaQueue(t, r.p, 0)
	if c := tx.TxMeta(); c != nic.TxMetaChecksum {
		t.Fatalf("82576 TxMeta %v, want tx-checksum only (its clock is not driven, it has no launch time)", c)
	}
	pool := r.p.RxQueue(0).Pool()
	mk := func(flags uint8, start, off int) *dma.Buf {
		b := pool.Get()
		b.Len = copy(b.Mem[b.Off:], f.req)
		b.TxFlags, b.CsumStart, b.CsumOffset = flags, uint16(start), uint16(off)
		return b
	}
	for _, c := range []struct {
		name       string
		flags      uint8
		start, off int
	}{
		{"offset not TCP/UDP", dma.TxFlagChecksum, f.start, 10},
		{"start below MACLEN+IPLEN", dma.TxFlagChecksum, 14, 16},
		{"start 33", dma.TxFlagChecksum, 33, 16},
		{"start beyond 127+511", dma.TxFlagChecksum, 639, 6},
		{"field beyond the frame", dma.TxFlagChecksum, f.start, len(f.req)},
		{"timestamp on the 82576", dma.TxFlagTimestamp, 0, 0},
		{"launch time without Config.LaunchTime", dma.TxFlagLaunchTime, 0, 0},
		{"unknown flag", 1 << 5, 0, 0},
	} {
		bad := mk(c.flags, c.start, c.off)
		if err := tx.CheckTxMeta(bad); !errors.Is(err, nic.ErrTxMeta) {
			t.Fatalf("%s: CheckTxMeta %v, want ErrTxMeta", c.name, err)
		}
		good1, good2 := mk(dma.TxFlagChecksum, f.start, f.offset), mk(0, 0, 0)
		before := len(r.rec.Frames())
		if n := tx.Send([]*dma.Buf{good1, bad, good2}); n != 1 {
			t.Fatalf("%s: Send took %d, want 1 (it stops at the refused frame)", c.name, n)
		}
		if bad.Owner() != dma.OwnerApp || good2.Owner() != dma.OwnerApp {
			t.Fatalf("%s: the refused frame and the rest changed owner", c.name)
		}
		bad.Free()
		good2.Free()
		nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
		if got := r.rec.Frames(); len(got) != before+1 || !bytes.Equal(got[before], f.want) {
			t.Fatalf("%s: the frame before the refused one did not go out right", c.name)
		}
	}
	// Right values are accepted.
	ok := mk(dma.TxFlagChecksum, f.start, f.offset)
	if err := tx.CheckTxMeta(ok); err != nil {
		t.Fatal(err)
	}
	ok.Free()
	long := mk(dma.TxFlagChecksum, 127+511, 6)
	long.Len = 700
	if err := tx.CheckTxMeta(long); err != nil {
		t.Fatalf("start 638 (MACLEN 127, IPLEN 511): %v", err)
	}
	long.Free()
	r.checkModel()
}

// TestSimTxTimestamps: on the I210, a frame that asks gets its transmit time
// through TxStamps, in the PHC's time base, between the clock before Send and
// after Reclaim, increasing; with one latch per port, frames asking while one
// is in flight complete with OK false and count in tx_hwtstamp_skipped.
func TestSimTxTimestamps(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1533, Queues: 2}, igb.Config{Queues: 2, TxRingSize: 32})
	tx := metaQueue(t, r.p, 0)
	if c := tx.TxMeta(); c&nic.TxMetaTimestamp == 0 || c&nic.TxMetaLaunchTime != 0 {
		t.Fatalf("I210 TxMeta %v, want tx-timestamp without tx-launch-time", c)
	}
	phc, err := r.p.PHC()
	if err != nil {
		t.Fatal(err)
	}
	clock := func() uint64 {
		ns, err := phc.Time()
		if err != nil {
			t.Fatal(err)
		}
		return uint64(ns)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	out := make([]nic.TxStamp, 8)
	var prev uint64
	for i := 0; i < 20; i++ {
		f := nictest.RandFrame(rng, net.HardwareAddr{2, 0, 0, 0, 0, 2}, 60+rng.IntN(1400))
		before := clock()
		addrs := sendReqs(t, r.p, 0, []txReq{{frame: f, flags: dma.TxFlagTimestamp}}, 1)
		nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
		after := clock()
		if n := tx.TxStamps(out); n != 1 {
			t.Fatalf("frame %d: %d completions, want 1", i, n)
		}
		s := out[0]
		if !s.OK || s.Addr != addrs[0] || s.Time < before || s.Time > after || s.Time <= prev {
			t.Fatalf("frame %d: stamp %+v, want OK at %#x in [%d, %d] after %d", i, s, addrs[0], before, after, prev)
		}
		prev = s.Time
	}
	// The clock was set from the host's at Open (igb_ptp_reset does the same).
	if d := int64(prev) - time.Now().UnixNano(); d > int64(2*time.Second) || d < -int64(2*time.Second) {
		t.Fatalf("TX timestamps %v off the host's clock", time.Duration(d))
	}
	// A burst of four: the first takes the latch, the others are skipped.
	var reqs []txReq
	for i := 0; i < 4; i++ {
		reqs = append(reqs, txReq{frame: nictest.RandFrame(rng, net.HardwareAddr{2, 0, 0, 0, 0, 2}, 100), flags: dma.TxFlagTimestamp})
	}
	addrs := sendReqs(t, r.p, 0, reqs, 4)
	nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
	if n := tx.TxStamps(out); n != 4 {
		t.Fatalf("burst: %d completions, want 4", n)
	}
	for i, s := range out[:4] {
		if s.Addr != addrs[i] || s.OK != (i == 0) {
			t.Fatalf("burst completion %d: %+v, want addr %#x OK %v", i, s, addrs[i], i == 0)
		}
	}
	if v := nictest.Counter(t, r.p, "tx_hwtstamp_skipped"); v != 3 {
		t.Fatalf("tx_hwtstamp_skipped %d, want 3", v)
	}
	// The latch is free again, for the other queue too.
	sendReqs(t, r.p, 1, []txReq{{frame: reqs[0].frame, flags: dma.TxFlagTimestamp}}, 1)
	nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
	if n := metaQueue(t, r.p, 1).TxStamps(out); n != 1 || !out[0].OK {
		t.Fatalf("queue 1: %d completions %+v", n, out[0])
	}
	// Completions nobody collects are dropped beyond the ring and counted.
	for i := 0; i < nic.StampRingSize+5; i++ {
		sendReqs(t, r.p, 0, []txReq{{frame: reqs[0].frame, flags: dma.TxFlagTimestamp}}, 1)
	}
	nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
	if v := nictest.Counter(t, r.p, "tx_hwtstamp_dropped"); v != 5 {
		t.Fatalf("tx_hwtstamp_dropped %d, want 5", v)
	}
	if got := r.sent(); len(got) != 20+4+1+nic.StampRingSize+5 {
		t.Fatalf("%d frames on the wire", len(got))
	}
	r.checkModel()
}

// TestSimTxLaunchTime: on an I210 queue set up for launch time, frames leave
// no earlier than their launch time in the model's clock, in order; a frame
// with a past launch time, or none, leaves at once (behind those ahead).
func TestSimTxLaunchTime(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1533, Queues: 2}, igb.Config{Queues: 2, TxRingSize: 32, LaunchTime: 1})
	tx := metaQueue(t, r.p, 0)
	if c := tx.TxMeta(); c&nic.TxMetaLaunchTime == 0 {
		t.Fatalf("TxMeta %v without tx-launch-time on queue 0", c)
	}
	if c := metaQueue(t, r.p, 1).TxMeta(); c&nic.TxMetaLaunchTime != 0 {
		t.Fatalf("queue 1 (not set up) reports %v", c)
	}
	type arrival struct {
		at    int64
		frame []byte
	}
	var mu sync.Mutex
	var arr []arrival
	r.wire.SetReceiver(func(f []byte) {
		ns, _ := r.m.Clock()
		mu.Lock()
		arr = append(arr, arrival{ns, bytes.Clone(f)})
		mu.Unlock()
	})
	now, _ := r.m.Clock()
	rng := rand.New(rand.NewPCG(6, 6))
	var reqs []txReq
	var launch []int64
	for i, d := range []time.Duration{40 * time.Millisecond, 70 * time.Millisecond, -5 * time.Second, 0, 100 * time.Millisecond} {
		fr := nictest.RandFrame(rng, net.HardwareAddr{2, 0, 0, 0, 0, 2}, 64+i)
		lt := now + int64(d)
		req := txReq{frame: fr, flags: dma.TxFlagLaunchTime, launch: uint64(max(lt, 0))}
		if d == 0 {
			req.flags = 0 // no launch time of its own
		}
		reqs = append(reqs, req)
		launch = append(launch, lt)
	}
	// A frame 0.5 s or more ahead is refused: the I210 would take it for past.
	b := r.p.RxQueue(0).Pool().Get()
	b.Len, b.TxFlags, b.LaunchTime = 60, dma.TxFlagLaunchTime, uint64(now+int64(600*time.Millisecond))
	if err := tx.CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("launch time 0.6 s ahead: %v, want ErrTxMeta", err)
	}
	if err := metaQueue(t, r.p, 1).CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("launch time on queue 1: %v, want ErrTxMeta", err)
	}
	b.Free()
	before := tx.Free()
	sendReqs(t, r.p, 0, reqs, len(reqs))
	if d := before - tx.Free(); d != 2*len(reqs) {
		t.Fatalf("%d timed frames took %d descriptors, want %d (a context each)", len(reqs), d, 2*len(reqs))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(arr)
		mu.Unlock()
		if n == len(reqs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d frames on the wire", n, len(reqs))
		}
		tx.Reclaim()
		time.Sleep(time.Millisecond)
	}
	// Frames leave in order; each at or after its launch time (the ones after
	// a held frame at or after that frame's), and not a cycle later.
	due, worst := int64(0), int64(0)
	defer func() { t.Logf("latest frame left %v after its launch time", time.Duration(worst)) }()
	for i, a := range arr {
		if !bytes.Equal(a.frame, reqs[i].frame) {
			t.Fatalf("frame %d out of order or changed", i)
		}
		due = max(due, launch[i])
		if a.at < due {
			t.Fatalf("frame %d left at %d, %d ns before its launch time %d", i, a.at, due-a.at, due)
		}
		worst = max(worst, a.at-due)
		// Lateness is the host's scheduling (tens of ms seen with a load of 13
		// on 2 cores); a wrong cycle arithmetic would hold a frame ~0.5-1 s.
		if late := a.at - due; late > int64(400*time.Millisecond) {
			t.Fatalf("frame %d left %v after its launch time", i, time.Duration(late))
		}
	}
	nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
	r.checkModel()
	// A closed port refuses requests without touching the clock.
	b = r.p.RxQueue(0).Pool().Get()
	b.Len = 60
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	r.p = nil
	if err := tx.CheckTxMeta(b); !errors.Is(err, nic.ErrTxMeta) || !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("CheckTxMeta after Close: %v", err)
	}
	r.checkModel()
}

// TestSimTxLaunchTimeConfig: launch time is refused where the hardware has
// none.
func TestSimTxLaunchTimeConfig(t *testing.T) {
	for _, c := range []struct {
		dev    uint16
		queues int
		mask   uint8
	}{
		{0x10C9, 1, 1}, // 82576
		{0x1521, 1, 1}, // I350
		{0x1539, 1, 1}, // I211: no Qav
		{0x1533, 4, 4}, // queue 2 is not an SR queue
		{0x1533, 1, 2}, // queue 1 not set up
	} {
		m, err := igbsim.New(igbsim.Config{DeviceID: c.dev})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := igb.Open(m.Device(), igb.Config{Queues: c.queues, LaunchTime: c.mask, LinkTimeout: -1}); err == nil {
			p.Close()
			t.Errorf("device %#x: launch time mask %#b on %d queues accepted", c.dev, c.mask, c.queues)
		}
		m.Close()
	}
}

// TestZeroAllocsTxMeta: Send with checksum and timestamp requests, Reclaim
// and TxStamps allocate nothing, as Send without requests.
func TestZeroAllocsTxMeta(t *testing.T) {
	d := newPlainDevice() // an I210
	p, err := igb.Open(d, igb.Config{RxRingSize: 64, TxRingSize: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tq := metaQueue(t, p, 0)
	pool := p.RxQueue(0).Pool()
	f := buildCsumFrame(t, rand.New(rand.NewPCG(1, 2)), false, false, false, 200)
	bufs := make([]*dma.Buf, 8)
	stamps := make([]nic.TxStamp, 8)
	for _, flags := range []uint8{0, dma.TxFlagChecksum | dma.TxFlagTimestamp} {
		sent, got := 0, 0
		allocs := testing.AllocsPerRun(300, func() {
			for i := range bufs {
				b := pool.Get()
				b.Len = copy(b.Mem[b.Off:], f.req)
				b.TxFlags, b.CsumStart, b.CsumOffset = flags, uint16(f.start), uint16(f.offset)
				bufs[i] = b
			}
			k := tq.Send(bufs)
			for _, b := range bufs[k:] {
				b.Free()
			}
			sent += k
			d.complete(t)
			d.regs[0xB614/4] |= 1 // TSYNCTXCTL.VALID: the latch holds a stamp
			tq.Reclaim()
			got += tq.TxStamps(stamps)
		})
		if allocs != 0 {
			t.Fatalf("flags %#x: %v allocations per burst of 8, want 0", flags, allocs)
		}
		if sent < 300*8 || (flags != 0 && got != sent) {
			t.Fatalf("flags %#x: sent %d, %d completions", flags, sent, got)
		}
	}
}
