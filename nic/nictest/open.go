package nictest

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// OpenOn opens a port on dev, a real device (VFIO or physical memory) the
// test has opened, with open (the driver's Open; what names it in the
// failure). A failed open closes dev and fails the test; otherwise the port,
// then dev, are closed at the end of the test, and a failing port Close fails
// it.
func OpenOn[P nic.Port](t testing.TB, what string, dev io.Closer, open func() (P, error)) P {
	t.Helper()
	p, err := open()
	if err != nil {
		dev.Close()
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		dev.Close()
	})
	return p
}

// InterruptWakesRecv checks an RX queue's interrupt on a real device: a
// receiver that has drained the queue and armed it (the protocol of
// nic.RxQueue.ArmIRQ) blocks on the vector until the one frame want
// recognises arrives. schedule asks the peer to send that frame later, long
// enough for the receiver to block first; signals left from earlier frames
// (a vector the device does not auto-mask) are consumed before arming.
// Every other frame is freed. It fails the test, with dump, when no interrupt
// comes within timeout, and returns the frame (the caller checks and frees
// it).
func InterruptWakesRecv(t testing.TB, rq nic.RxQueue, timeout time.Duration, schedule func() error, want func(frame []byte) bool, dump func() string) *dma.Buf {
	t.Helper()
	irq := rq.IRQ()
	if irq == nil {
		t.Fatal("no IRQ with Config.Interrupts")
	}
	if err := schedule(); err != nil {
		t.Fatal(err)
	}
	bufs := make([]*dma.Buf, 8)
	var got *dma.Buf
	// keep takes the awaited frame out of a burst and frees the rest.
	keep := func(bs []*dma.Buf) {
		for _, b := range bs {
			if got == nil && want(b.Data()) {
				got = b
				continue
			}
			b.Free()
		}
	}
	for n := rq.Recv(bufs); n > 0; n = rq.Recv(bufs) {
		keep(bufs[:n])
	}
	for fired, _ := irq.Wait(0); fired; fired, _ = irq.Wait(0) {
	}
	rq.ArmIRQ()
	keep(bufs[:rq.Recv(bufs)])
	if got != nil {
		t.Fatal("the delayed frame arrived before the receiver blocked: nothing proves the interrupt (the peer's delay is too short for this guest)")
	}
	deadline := time.Now().Add(timeout)
	wakes := 0
	for got == nil {
		start := time.Now()
		fired, err := irq.Wait(time.Until(deadline))
		if err != nil || !fired {
			t.Fatalf("no interrupt within %v (fired=%v err=%v)\n%s", timeout, fired, err, dump())
		}
		wakes++
		t.Logf("woken after %v", time.Since(start))
		keep(bufs[:rq.Recv(bufs)])
		rq.ArmIRQ()
	}
	t.Logf("%d wake-ups", wakes)
	return got
}

// Env returns environment variable name, the device a test on real hardware
// uses, or skips the test ("name not set: " and why) when it is unset.
func Env(t testing.TB, name, why string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s not set: %s", name, why)
	}
	return v
}
