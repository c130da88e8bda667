package vfio

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
)

// fire adds n to an eventfd, as the kernel does when a vector fires.
func fire(t *testing.T, fd int, n uint64) {
	t.Helper()
	var b [8]byte
	ne.PutUint64(b[:], n)
	if _, err := unix.Write(fd, b[:]); err != nil {
		t.Fatal(err)
	}
}

func TestEventIRQ(t *testing.T) {
	fd, err := newEventfd()
	if err != nil {
		t.Fatal(err)
	}
	q := newEventIRQ(fd, IRQMSIX, 2, nil)
	defer q.close()
	var irq nic.IRQ = q
	if irq.Fd() != fd || q.Vector() != 2 || q.Kind() != IRQMSIX {
		t.Fatal("accessors")
	}
	start := time.Now()
	fired, err := irq.Wait(30 * time.Millisecond)
	if err != nil || fired {
		t.Fatalf("idle wait: %v %v", fired, err)
	}
	if el := time.Since(start); el < 25*time.Millisecond || el > 2*time.Second {
		t.Fatalf("30 ms wait took %v", el)
	}
	if fired, _ := irq.Wait(0); fired {
		t.Fatal("Wait(0) on an idle vector fired")
	}
	fire(t, fd, 3) // three firings before anyone waits: one Wait consumes them
	if fired, err := irq.Wait(time.Second); !fired || err != nil {
		t.Fatalf("wait after fire: %v %v", fired, err)
	}
	if fired, _ := irq.Wait(0); fired {
		t.Fatal("firings were not consumed")
	}
	// A firing from another goroutine wakes a blocked Wait without a deadline.
	go func() {
		time.Sleep(10 * time.Millisecond)
		var b [8]byte
		ne.PutUint64(b[:], 1)
		unix.Write(fd, b[:])
	}()
	done := make(chan bool)
	go func() {
		f, _ := irq.Wait(-1)
		done <- f
	}()
	select {
	case f := <-done:
		if !f {
			t.Fatal("blocking Wait returned without a firing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocking Wait never woke")
	}
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := irq.Wait(0); !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("wait after close: %v", err)
	}
	if irq.Fd() != -1 {
		t.Fatal("Fd after close")
	}
}

func TestEventIRQUnmasksINTx(t *testing.T) {
	fd, err := newEventfd()
	if err != nil {
		t.Fatal(err)
	}
	unmasks := 0
	q := newEventIRQ(fd, IRQIntx, 0, func() error { unmasks++; return nil })
	defer q.close()
	if fired, _ := q.Wait(0); fired || unmasks != 0 {
		t.Fatal("unmask without a firing")
	}
	fire(t, fd, 1)
	if fired, err := q.Wait(time.Second); !fired || err != nil || unmasks != 1 {
		t.Fatalf("fired %v err %v unmasks %d", fired, err, unmasks)
	}
	q.unmask = func() error { return unix.EIO }
	fire(t, fd, 1)
	if fired, err := q.Wait(time.Second); !fired || !errors.Is(err, unix.EIO) {
		t.Fatalf("failed unmask: fired %v err %v", fired, err)
	}
}
