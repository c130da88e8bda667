package sim

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// baseModel is the smallest model on a ModelBase: a lock, a wire, and a
// receive path that records what the wire delivers.
type baseModel struct {
	ModelBase
	mu   sync.Mutex
	wire Wire
	got  [][]byte
}

func newBaseModel(t *testing.T) *baseModel {
	m := &baseModel{}
	faults := &Faults{}
	sched := NewSched(SchedConfig{Sync: true})
	t.Cleanup(sched.Close)
	m.InitBase(ModelParts{Lock: &m.mu, Wire: &m.wire, MAC: [6]byte{2, 1, 2, 3, 4, 5},
		Inject: func(f []byte) bool {
			m.mu.Lock()
			m.got = append(m.got, bytes.Clone(f))
			m.mu.Unlock()
			return true
		},
		PHY: NewPHY(PHYConfig{Faults: faults}), Faults: faults, Sched: sched})
	return m
}

func TestModelBaseWire(t *testing.T) {
	m := newBaseModel(t)
	modelEnd, testEnd := NewPair()
	m.Attach(modelEnd)
	var rec Recorder
	testEnd.SetReceiver(rec.Receive)
	if err := testEnd.Send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if len(m.got) != 1 || !bytes.Equal(m.got[0], []byte{1, 2, 3}) {
		t.Fatalf("the model received %x, want one frame 010203", m.got)
	}
	m.mu.Lock()
	sink := m.wire.Sink()
	m.mu.Unlock()
	sink([]byte{9})
	if f := rec.Frames(); len(f) != 1 || f[0][0] != 9 {
		t.Fatalf("the far end got %x, want one frame 09", f)
	}
	var mine [][]byte
	m.SetTransmit(func(f []byte) { mine = append(mine, bytes.Clone(f)) })
	m.mu.Lock()
	sink = m.wire.Sink()
	m.mu.Unlock()
	sink([]byte{7})
	if len(mine) != 1 || len(rec.Frames()) != 1 {
		t.Fatalf("SetTransmit: %d frames to f, %d to the wire; want 1 and still 1", len(mine), len(rec.Frames()))
	}
	m.Attach(nil)
	if err := testEnd.Send([]byte{4}); err == nil && len(m.got) != 1 {
		t.Fatalf("a detached model received %d frames", len(m.got))
	}
}

func TestModelBaseAccessors(t *testing.T) {
	m := newBaseModel(t)
	mac := m.MAC()
	mac[0] = 0xFF // a copy: the factory address does not change
	if got := m.MAC().String(); got != "02:01:02:03:04:05" {
		t.Fatalf("MAC %s", got)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("Err %v with no fault", err)
	}
	m.FaultLog().Add("rx", "REG", 0x10, "bad %d", 1)
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "bad 1") {
		t.Fatalf("Err %v, want the fault", err)
	}
	if len(m.Faults()) != 1 {
		t.Fatalf("%d faults, want 1", len(m.Faults()))
	}
	if m.wire.Paced() {
		t.Fatal("the zero wire is paced")
	}
	m.SetPaced(true)
	if !m.wire.Paced() {
		t.Fatal("SetPaced(true) left the wire unpaced")
	}
	m.SetPaced(false)
	if m.wire.Paced() {
		t.Fatal("SetPaced(false) left the wire paced")
	}
}

// TestModelBaseReset: Reset runs the model's reset with the model's lock held.
func TestModelBaseReset(t *testing.T) {
	m := newBaseModel(t)
	resets, locked := 0, false
	m.reset = func() {
		resets++
		locked = !m.mu.TryLock()
	}
	m.Reset()
	if resets != 1 || !locked {
		t.Fatalf("%d resets, lock held %v; want 1 under the lock", resets, locked)
	}
}

func TestFactoryMACAndPHYAddr(t *testing.T) {
	if a, err := FactoryMAC(nil); err != nil || a != [6]byte{2, 0, 0, 0, 0, 1} {
		t.Fatalf("FactoryMAC(nil) = %x, %v", a, err)
	}
	if a, err := FactoryMAC([]byte{2, 9, 8, 7, 6, 5}); err != nil || a != [6]byte{2, 9, 8, 7, 6, 5} {
		t.Fatalf("FactoryMAC(02:09:08:07:06:05) = %x, %v", a, err)
	}
	for _, bad := range [][]byte{{1, 2, 3, 4, 5, 6}, {2, 0, 0}, {}} {
		if _, err := FactoryMAC(bad); err == nil {
			t.Errorf("FactoryMAC(%x) accepted", bad)
		}
	}
	for _, c := range []struct{ in, want int }{{0, 1}, {1, 1}, {7, 7}, {31, 31}} {
		if got, err := PHYAddr(c.in); err != nil || got != c.want {
			t.Errorf("PHYAddr(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []int{-1, 32} {
		if _, err := PHYAddr(bad); err == nil {
			t.Errorf("PHYAddr(%d) accepted", bad)
		}
	}
}

// TestWriteRegOutOfReset: a write during the model's reset is a fault that
// names the register and rings nothing; after it, the write runs and its
// kick reaches pend and the timer. Unimplemented names the register too.
func TestWriteRegOutOfReset(t *testing.T) {
	faults := &Faults{}
	sched := NewSched(SchedConfig{Sync: true})
	t.Cleanup(sched.Close)
	m := &baseModel{}
	m.InitBase(ModelParts{Lock: &m.mu, Wire: &m.wire, Faults: faults, Sched: sched,
		RegName: func(off uint32) string { return "TAIL" }})
	steps := 0
	tm := sched.NewTimer(func() { steps++ })
	var pend uint32
	inReset, wrote := true, 0
	write := func() uint32 { wrote++; return 2 }
	m.WriteRegOutOfReset(&pend, tm, 0x18, 5, func() bool { return inReset }, "the test's reset", write)
	f := faults.List()
	if wrote != 0 || pend != 0 || steps != 0 || len(f) != 1 || f[0].Where != "TAIL" || f[0].Addr != 0x18 ||
		f[0].Detail != "write of 0x00000005 while the test's reset" {
		t.Fatalf("in reset: wrote %d, pend %d, steps %d, faults %+v", wrote, pend, steps, f)
	}
	inReset = false
	m.WriteRegOutOfReset(&pend, tm, 0x18, 5, func() bool { return inReset }, "the test's reset", write)
	if wrote != 1 || pend != 2 || steps != 1 || len(faults.List()) != 1 {
		t.Fatalf("out of reset: wrote %d, pend %d, steps %d, faults %+v", wrote, pend, steps, faults.List())
	}
	m.Unimplemented("read32", 0x20)
	if f := faults.List(); len(f) != 2 || f[1].Op != "read32" || f[1].Where != "TAIL" || !strings.Contains(f[1].Detail, "not implemented") {
		t.Fatalf("Unimplemented: %+v", f)
	}
}

// TestModelBaseSetPacedLineRate: SetPaced(true) paces the wire at
// ModelParts.LineRate when the model gives one (igbsim's SerDes link is not
// its PHY's), at the PHY's link otherwise.
func TestModelBaseSetPacedLineRate(t *testing.T) {
	m := &baseModel{}
	faults := &Faults{}
	sched := NewSched(SchedConfig{Sync: true})
	t.Cleanup(sched.Close)
	m.InitBase(ModelParts{Lock: &m.mu, Wire: &m.wire, Inject: func([]byte) bool { return true },
		PHY: NewPHY(PHYConfig{Faults: faults}), Faults: faults, Sched: sched,
		LineRate: func() nic.LinkState { return nic.LinkState{Up: true, SpeedMbps: 100} }})
	m.SetPaced(true)
	if mbps, full := m.wire.LineRate(); mbps != 100 || full {
		t.Fatalf("paced at %d Mb/s full=%v, want LineRate's 100 half", mbps, full)
	}
	phyOnly := newBaseModel(t)
	phyOnly.SetPaced(true)
	if mbps, _ := phyOnly.wire.LineRate(); mbps == 100 {
		t.Fatalf("a model without LineRate paced at 100 Mb/s; want its PHY's link")
	}
}
