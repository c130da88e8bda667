package igb_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// stubDevice is a nic.Device whose registers are a function: enough to drive
// Open into its early failures without a model.
type stubDevice struct {
	vendor, device uint16
	read           func(off uint32) uint32
	writes         int
}

func (d *stubDevice) Info() nic.DeviceInfo {
	return nic.DeviceInfo{Name: "stub", Bus: "sim", Vendor: d.vendor, Device: d.device}
}
func (d *stubDevice) Regs(n int) (nic.Regs, error)                { return stubRegs{d}, nil }
func (d *stubDevice) DMA() dma.Allocator                          { return &nictest.FarAllocator{} }
func (d *stubDevice) ReadConfig(off, size int) (uint32, error)    { return 0, nic.ErrNotSupported }
func (d *stubDevice) WriteConfig(off, size int, val uint32) error { return nic.ErrNotSupported }
func (d *stubDevice) EnableBusMaster() error                      { return nil }
func (d *stubDevice) EnableMSIX(n int) ([]nic.IRQ, error)         { return nil, nic.ErrNotSupported }
func (d *stubDevice) DisableIRQs() error                          { return nil }
func (d *stubDevice) Reset() error                                { return nil }
func (d *stubDevice) Close() error                                { return nil }

type stubRegs struct{ d *stubDevice }

func (r stubRegs) Read32(off uint32) uint32 { return r.d.read(off) }
func (r stubRegs) Write32(off, val uint32)  { r.d.writes++ }

func TestOpenAllOnesIsNoDevice(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x10C9, read: func(uint32) uint32 { return 0xFFFFFFFF }}
	_, err := igb.Open(d, igb.Config{})
	if !errors.Is(err, nic.ErrNoDevice) {
		t.Fatalf("Open on a device reading all ones: %v, want ErrNoDevice", err)
	}
	if d.writes != 0 {
		t.Fatalf("%d register writes to a device that is not there", d.writes)
	}
}

func TestOpenRefusesOtherDevices(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x100E, read: func(uint32) uint32 { return 0 }}
	if _, err := igb.Open(d, igb.Config{}); !errors.Is(err, nic.ErrNotSupported) {
		t.Fatalf("Open on an e1000: %v, want ErrNotSupported", err)
	}
}

func TestConfigValidation(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x1539, read: func(uint32) uint32 { return 0 }} // I211: 2 queues
	for _, c := range []struct {
		cfg  igb.Config
		want string
	}{
		{igb.Config{Queues: 3}, "queues"},
		{igb.Config{Queues: -1}, "queues"},
		{igb.Config{RxRingSize: 12}, "multiple of 8"},
		{igb.Config{TxRingSize: 8192}, "multiple of 8"},
		{igb.Config{FrameSize: 2048}, "frame size"},
		{igb.Config{RSSKey: make([]byte, 8)}, "RSS key"},
		{igb.Config{RxRingSize: 64, PoolSize: 32}, "pool"},
	} {
		_, err := igb.Open(d, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %q", c.cfg, err, c.want)
		}
	}
	if d.writes != 0 {
		t.Fatalf("bad configurations wrote %d registers", d.writes)
	}
}

// TestResetTimesOut: a device that never leaves reset (CTRL.RST stays set)
// fails Open with ErrTimeout within the deadline, instead of hanging.
func TestResetTimesOut(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x10C9, read: func(off uint32) uint32 {
		if off == 0 { // CTRL
			return 1 << 26
		}
		return 0
	}}
	start := time.Now()
	_, err := igb.Open(d, igb.Config{})
	if !errors.Is(err, nic.ErrTimeout) || !strings.Contains(err.Error(), "CTRL.RST") {
		t.Fatalf("Open: %v, want a reset timeout", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %v", el)
	}
}

// TestNoNVMIsAWarning: like QEMU's igb, a device that never sets EECD.AUTO_RD
// still opens (as with Linux), with a warning; here it then fails on the
// missing MAC address, which is the real problem.
func TestNoNVMIsAWarning(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x10C9, read: func(off uint32) uint32 { return 0 }}
	_, err := igb.Open(d, igb.Config{})
	if err == nil || !strings.Contains(err.Error(), "MAC address") {
		t.Fatalf("Open: %v, want the missing MAC address reported", err)
	}
}

// TestMDICErrorReported: a PHY access the device answers with MDIC.ERROR fails
// Open with ErrPHY, not with garbage link state.
func TestMDICErrorReported(t *testing.T) {
	d := &stubDevice{vendor: 0x8086, device: 0x10C9}
	d.read = func(off uint32) uint32 {
		switch off {
		case 0x10: // EECD: auto-read done
			return 1 << 9
		case 0x5400: // RAL0
			return 0x12005452
		case 0x5404: // RAH0: AV
			return 1<<31 | 0x5634
		case 0x20: // MDIC: ready, error
			return 1<<28 | 1<<30
		}
		return 0
	}
	_, err := igb.Open(d, igb.Config{})
	if !errors.Is(err, igb.ErrPHY) {
		t.Fatalf("Open: %v, want ErrPHY", err)
	}
}
