package igbsim

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// capture records transmitted frames.
type capture struct {
	mu     sync.Mutex
	frames [][]byte
}

func (c *capture) fn(f []byte) {
	c.mu.Lock()
	c.frames = append(c.frames, append([]byte(nil), f...))
	c.mu.Unlock()
}

func (c *capture) got() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

func txRig(t *testing.T) (*rig, *txRing, *capture) { return txRigCfg(t, testCfg()) }

func txRigCfg(t *testing.T, cfg Config) (*rig, *txRing, *capture) {
	r := newRig(t, cfg)
	r.linkUp()
	tx := r.setupTx(0, 8)
	r.Wr(tTCTL, tTctlEN|tTctlPSP)
	c := &capture{}
	r.m.SetTransmit(c.fn)
	return r, tx, c
}

func TestTxDMAAndStats(t *testing.T) {
	r, tx, c := txRig(t)
	f1, f2 := frame(bcastMAC, 100), frame([6]byte{0x02, 1, 2, 3, 4, 5}, 1514)
	tx.put(f1)
	tx.put(f2)
	require.Empty(t, c.got(), "nothing goes before the tail moves")
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Equal(t, [][]byte{f1, f2}, c.got(), "sent synchronously with the TDT write")
	require.True(t, tx.dd(0))
	require.True(t, tx.dd(1))
	require.Equal(t, uint32(2), r.Rd(tTDBAL(0)+0x10), "TDH advanced")
	require.Equal(t, uint32(2), r.Rd(tGPTC))
	require.Equal(t, uint32(0), r.Rd(tGPTC), "clear on read")
	require.Equal(t, uint32(2), r.Rd(tTPT))
	require.Equal(t, uint32(104+1518), r.Rd(tGOTCL))
	require.Equal(t, uint32(0), r.Rd(tGOTCH))
	require.Equal(t, uint32(1), r.Rd(0x40F4), "BPTC")
	require.Equal(t, uint64(2), r.m.Counters().TxFrames)
	require.NoError(t, r.m.Err())
}

func TestTxWrapPadAndMultiDescriptor(t *testing.T) {
	r, tx, c := txRig(t)
	var want [][]byte
	for k := 0; k < 20; k++ {
		f := frame(factoryMAC, 64+k)
		tx.put(f)
		want = append(want, f)
		r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	}
	require.Equal(t, want, c.got())
	require.Equal(t, uint32(20%8), r.Rd(tTDBAL(0)+0x10), "TDH wrapped")

	// A short frame is padded to 60 bytes (PSP).
	short := frame(factoryMAC, 42)
	tx.put(short)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	got := c.got()
	padded := append(append([]byte(nil), short...), make([]byte, 18)...)
	require.Equal(t, padded, got[len(got)-1])

	// One frame over three descriptors; the tail first stops in the middle.
	f := frame(factoryMAC, 300)
	i0 := tx.tail
	for k, part := range [][]byte{f[:100], f[100:250], f[250:]} {
		i := tx.tail
		copy(tx.bufs.CPU[i*txBufSize:], part)
		cmd := uint32(tTxIFCS)
		if k == 2 {
			cmd |= tTxEOP | tTxRS
		}
		tx.desc(i, tx.bufs.IOVA+uint64(i*txBufSize), uint32(len(part)), cmd, 300)
		tx.tail = (tx.tail + 1) % tx.n
		if k == 1 {
			r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
			require.Len(t, c.got(), len(got), "no EOP before the tail: the frame waits")
			require.Equal(t, uint32(i0), r.Rd(tTDBAL(0)+0x10))
		}
	}
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	got = c.got()
	require.Equal(t, f, got[len(got)-1])
	require.True(t, tx.dd((i0+2)%tx.n), "DD where RS was set")
	require.False(t, tx.dd(i0), "no DD without RS")
	require.NoError(t, r.m.Err())
}

func TestTxDisabledQueueSendsNothing(t *testing.T) {
	r, tx, c := txRig(t)
	r.Wr(tTCTL, tTctlPSP) // TCTL.EN off
	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Empty(t, c.got())
	r.Wr(tTCTL, tTctlEN|tTctlPSP)
	require.Len(t, c.got(), 1, "pending descriptors go when TCTL.EN is set")
	r.Wr(tTDBAL(0)+0x28, 0)
	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Len(t, c.got(), 1, "a disabled queue does not transmit")
	require.NoError(t, r.m.Err())
}

func TestTxStrictDescriptors(t *testing.T) {
	cases := []struct {
		name string
		set  func(tx *txRing, i int)
	}{
		{"length 0", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 0, tTxEOP|tTxIFCS|tTxRS, 0)
		}},
		{"frame over 9728 bytes", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 9800, tTxEOP|tTxIFCS|tTxRS, 9800)
		}},
		{"legacy descriptor", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 60, tTxEOP|tTxIFCS|tTxRS, 60)
			d := tx.ring.CPU[i*16+8:]
			le.PutUint32(d, le.Uint32(d)&^uint32(tTxDEXT))
		}},
		{"unknown DTYP", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 60, tTxEOP|tTxIFCS|tTxRS, 60)
			d := tx.ring.CPU[i*16+8:]
			le.PutUint32(d, le.Uint32(d)&^uint32(0xF<<20)|1<<20)
		}},
		{"missing IFCS", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 60, tTxEOP|tTxRS, 60)
		}},
		{"wrong PAYLEN", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA, 60, tTxEOP|tTxIFCS|tTxRS, 61)
		}},
		{"buffer not mapped", func(tx *txRing, i int) {
			tx.desc(i, 0x7000, 60, tTxEOP|tTxIFCS|tTxRS, 60)
		}},
		{"buffer runs past its region", func(tx *txRing, i int) {
			tx.desc(i, tx.bufs.IOVA+uint64(len(tx.bufs.CPU))-10, 60, tTxEOP|tTxIFCS|tTxRS, 60)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, tx, cp := txRig(t)
			c.set(tx, 0)
			tx.tail = 1
			r.Wr(tTDBAL(0)+0x18, 1)
			require.Empty(t, cp.got(), "a refused frame is not sent")
			require.Equal(t, 1, r.m.FaultLog().Count(), "faults: %v", r.m.Faults())
			require.True(t, tx.dd(0), "the descriptor is still completed")
			require.Equal(t, uint32(1), r.Rd(tTDBAL(0)+0x10))
			require.Equal(t, uint64(1), r.m.Counters().TxDropped)
		})
	}
}

func TestTxContextDescriptorConsumed(t *testing.T) {
	r, tx, c := txRig(t)
	d := tx.ring.CPU[0:16]
	le.PutUint32(d[8:], tTxDtypCtxt|tTxDEXT)
	tx.tail = 1
	f := frame(factoryMAC, 70)
	tx.put(f)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Equal(t, [][]byte{f}, c.got())
	require.Equal(t, uint32(2), r.Rd(tTDBAL(0)+0x10))
	require.NoError(t, r.m.Err())
}

func TestTxGIOMasterDisabledFaults(t *testing.T) {
	r, tx, c := txRig(t)
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlGIOMD)
	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Empty(t, c.got())
	require.Equal(t, 1, r.m.FaultLog().Count())
}

func TestTxBusMasterOffFaults(t *testing.T) {
	r, tx, c := txRig(t)
	require.NoError(t, r.m.Device().WriteConfig(4, 2, 0x2)) // bus master off
	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Empty(t, c.got())
	require.Equal(t, 1, r.m.FaultLog().Count())
	require.Zero(t, r.Rd(tTDBAL(0)+0x10), "nothing consumed")
	r.m.FaultLog().Clear()
	require.NoError(t, r.m.Device().EnableBusMaster())
	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Len(t, c.got(), 2, "both go once DMA is allowed")
	require.NoError(t, r.m.Err())
}

func TestTwoModelsOverAPair(t *testing.T) {
	a := newRig(t, Config{MAC: []byte{0x02, 0, 0, 0, 0, 0xA}})
	b := newRig(t, Config{MAC: []byte{0x02, 0, 0, 0, 0, 0xB}})
	ea, eb := sim.NewPair()
	a.m.Attach(ea)
	b.m.Attach(eb)
	a.linkUp()
	b.linkUp()
	rxb := b.setupRx(0, 8, 2)
	b.Wr(tRDBAL(0)+0x18, 7)
	b.enableRx(0)
	rxa := a.setupRx(0, 8, 2)
	a.Wr(tRDBAL(0)+0x18, 7)
	a.enableRx(0)
	txa := a.setupTx(0, 8)
	txb := b.setupTx(0, 8)
	a.Wr(tTCTL, tTctlEN|tTctlPSP)
	b.Wr(tTCTL, tTctlEN|tTctlPSP)

	fab := frame([6]byte{0x02, 0, 0, 0, 0, 0xB}, 60)
	fba := frame([6]byte{0x02, 0, 0, 0, 0, 0xA}, 90)
	txa.put(fab)
	txb.put(fba)
	// Both transmit at once: neither may deadlock on the other.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Wr(tTDBAL(0)+0x18, uint32(txa.tail)) }()
	go func() { defer wg.Done(); b.Wr(tTDBAL(0)+0x18, uint32(txb.tail)) }()
	wg.Wait()
	require.Equal(t, fab, rxb.buf(0, 60))
	require.Equal(t, fba, rxa.buf(0, 90))
	require.Equal(t, uint64(1), ea.Stats().Sent)
	require.NoError(t, a.m.Err())
	require.NoError(t, b.m.Err())
}

func TestModelOverUDP(t *testing.T) {
	r := newRig(t, testCfg())
	ua, ub, err := sim.NewUDPPair()
	require.NoError(t, err)
	defer ub.Close()
	r.m.Attach(ua)
	defer ua.Close()
	got := make(chan []byte, 4)
	ub.SetReceiver(func(f []byte) { got <- append([]byte(nil), f...) })

	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(0)
	tx := r.setupTx(0, 8)
	r.Wr(tTCTL, tTctlEN|tTctlPSP)

	out := frame(bcastMAC, 64)
	tx.put(out)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	select {
	case f := <-got:
		require.Equal(t, out, f, "one frame per datagram")
	case <-time.After(5 * time.Second):
		t.Fatal("no datagram within 5s")
	}

	in := frame(factoryMAC, 70)
	require.NoError(t, ub.Send(in))
	r.WaitFor("RX write-back", func() bool { return r.Rd(tRDBAL(0)+0x10) == 1 })
	require.Equal(t, in, rx.buf(0, 70))
	require.NoError(t, r.m.Err())
}
