package nictest

import (
	"errors"
	"runtime/debug"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// ClosedPort checks the nic contract for a port after Close, on a port open
// returns (up, with at least one queue pair): every call still answers
// without a panic; the calls that return errors return one wrapping
// nic.ErrClosed (a second Close too, or nil, as io.Closer allows); Recv and
// Send take nothing (their documented zero value), Free is 0, queues held
// from before Close neither touch the device nor hand out buffers. While the
// port is open a second open fails with nic.ErrBusy; after Close it works.
func ClosedPort(t *testing.T, open func() (nic.Port, error)) {
	t.Helper()
	p, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if q, err := open(); !errors.Is(err, nic.ErrBusy) {
		if q != nil {
			q.Close()
		}
		t.Errorf("a second Open of a device with an open port = %v, want ErrBusy", err)
	}
	rx, tx := p.RxQueue(0), p.TxQueue(0)
	if rx == nil || tx == nil {
		t.Fatal("open port has no queue 0")
	}
	spare := rx.Pool().Get()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("a call on the closed port panicked: %v\n%s", r, debug.Stack())
		}
	}()
	if err := p.Close(); err != nil && !errors.Is(err, nic.ErrClosed) {
		t.Errorf("second Close = %v, want nil or ErrClosed", err)
	}
	if err := p.SetPromisc(true); !errors.Is(err, nic.ErrClosed) {
		t.Errorf("SetPromisc after Close = %v, want ErrClosed", err)
	}
	if _, err := p.WaitLink(10 * time.Millisecond); !errors.Is(err, nic.ErrClosed) {
		t.Errorf("WaitLink after Close = %v, want ErrClosed", err)
	}
	if l := p.Link(); l.Up {
		t.Errorf("Link after Close = %+v, want down", l)
	}
	_ = p.Stats()
	_, _ = p.Name(), p.MAC()
	bufs := make([]*dma.Buf, 8)
	if n := rx.Recv(bufs); n != 0 {
		t.Errorf("Recv on a closed port's queue = %d, want 0", n)
	}
	rx.ArmIRQ()
	if spare != nil {
		if n := tx.Send([]*dma.Buf{spare}); n != 0 {
			t.Errorf("Send on a closed port's queue took %d, want 0", n)
		}
	}
	if n := tx.Free(); n != 0 {
		t.Errorf("Free on a closed port's queue = %d, want 0", n)
	}
	_ = tx.Reclaim()
	if q := p.RxQueue(0); q != nil {
		if n := q.Recv(bufs); n != 0 {
			t.Errorf("Recv on RxQueue(0) after Close = %d, want 0", n)
		}
	}
	again, err := open()
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// SendTwice checks that TX queue 0 of p refuses a buffer it already holds:
// the same buffer twice in one Send goes on the ring once (the second is
// taken, counted in the driver's tx_refused_owner, and neither sent nor
// freed), and a buffer still in flight given again is refused the same way.
// Afterwards the buffer is back in its pool exactly once. The model behind p
// must complete transmits on its own.
func SendTwice(t *testing.T, p nic.Port) {
	t.Helper()
	tx, pool := p.TxQueue(0), p.RxQueue(0).Pool()
	b := pool.Get()
	if b == nil {
		t.Fatal("pool empty")
	}
	b.Len = 60
	before := Counter(t, p, "tx_refused_owner")
	if n := tx.Send([]*dma.Buf{b, b}); n != 2 {
		t.Fatalf("Send([b, b]) took %d, want 2 (one sent, one refused)", n)
	}
	want := uint64(1)
	if b.Owner() == dma.OwnerTx { // still in flight (or reclaimed and free)
		if n := tx.Send([]*dma.Buf{b}); n != 1 {
			t.Fatalf("Send of an in-flight buffer took %d, want 1 (refused)", n)
		}
		want++
	}
	if got := Counter(t, p, "tx_refused_owner") - before; got != want {
		t.Errorf("tx_refused_owner rose by %d, want %d", got, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tx.Reclaim(); b.Owner() != dma.OwnerFree; tx.Reclaim() {
		if time.Now().After(deadline) {
			t.Fatalf("the buffer is still %v after 5 s", b.Owner())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if bad := pool.Stats().BadPuts; bad != 0 {
		t.Errorf("%d buffers given back to the pool twice", bad)
	}
}
