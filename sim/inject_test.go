package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseFaultSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FaultSpec
	}{
		{"tx-hang@2s", FaultSpec{FaultTxHang, 2 * time.Second, 0}},
		{"link-down@500ms:1s", FaultSpec{FaultLinkDown, 500 * time.Millisecond, time.Second}},
		{"desc-error@0s", FaultSpec{FaultDescError, 0, 0}},
	} {
		got, err := ParseFaultSpec(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if got.String() != strings.Replace(c.in, "0s", "0s", 1) && c.in != "desc-error@0s" {
			t.Errorf("%q prints as %q", c.in, got.String())
		}
	}
	for _, bad := range []string{"tx-hang", "hang@1s", "tx-hang@x", "tx-hang@-1s", "tx-hang@1s:0s", "removal@1s:2s", "@1s"} {
		if _, err := ParseFaultSpec(bad); !errors.Is(err, ErrFaultSpec) {
			t.Errorf("%q: %v, want ErrFaultSpec", bad, err)
		}
	}
	if len(FaultKinds()) != 9 {
		t.Fatalf("%d kinds", len(FaultKinds()))
	}
	for _, k := range FaultKinds() {
		if k.Help() == "" || strings.HasPrefix(k.String(), "FaultKind(") {
			t.Errorf("kind %d has no name or help", k)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A state fault is on from AFTER for FOR (or until a device reset); a
// one-shot fault happens once, at the access that takes it.
func TestInjectorStateAndOneShot(t *testing.T) {
	var in Injector
	in.Schedule(FaultSpec{Kind: FaultTxHang, After: 5 * time.Millisecond},
		FaultSpec{Kind: FaultRxStall, After: time.Millisecond, For: 20 * time.Millisecond},
		FaultSpec{Kind: FaultDescError, After: time.Millisecond})
	if in.On(FaultTxHang) || in.Take(FaultDescError) {
		t.Fatal("faults before Start")
	}
	in.Start()
	defer in.Close()
	waitFor(t, "tx-hang", func() bool { return in.On(FaultTxHang) })
	waitFor(t, "desc-error", func() bool { return in.Take(FaultDescError) })
	if in.Take(FaultDescError) {
		t.Fatal("a one-shot fault taken twice")
	}
	waitFor(t, "rx-stall to end", func() bool { return !in.On(FaultRxStall) })
	if !in.On(FaultTxHang) {
		t.Fatal("tx-hang ended by itself")
	}
	in.DeviceReset()
	if in.On(FaultTxHang) {
		t.Fatal("a reset did not end tx-hang")
	}
	ev := in.Events()
	if len(ev) != 3 {
		t.Fatalf("%d events", len(ev))
	}
	for _, e := range ev {
		if e.End.IsZero() || e.End.Before(e.Start) {
			t.Errorf("%v: start %v end %v", e.Spec, e.Start, e.End)
		}
		if e.Spec.Kind == FaultTxHang && !e.Reset {
			t.Errorf("tx-hang not marked ended by a reset")
		}
	}
	var nilIn *Injector
	if nilIn.On(FaultTxHang) || nilIn.Take(FaultBusError) || nilIn.Scheduled() {
		t.Fatal("a nil injector injects")
	}
}

// The device-level faults: removal reads all-ones, a lost interrupt is not
// delivered, a storm fires every vector, link-down and phy-dead act on the
// PHY and come back.
func TestDeviceFaults(t *testing.T) {
	mem := NewMemory(MemoryConfig{}, &Faults{})
	m := &countModel{}
	d := NewDevice(DeviceConfig{BARSize: 4096, MSIXVectors: 2}, mem, m)
	phy := NewPHY(PHYConfig{Addr: 1, AutonegDelay: time.Millisecond})
	phy.Write(0, BMCRANEnable|BMCRANRestart)
	waitFor(t, "link", phy.LinkUp)
	var in Injector
	d.SetInjector(&in, phy)
	irqs, err := d.EnableMSIX(2)
	if err != nil {
		t.Fatal(err)
	}
	in.Schedule(FaultSpec{Kind: FaultIRQLost, After: 0},
		FaultSpec{Kind: FaultLinkDown, After: 0, For: 10 * time.Millisecond},
		FaultSpec{Kind: FaultIRQStorm, After: 30 * time.Millisecond, For: 20 * time.Millisecond},
		FaultSpec{Kind: FaultPHYDead, After: 60 * time.Millisecond, For: 10 * time.Millisecond},
		FaultSpec{Kind: FaultRemoval, After: 90 * time.Millisecond})
	regs, _ := d.Regs(0)
	if regs.Read32(0) == 0xFFFFFFFF {
		t.Fatal("all-ones before removal")
	}
	in.Start()
	defer in.Close()
	waitFor(t, "link down", func() bool { return !phy.LinkUp() })
	waitFor(t, "the lost interrupt", func() bool { d.Signal(0); return d.LostInjected() == 1 })
	waitFor(t, "link back", phy.LinkUp)
	waitFor(t, "a storm", func() bool { return irqs[1].(*IRQ).Fired() > 50 })
	waitFor(t, "a dead PHY", func() bool { return phy.Read(2) == 0xFFFF && !phy.LinkUp() })
	waitFor(t, "the PHY back", func() bool { return phy.Read(2) != 0xFFFF })
	waitFor(t, "removal", func() bool { return regs.Read32(0) == 0xFFFFFFFF })
	regs.Write32(0, 1)
	if m.writes != 0 || !d.Removed() {
		t.Fatalf("a removed device took %d writes (removed %v)", m.writes, d.Removed())
	}
}

type countModel struct{ writes int }

func (m *countModel) Read32(off uint32) uint32       { return 0 }
func (m *countModel) Write32(off uint32, val uint32) { m.writes++ }
func (m *countModel) Reset()                         {}
