package vfio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// Tests against a real device through /dev/vfio. They run when XNIC_VFIO_BDF
// names a device bound to vfio-pci (the VM harness sets it inside a QEMU guest
// with intel-iommu and QEMU's igb), and skip otherwise.

const realEnv = "XNIC_VFIO_BDF"

func realBDF(t *testing.T) string {
	t.Helper()
	bdf := os.Getenv(realEnv)
	if bdf == "" {
		t.Skipf("%s not set: real-VFIO tests need a device bound to vfio-pci (run them in the VM harness, or `xnic bind BDF` and set %s=BDF)", realEnv, realEnv)
	}
	return bdf
}

func openReal(t *testing.T) *Device {
	t.Helper()
	d, err := Open(realBDF(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestRealInfoMatchesSysfs(t *testing.T) {
	d := openReal(t)
	pd, err := Default.Device(realBDF(t))
	if err != nil {
		t.Fatal(err)
	}
	info := d.Info()
	if info.Name != pd.Addr || info.Bus != "pci" || info.Vendor != pd.Vendor || info.Device != pd.Device ||
		info.SubVendor != pd.SubVendor || info.SubDevice != pd.SubDevice || info.Revision != pd.Revision {
		t.Fatalf("Info %+v, sysfs %+v", info, pd)
	}
	v, err := d.ReadConfig(0, 2)
	if err != nil || uint16(v) != pd.Vendor {
		t.Fatalf("config vendor %#x (%v), sysfs %#x", v, err, pd.Vendor)
	}
	dv, err := d.ReadConfig(0, 4)
	if err != nil || dv != uint32(pd.Device)<<16|uint32(pd.Vendor) {
		t.Fatalf("config dword 0 %#x (%v)", dv, err)
	}
	if d.Group() != pd.IOMMUGroup {
		t.Fatalf("group %d, sysfs %d", d.Group(), pd.IOMMUGroup)
	}
	if err := d.CheckAlive(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %04x:%04x group %d", info.Name, info.Vendor, info.Device, d.Group())
}

func TestRealBAR0(t *testing.T) {
	d := openReal(t)
	b, err := d.BAR(0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() == 0 || b.MappedBytes() == 0 {
		t.Fatalf("BAR0 of %#x bytes, %#x mapped", b.Len(), b.MappedBytes())
	}
	live := false
	for off := uint32(0); off < 64; off += 4 {
		if b.Read32(off) != 0xFFFFFFFF {
			live = true
		}
	}
	if !live {
		t.Fatal("the first 16 registers of BAR0 all read as ones")
	}
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	if v := b.Read32(uint32(b.Len())); v != 0xFFFFFFFF || !errors.Is(b.Err(), ErrOutOfRange) {
		t.Fatalf("read past the end: %#x, %v", v, b.Err())
	}
	if info := d.Info(); info.Vendor == 0x8086 && info.Device == 0x10c9 {
		// 82576 (QEMU's igb): a store through the mapping reaches the device.
		// RAL(0) at 0x5400 (e1000_regs.h) is a plain read/write register;
		// write a pattern, read it back, restore it.
		const ral0 = 0x5400
		old := b.Read32(ral0)
		b.Write32(ral0, 0x5A5AA5A5)
		if got := b.Read32(ral0); got != 0x5A5AA5A5 {
			t.Errorf("RAL0 read back %#08x after writing 0x5a5aa5a5", got)
		}
		b.Write32(ral0, old)
		if got := b.Read32(ral0); got != old {
			t.Errorf("RAL0 not restored: %#08x, want %#08x", got, old)
		}
		t.Logf("STATUS %#08x CTRL %#08x RAL0 %#08x", b.Read32(0x8), b.Read32(0x0), old)
	}
	if err := d.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	cmd, err := d.ReadConfig(4, 2)
	if err != nil || cmd&pciCommandMaster == 0 {
		t.Fatalf("command %#x %v", cmd, err)
	}
}

func TestRealDMA(t *testing.T) {
	d := openReal(t)
	a := d.DMA()
	r, err := a.Alloc(64<<10, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if r.IOVA == 0 || r.IOVA%4096 != 0 || r.Len() != 64<<10 {
		t.Fatalf("region at %#x of %d", r.IOVA, r.Len())
	}
	r.CPU[0], r.CPU[r.Len()-1] = 1, 2
	if err := a.Check(r.IOVA, r.Len()); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(r.IOVA+uint64(r.Len()), 1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("past the end: %v", err)
	}
	if err := a.Check(r.IOVA-1, 2); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("before the start: %v", err)
	}
	p, err := dma.NewPool(a, 256, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(p.Buf(255).IOVA, dma.DefaultFrameSize); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(r.IOVA, 1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("after free: %v", err)
	}
	t.Logf("IOVA ranges free: %v, limit %#x", d.Allocator().IOVA().FreeRanges(), a.Limit())
}

func TestRealMSIX(t *testing.T) {
	d := openReal(t)
	info, err := d.IRQInfo(IRQMSIX)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	irqs, err := d.EnableMSIX(4)
	if err != nil {
		t.Fatal(err)
	}
	kind, n := d.IRQKind()
	if info.Count > 0 {
		if kind != IRQMSIX || n != min(4, info.Count) || len(irqs) != n {
			t.Fatalf("device has %d MSI-X vectors; got %d of %v", info.Count, n, kind)
		}
	} else if len(irqs) != 1 {
		t.Fatalf("fallback to %v gave %d vectors", kind, len(irqs))
	}
	for i, q := range irqs {
		if q.Fd() < 0 {
			t.Fatalf("vector %d has no fd", i)
		}
	}
	// Loopback: the kernel signals the eventfd as the device would.
	if err := d.TriggerIRQ(len(irqs) - 1); err != nil {
		t.Fatal(err)
	}
	if fired, err := irqs[len(irqs)-1].Wait(2 * time.Second); !fired || err != nil {
		t.Fatalf("triggered vector did not fire: %v %v", fired, err)
	}
	if fired, _ := irqs[0].Wait(0); fired && len(irqs) > 1 {
		t.Fatal("an untriggered vector fired")
	}
	if err := d.DisableIRQs(); err != nil {
		t.Fatal(err)
	}
	if irqs[0].Fd() != -1 {
		t.Fatal("eventfd still open after DisableIRQs")
	}
	// Enabling again works after a disable.
	if irqs, err = d.EnableMSIX(1); err != nil || len(irqs) != 1 {
		t.Fatalf("re-enable: %v", err)
	}
	t.Logf("%v: %d vectors offered", kind, info.Count)
}

func TestRealReset(t *testing.T) {
	d := openReal(t)
	err := d.Reset()
	if d.devInfo.Flags&deviceFlagReset == 0 {
		t.Skipf("device offers no VFIO reset: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckAlive(); err != nil {
		t.Fatal(err)
	}
}

func TestRealGroupBusy(t *testing.T) {
	d := openReal(t)
	_ = d
	d2, err := Open(realBDF(t))
	if err == nil {
		d2.Close()
		t.Fatal("a second Open of an open group succeeded")
	}
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second Open: %v, want ErrBusy", err)
	}
}

func TestRealReopenLeaksNothing(t *testing.T) {
	bdf := realBDF(t)
	cycle := func() {
		d, err := Open(bdf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Regs(0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.DMA().Alloc(1<<20, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableMSIX(2); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	before := countFDs(t)
	for range 5 {
		cycle()
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d fds before, %d after 5 open/close cycles", before, after)
	}
	// And the device still works after all that.
	d := openReal(t)
	if err := d.CheckAlive(); err != nil {
		t.Fatal(err)
	}
}

func TestRealHugePages(t *testing.T) {
	bdf := realBDF(t)
	const huge = 2 << 20
	b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		t.Skipf("no free 2 MiB huge pages (boot with hugepages=N): %v %q", err, b)
	}
	d, err := Open(bdf, WithHugePages(huge))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := d.DMA().Alloc(100<<10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.IOVA%huge != 0 || d.Allocator().PageSize() != huge {
		t.Fatalf("huge-page region at %#x, page size %d", r.IOVA, d.Allocator().PageSize())
	}
	r.CPU[len(r.CPU)-1] = 1
	if err := d.DMA().Check(r.IOVA, r.Len()); err != nil {
		t.Fatal(err)
	}
	if err := d.DMA().Free(r); err != nil {
		t.Fatal(err)
	}
}

// TestRealUnbindRebind takes the device away from vfio-pci through the real
// sysfs and gives it back, checking Open's verdict in between. It always tries to
// leave the device bound to vfio-pci, for the tests that follow.
func TestRealUnbindRebind(t *testing.T) {
	bdf := realBDF(t)
	s := Default
	s.StateDir = t.TempDir()
	defer func() {
		if pd, err := s.Device(bdf); err == nil && pd.Driver != vfioDriver {
			if _, err := s.Bind(bdf); err != nil {
				t.Errorf("could not give the device back to vfio-pci: %v", err)
			}
		}
	}()
	before, err := s.Device(bdf)
	if err != nil || before.Driver != vfioDriver {
		t.Fatalf("device not on vfio-pci to begin with: %+v %v", before, err)
	}
	now, err := s.Unbind(bdf)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := s.Device(bdf)
	if pd.Driver != now || now == vfioDriver {
		t.Fatalf("after unbind: Unbind says %q, sysfs says %q", now, pd.Driver)
	}
	if ov, _ := os.ReadFile(filepath.Join(s.devDir(mustAddr(t, bdf)), "driver_override")); strings.TrimSpace(string(ov)) != "(null)" {
		t.Fatalf("driver_override after unbind: %q", ov)
	}
	if now == "" {
		_, err := Open(bdf)
		if !errors.Is(err, ErrNotBound) || !strings.Contains(err.Error(), "xnic bind") {
			t.Fatalf("Open of an unbound device: %v", err)
		}
	}
	prev, err := s.Bind(bdf)
	if err != nil {
		t.Fatal(err)
	}
	if prev != now {
		t.Fatalf("Bind says the device had %q, Unbind left %q", prev, now)
	}
	d, err := Open(bdf)
	if err != nil {
		t.Fatalf("Open after rebinding: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustAddr(t *testing.T, s string) Addr {
	t.Helper()
	a, err := ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRealEachIRQKind(t *testing.T) {
	d := openReal(t)
	if err := d.EnableBusMaster(); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, kind := range []IRQIndex{IRQMSIX, IRQMSI, IRQIntx} {
		info, err := d.IRQInfo(kind)
		if err != nil {
			t.Fatal(err)
		}
		if info.Count == 0 {
			if _, err := d.EnableIRQs(kind, 1); err == nil {
				t.Errorf("%v: not offered, yet enabled", kind)
			}
			continue
		}
		irqs, err := d.EnableIRQs(kind, 1)
		if err != nil {
			t.Fatalf("%v: %v", kind, err)
		}
		if k, n := d.IRQKind(); k != kind || n != 1 {
			t.Fatalf("%v: kind %v with %d vectors", kind, k, n)
		}
		// Twice: a vector keeps working after a Wait consumed it (and, for
		// INTx, after Wait's unmask).
		for i := range 2 {
			if err := d.TriggerIRQ(0); err != nil {
				t.Fatalf("%v: trigger %d: %v", kind, i, err)
			}
			if fired, err := irqs[0].Wait(2 * time.Second); !fired || err != nil {
				t.Fatalf("%v: firing %d not seen: %v %v", kind, i, fired, err)
			}
		}
		t.Logf("%v: %d vectors, automasked %v", kind, info.Count, info.Automasked)
		ran++
	}
	if ran == 0 {
		t.Fatal("the device offers no interrupts at all")
	}
	if _, err := d.EnableIRQs(IRQErr, 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("ERR index: %v", err)
	}
	if err := d.DisableIRQs(); err != nil {
		t.Fatal(err)
	}
}
