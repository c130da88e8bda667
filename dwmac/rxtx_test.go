package dwmac

import (
	"bytes"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// The fake plays the DMA: frames go into RX descriptors and come out of TX
// descriptors, around the ring several times.
func TestFakeRxTxWrap(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 16})
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	var rst rxState
	var tst txState
	bufs := make([]*dma.Buf, 8)
	var out [][]byte
	for round := 0; round < 10; round++ {
		frame := bytes.Repeat([]byte{byte(round)}, 60+round)
		if n := d.deliver(t, &rst, frame, 3, 0); n != 3 {
			t.Fatalf("round %d: %d descriptors posted, want 3", round, n)
		}
		n := rq.Recv(bufs)
		if n != 3 {
			t.Fatalf("round %d: Recv %d", round, n)
		}
		for _, b := range bufs[:n] {
			if !bytes.Equal(b.Data(), frame) || b.Owner() != dma.OwnerApp {
				t.Fatalf("round %d: frame % x owner %v", round, b.Data(), b.Owner())
			}
		}
		if k := tq.Send(bufs[:n]); k != 3 {
			t.Fatalf("round %d: Send took %d", round, k)
		}
		d.complete(t, &tst, func(f []byte) { out = append(out, bytes.Clone(f)) })
		if k := tq.Reclaim(); k != 3 {
			t.Fatalf("round %d: Reclaim %d", round, k)
		}
	}
	if len(out) != 30 {
		t.Fatalf("%d frames out, want 30", len(out))
	}
	for i, f := range out {
		if len(f) != 60+i/3 || f[0] != byte(i/3) {
			t.Fatalf("frame %d out: %d bytes of %d", i, len(f), f[0])
		}
	}
	if v, _ := Counter(p.Stats(), "rx_packets"); v != 30 {
		t.Fatalf("rx_packets %d", v)
	}
}

func TestFakeRxDropsBadDescriptors(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{RxRingSize: 8})
	var st rxState
	frame := make([]byte, 64)
	d.deliver(t, &st, frame, 1, 1<<15|1<<24) // ES | CE
	d.deliver(t, &st, frame, 1, 0)           // good
	d.deliver(t, &st, frame, 1, 1<<30)       // context descriptor
	d.deliver(t, &st, frame, 1, 0x7000)      // hostile: PL beyond the buffer
	d.rdes3Clr = 1 << 28
	d.deliver(t, &st, frame, 1, 0) // FD without LD: a frame split over buffers
	d.rdes3Clr = 0
	bufs := make([]*dma.Buf, 8)
	if n := p.RxQueue(0).Recv(bufs); n != 1 || bufs[0].Len != 64 {
		t.Fatalf("Recv %d (want only the good frame)", n)
	}
	bufs[0].Free()
	s := p.Stats()
	for name, want := range map[string]uint64{"rx_desc_errors": 1, "rx_context_desc": 1, "rx_packets": 1,
		"rx_length_errors": 1, "rx_split_frames": 1} {
		if v, _ := Counter(s, name); v != want {
			t.Errorf("%s = %d, want %d", name, v, want)
		}
	}
	// The dropped buffers went back to the pool and the ring is full again.
	if tail := d.reg(fCh0 + fChRxTail); tail != uint32(p.rx[0].Ring.IOVA)+uint32((5+7)%8*16) {
		t.Fatalf("RX tail 0x%x after refilling five", tail)
	}
	if pool := p.RxQueue(0).Pool(); pool.Stats().ByOwner[dma.OwnerRx] != 7 {
		t.Fatalf("%d buffers on the ring, want 7", pool.Stats().ByOwner[dma.OwnerRx])
	}
}

func TestFakeTxRefusesUnmappedAndBadLength(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{TxRingSize: 8})
	far, err := dma.NewPool(&nictest.FarAllocator{}, 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := far.Get()
	b.Len = 60
	short := p.RxQueue(0).Pool().Get()
	short.Len = 10
	tq := p.TxQueue(0)
	tail0 := d.reg(fCh0 + fChTxTail)
	if k := tq.Send([]*dma.Buf{b, short}); k != 2 {
		t.Fatalf("Send took %d, want 2 (both refused)", k)
	}
	if d.reg(fCh0+fChTxTail) != tail0 {
		t.Fatal("tail moved for refused buffers")
	}
	if tq.Free() != 7 {
		t.Fatalf("Free %d after refusals", tq.Free())
	}
	s := p.Stats()
	if v, _ := Counter(s, "tx_refused_dma"); v != 1 {
		t.Fatalf("tx_refused_dma %d", v)
	}
	if v, _ := Counter(s, "tx_refused_len"); v != 1 {
		t.Fatalf("tx_refused_len %d", v)
	}
	if err := far.CheckIdle(); err != nil {
		t.Fatalf("refused buffer not returned: %v", err)
	}
}

func TestFakeOneTailWritePerBurst(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{RxRingSize: 32, TxRingSize: 32})
	var st rxState
	d.deliver(t, &st, make([]byte, 60), 16, 0)
	rxTails := len(d.writes(fCh0 + fChRxTail))
	txTails := len(d.writes(fCh0 + fChTxTail))
	bufs := make([]*dma.Buf, 16)
	n := p.RxQueue(0).Recv(bufs)
	if n != 16 {
		t.Fatalf("Recv %d", n)
	}
	if k := p.TxQueue(0).Send(bufs[:n]); k != 16 {
		t.Fatalf("Send %d", k)
	}
	if got := len(d.writes(fCh0+fChRxTail)) - rxTails; got != 1 {
		t.Fatalf("%d RX tail writes for one Recv, want 1", got)
	}
	if got := len(d.writes(fCh0+fChTxTail)) - txTails; got != 1 {
		t.Fatalf("%d TX tail writes for one Send, want 1", got)
	}
	var tst txState
	if c := d.complete(t, &tst, nil); c != 16 {
		t.Fatalf("%d completed", c)
	}
	p.TxQueue(0).Reclaim()
}

// TestFakeZeroAllocs: Recv, Send and Reclaim allocate nothing per packet.
func TestFakeZeroAllocs(t *testing.T) {
	d := newFakeDev(t)
	p := openFake(t, d, Config{RxRingSize: 64, TxRingSize: 64})
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	var rst rxState
	var tst txState
	frame := make([]byte, 64)
	bufs := make([]*dma.Buf, 16)
	d.noLog = true // the fake's write log would allocate; the fake's DMA side (View) does not
	allocs := testing.AllocsPerRun(200, func() {
		d.deliver(t, &rst, frame, 16, 0)
		nictest.Bounce(rq, tq, bufs)
		d.complete(t, &tst, nil)
		tq.Reclaim()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per burst of 16", allocs)
	}
}

// BenchmarkFakeRxTx: the driver's own cost per packet, on the scripted fake
// whose DMA side the benchmark plays (cheaply). One op is one packet, in bursts
// of 32: deliver, Recv, Send, complete, Reclaim.
func BenchmarkFakeRxTx(b *testing.B) {
	d := newFakeDev(b)
	p, err := Open(d, Config{RxRingSize: 256, TxRingSize: 256, LinkTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	d.noLog = true
	rq, tq := p.RxQueue(0), p.TxQueue(0)
	var rst rxState
	var tst txState
	frame := make([]byte, 64)
	const burst = 32
	c := nictest.BenchRxTx(b, rq, tq, burst,
		func() { d.deliver(b, &rst, frame, burst, 0) },
		func() { d.complete(b, &tst, nil) })
	b.ReportMetric(c.PerPacket(float64(b.Elapsed().Nanoseconds())), "ns/pkt")
}
