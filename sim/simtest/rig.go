package simtest

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// Model is what the rigs need of a device model.
type Model interface {
	// Attach connects the model's MAC to a link.
	Attach(link sim.Link)
	// Err reports the faults the model recorded (nil: none).
	Err() error
	// Close stops the model.
	Close() error
}

// Port is a driver's port as the rigs hold it (a pointer type, so a test
// that closed it itself can say so by setting its variable to nil).
type Port interface {
	comparable
	nic.Port
}

// OpenOnWire attaches m to one end of a new in-memory wire, records in rec
// the frames that reach the other end (the test's, which it returns), and
// opens the driver with open into *port; it does not wait for the link. At
// the end of the test it closes *port, unless the test has set it to the zero
// value having closed the port itself, then the model. A failed open fails
// the test with the model's faults.
func OpenOnWire[P Port](t *testing.T, m Model, port *P, rec *sim.Recorder, open func() (P, error)) *sim.PairEnd {
	t.Helper()
	portEnd, testEnd := sim.NewPair()
	m.Attach(portEnd)
	testEnd.SetReceiver(rec.Receive)
	p, err := open()
	if err != nil {
		m.Close()
		t.Fatalf("Open: %v (model faults: %v)", err, m.Err())
	}
	*port = p
	t.Cleanup(func() {
		var none P
		if *port != none {
			if err := (*port).Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		m.Close()
	})
	return testEnd
}

// NoFaults fails the test if m recorded any fault.
func NoFaults(t testing.TB, m Model) {
	t.Helper()
	if err := m.Err(); err != nil {
		t.Fatalf("model faults: %v", err)
	}
}

// WaitFor polls cond every 50 µs until it holds, failing the test with what
// after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Window returns dev's register window 0 and its DMA allocator, with bus
// mastering on: what a test that plays the driver at register level starts
// from.
func Window(t testing.TB, dev nic.Device) (nic.Regs, dma.Allocator) {
	t.Helper()
	regs, err := dev.Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	return regs, dev.DMA()
}

// Settler is a model whose device side a test can settle.
type Settler interface {
	Sched() *sim.Sched
	Settle()
}

// Settled is a model's register window whose writes return only when the
// device side has finished what they started (Settle, on an asynchronous
// device side), so a functional test can check the wire, the descriptors and
// the interrupt causes right after a doorbell. Timing tests use the window
// itself.
type Settled struct {
	nic.Regs
	M Settler
}

// Write32 writes val at off, then settles the device side.
func (s Settled) Write32(off, val uint32) {
	s.Regs.Write32(off, val)
	if !s.M.Sched().Synchronous() {
		s.M.Settle()
	}
}

// RegModel is a model a register-level test drives: its device (register
// window and DMA), its device side's clock, and Close.
type RegModel interface {
	Settler
	Device() nic.Device
	Close() error
}

// Rig is what a model's register-level tests start from: the model's register
// window with bus mastering on, its DMA allocator, and the accessors a test
// playing the driver uses. A model's own rig embeds it and adds its
// registers' helpers.
type Rig struct {
	T    testing.TB
	Regs nic.Regs
	A    dma.Allocator
	m    Settler
}

// NewRig opens m's register window (Window) and closes m at the end of the
// test.
func NewRig(t testing.TB, m RegModel) Rig {
	t.Helper()
	t.Cleanup(func() { m.Close() })
	regs, a := Window(t, m.Device())
	return Rig{T: t, Regs: regs, A: a, m: m}
}

// NewRigOff is NewRig with bus mastering left off, for a test of what the
// device does when a driver forgot it.
func NewRigOff(t testing.TB, m RegModel) Rig {
	t.Helper()
	t.Cleanup(func() { m.Close() })
	regs, err := m.Device().Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	return Rig{T: t, Regs: regs, A: m.Device().DMA(), m: m}
}

// Rd reads register off.
func (r Rig) Rd(off uint32) uint32 { return r.Regs.Read32(off) }

// Wr writes register off and lets the device side finish what the write
// started (Settled).
func (r Rig) Wr(off uint32, v uint32) { Settled{Regs: r.Regs, M: r.m}.Write32(off, v) }

// WrRaw writes without letting the device finish first (the timing tests).
func (r Rig) WrRaw(off uint32, v uint32) { r.Regs.Write32(off, v) }

// WaitFor polls cond for up to 2 s (WaitFor).
func (r Rig) WaitFor(what string, cond func() bool) {
	r.T.Helper()
	WaitFor(r.T, what, 2*time.Second, cond)
}
