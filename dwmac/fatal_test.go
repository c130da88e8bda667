package dwmac

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// fatalRig is the driver on dwmacsim with the test at the wire's far end.
func fatalRig(t *testing.T) (*dwmacsim.Model, *Port, *sim.Recorder) {
	t.Helper()
	m, err := dwmacsim.New(dwmacsim.Config{AutonegDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	portEnd, testEnd := sim.NewPair()
	m.Attach(portEnd)
	rec := &sim.Recorder{}
	testEnd.SetReceiver(rec.Receive)
	p, err := Open(m.Device(), Config{LinkTimeout: 2 * time.Second, RxRingSize: 16, TxRingSize: 16, PoolSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		m.Close()
	})
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	return m, p, rec
}

// unreachable is an IOVA the model has no memory at.
const unreachable = 0x7fff_0000

// TestFatalRxRecoveredByPolling: a descriptor whose buffer the DMA cannot
// reach stops the RX channel with FBE; Recv, polled as the dataplane polls it,
// finds the channel stopped, resets the ring and counts it, and frames flow
// again with every buffer accounted for.
func TestFatalRxRecoveredByPolling(t *testing.T) {
	m, p, _ := fatalRig(t)
	rng := rand.New(rand.NewPCG(31, 32))
	bufs := make([]*dma.Buf, 8)
	q := p.rx[0]
	// Corrupt the next descriptor's buffer address (as a stray write would).
	d := q.Desc(q.Next)
	storeDES3(d, putRxRead(d, unreachable, true))
	q.SyncDesc(q.Next, dma.ForDevice)
	m.Inject(nictest.RandFrame(rng, p.MAC(), 100))
	if m.Err() == nil {
		t.Fatal("the model reached an unreachable buffer")
	}
	m.FaultLog().Clear()
	polls := 0
	for ; polls < 2*fatalCheckEvery && nictest.Counter(t, p, "rx_dma_recoveries") == 0; polls++ {
		if n := q.Recv(bufs); n != 0 {
			t.Fatalf("Recv got %d frames from a stopped channel", n)
		}
	}
	if got := nictest.Counter(t, p, "rx_dma_recoveries"); got != 1 {
		t.Fatalf("rx_dma_recoveries %d after %d polls, want 1", got, polls)
	}
	if err := p.CheckDMA(); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	for i := 0; i < 40; i++ { // more than a ring's worth: it wraps
		f := nictest.RandFrame(rng, p.MAC(), 60+i)
		if !m.Inject(f) {
			t.Fatalf("frame %d after recovery refused (model: %v)", i, m.Err())
		}
		if n := q.Recv(bufs); n != 1 || !bytes.Equal(bufs[0].Data(), f) {
			t.Fatalf("frame %d after recovery: Recv %d", i, n)
		}
		bufs[0].Free()
	}
	if st := q.Pool().Stats(); q.Posted != q.N-1 || st.Free+q.Posted != 64 || st.BadPuts != 0 {
		t.Fatalf("posted %d, pool %+v: buffers lost in the recovery", q.Posted, st)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestFatalTxRecoveredByPolling: a TX descriptor the DMA cannot fetch a buffer
// for stops the TX channel; Reclaim with frames in flight finds it, gives the
// in-flight buffers back (counted as errors and as reclaimed) and restarts the
// ring; the next frames reach the wire.
func TestFatalTxRecoveredByPolling(t *testing.T) {
	m, p, rec := fatalRig(t)
	rng := rand.New(rand.NewPCG(33, 34))
	q := p.tx[0]
	pool := p.rx[0].Pool()
	held := pool.Get()
	held.SetOwner(dma.OwnerTx)
	// A descriptor for held's slot pointing elsewhere, handed to the DMA.
	i := q.Tail
	d := q.Ring.CPU[i*descSize : i*descSize+descSize]
	binary.LittleEndian.PutUint32(d[0:], unreachable)
	binary.LittleEndian.PutUint32(d[4:], 0)
	binary.LittleEndian.PutUint32(d[8:], 60)
	storeDES3(d, desOWN|desFD|desLD|60)
	q.Alloc.Sync(q.Ring, i*descSize, descSize, dma.ForDevice)
	q.Slots[i], q.Tail, q.Inflight = held, i+1, 1
	q.regs.Write32(q.tailReg, uint32(q.Ring.IOVA)+uint32(q.Tail*descSize))
	for deadline := time.Now().Add(2 * time.Second); m.Err() == nil; { // the device side may run later
		if time.Now().After(deadline) {
			t.Fatal("the model fetched an unreachable buffer")
		}
		time.Sleep(time.Millisecond)
	}
	m.FaultLog().Clear()
	free := pool.Stats().Free
	got := 0
	for polls := 0; polls < 2*fatalCheckEvery && got == 0; polls++ {
		got = q.Reclaim()
	}
	if got != 1 || pool.Stats().Free != free+1 || held.Owner() != dma.OwnerFree {
		t.Fatalf("Reclaim returned %d, pool %d -> %d, held owned by %v", got, free, pool.Stats().Free, held.Owner())
	}
	if c := nictest.Counter(t, p, "tx_dma_recoveries"); c != 1 {
		t.Fatalf("tx_dma_recoveries %d", c)
	}
	if c := nictest.Counter(t, p, "tx_errors"); c != 1 {
		t.Fatalf("tx_errors %d, want the lost frame", c)
	}
	for k := 0; k < 20; k++ {
		b := pool.Get()
		b.Len = copy(b.Mem[b.Off:], nictest.RandFrame(rng, net.HardwareAddr{2, 0, 0, 0, 0, 9}, 80+k))
		// The device side finishes transmits on its own time: with a
		// 16-descriptor ring, wait for room rather than call a full ring a
		// refusal.
		for deadline := time.Now().Add(2 * time.Second); q.Send([]*dma.Buf{b}) != 1; q.Reclaim() {
			if time.Now().After(deadline) {
				t.Fatalf("frame %d refused after recovery", k)
			}
			time.Sleep(100 * time.Microsecond)
		}
		q.Reclaim()
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(rec.Frames()) < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		q.Reclaim()
	}
	if n := len(rec.Frames()); n != 20 {
		t.Fatalf("%d frames on the wire after recovery, want 20", n)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}
