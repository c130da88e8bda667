package fecsim

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// Device is the model as a platform device (devicetree node
// ethernet@30be0000 on the i.MX8MP): one 16 KiB register window taking 32-bit
// accesses only, DMA memory below 4 GiB, up to four interrupt lines, and no PCI
// configuration space. Safe for concurrent use.
//
// Info, DMA, the (absent) configuration space, bus mastering (always on) and the
// interrupt lines (4 on the i.MX8MP, GIC SPI 118-121; 1 on the i.MX6, in line
// order through EnableMSIX) are sim.PlatformDevice's; the register window,
// Reset and Close are the model's own.
type Device struct {
	*sim.PlatformDevice
	m    *Model // immutable
	regs regWindow
}

// Regs implements nic.Device: window 0 is the ENET's registers.
func (d *Device) Regs(n int) (nic.Regs, error) {
	if d.m.isClosed() {
		return nil, fmt.Errorf("fecsim: register window %d: %w", n, nic.ErrClosed)
	}
	if n != 0 {
		return nil, fmt.Errorf("fecsim: the ENET has one register window (0), not %d: %w", n, nic.ErrNotSupported)
	}
	d.regs.m = d.m
	return &d.regs, nil
}

// Reset implements nic.Device: a reset of the block through the SoC's reset
// controller, with the effect of ECR.RESET.
func (d *Device) Reset() error {
	if d.m.isClosed() {
		return fmt.Errorf("fecsim: reset: %w", nic.ErrClosed)
	}
	d.m.Reset()
	return nil
}

// Close implements nic.Device (it closes the model).
func (d *Device) Close() error { return d.m.Close() }

// Faults is the model's fault log.
func (d *Device) Faults() *sim.Faults { return d.m.faults }

var _ nic.Device = (*Device)(nil)

// regWindow is the register window. Besides nic.Regs it has the narrower and
// wider accessors a CPU could issue; the ENET answers those with a bus error,
// so the model records a fault and ignores them (reads return all ones).
type regWindow struct{ m *Model }

func (w *regWindow) check(op string, off uint32, size uint32) bool {
	m := w.m
	switch {
	case m.isClosed():
		m.faults.Add(op, regName(off), uint64(off), "register access after Close")
	case size != 4:
		m.faults.Add(op, regName(off), uint64(off), "%d-byte register access: the ENET takes 32-bit accesses only (bus error)", size)
	case off&3 != 0:
		m.faults.Add(op, regName(off), uint64(off), "unaligned 32-bit register access")
	case off >= WindowSize:
		m.faults.Add(op, "", uint64(off), "outside the 0x%x-byte register window", WindowSize)
	case m.busError(op, off):
	default:
		return true
	}
	return false
}

// Read32 implements nic.Regs.
func (w *regWindow) Read32(off uint32) uint32 {
	if !w.check("read32", off, 4) {
		return 0xFFFFFFFF
	}
	return w.m.Read32(off)
}

// Write32 implements nic.Regs.
func (w *regWindow) Write32(off, val uint32) {
	if w.check("write32", off, 4) {
		w.m.Write32(off, val)
	}
}

// Read8, Read16, Read64 and their writes are refused (faults).
func (w *regWindow) Read8(off uint32) uint8 {
	w.check("read8", off, 1)
	return 0xFF
}

func (w *regWindow) Read16(off uint32) uint16 {
	w.check("read16", off, 2)
	return 0xFFFF
}

func (w *regWindow) Read64(off uint32) uint64 {
	w.check("read64", off, 8)
	return ^uint64(0)
}

func (w *regWindow) Write8(off uint32, _ uint8)   { w.check("write8", off, 1) }
func (w *regWindow) Write16(off uint32, _ uint16) { w.check("write16", off, 2) }
func (w *regWindow) Write64(off uint32, _ uint64) { w.check("write64", off, 8) }

func (m *Model) isClosed() bool { return m.closed.Load() }
