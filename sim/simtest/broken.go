package simtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// TxPlay is a test's own transmit ring on a model, playing the driver with
// the family's descriptor codec and doorbell, for the broken-driver checks
// every model must pass (ReclaimEarly).
type TxPlay struct {
	// Send puts frame on the ring, rings the doorbell and returns its slot.
	Send func(frame []byte) (slot int)
	// Rewrite writes frame over slot's buffer as a driver reusing the buffer
	// does (synced for the device where memory is not coherent).
	Rewrite func(slot int, frame []byte)
	// Done reports whether the device has handed slot back (its write-back).
	Done func(slot int) bool
	// Wire returns the frames transmitted since its last call.
	Wire func() [][]byte
	// Settle lets the device side finish what it was asked now.
	Settle func()
	// Poll (optional) is what a driver does while it waits, a register read.
	Poll func()
}

// ReclaimEarly checks a model's TX path against a driver that reuses a
// buffer right after the doorbell, before the write-back: on bad (a device
// side slow enough that the rewrite comes first), the new bytes must reach
// the wire within tries frames, as on hardware that reads the buffer at its
// own time; on good, a driver that waits for Done before rewriting must see
// each of n frames leave as queued. frame(i) is the i-th test frame.
func ReclaimEarly(t testing.TB, bad, good TxPlay, frame func(i int) []byte, tries, n int) {
	t.Helper()
	caught := false
	for i := 0; i < tries && !caught; i++ {
		f, g := frame(i), frame(i+100)
		bad.Wire()
		k := bad.Send(f)
		bad.Rewrite(k, g) // "done": reuse the buffer
		bad.Settle()
		got := bad.Wire()
		if len(got) != 1 {
			t.Fatalf("try %d: %d frames on the wire, want 1", i, len(got))
		}
		caught = bytes.Equal(got[0], g)
		if !caught && !bytes.Equal(got[0], f) {
			t.Fatalf("try %d: the wire got neither the frame queued nor the rewrite:\n%x", i, got[0])
		}
	}
	if !caught {
		t.Fatalf("in %d tries the device never read a TX buffer after the doorbell returned", tries)
	}
	for i := 0; i < n; i++ {
		f := frame(i)
		good.Wire()
		k := good.Send(f)
		deadline := time.Now().Add(time.Second)
		for !good.Done(k) {
			if time.Now().After(deadline) {
				t.Fatalf("frame %d: the device never handed slot %d back", i, k)
			}
			time.Sleep(10 * time.Microsecond)
			if good.Poll != nil {
				good.Poll()
			}
		}
		good.Rewrite(k, frame(i+200))
		good.Settle() // the wire may get the frame just after the write-back
		got := good.Wire()
		if len(got) != 1 || !bytes.Equal(got[0], f) {
			t.Fatalf("frame %d: the wire got %d frames (%x), want the one queued", i, len(got), got)
		}
	}
}

// SlowDevice is a model's device side for the broken-driver checks: every
// step waits an hour unless Settled, so what a broken driver does after its
// doorbell certainly comes first, and Settle runs the device on the test's
// goroutine (the race detector would rightly flag the broken driver's write
// racing the device's read otherwise).
var SlowDevice = sim.SchedConfig{MinLatency: time.Hour, MaxLatency: time.Hour}
