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
// from before Close neither touch the device nor hand out buffers.
func ClosedPort(t *testing.T, open func() (nic.Port, error)) {
	t.Helper()
	p, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
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
}
