package sim

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Model is what a device model gives the Device base: its BAR0 registers and
// its function-level reset.
type Model interface {
	// Read32 and Write32 access the register at a 4-byte-aligned offset inside
	// the window (the Device base has checked both).
	Read32(off uint32) uint32
	Write32(off uint32, val uint32)
	// Reset is a function-level reset (nic.Device.Reset).
	Reset()
}

// DeviceConfig describes the PCI function a Device presents.
type DeviceConfig struct {
	Name      string // nic.DeviceInfo.Name; "sim" when empty
	Bus       string // nic.DeviceInfo.Bus; "sim" when empty ("pci" to look like a PCI function)
	Vendor    uint16
	Device    uint16
	SubVendor uint16
	SubDevice uint16
	Revision  uint8
	Class     uint32 // 24-bit class code; 0x020000 (Ethernet) when 0
	// BARSize is the size of register window 0 in bytes (a multiple of 4).
	BARSize uint32
	// MSIXVectors is how many MSI-X vectors the function has (at least 1).
	MSIXVectors int
	// Gate, when set, is asked before every register access whether the SoC
	// completes it (Board.Access): an error is a bus-error fault and the
	// access fails (a read returns all ones, a write is lost).
	Gate func() error
}

// PCI configuration space offsets and command bits (PCI Local Bus 3.0, 6.2).
const (
	PCIVendorID  = 0x00
	PCIDeviceID  = 0x02
	PCICommand   = 0x04
	PCIStatus    = 0x06
	PCIRevision  = 0x08
	PCIClass     = 0x09 // 3 bytes: prog-if, subclass, class
	PCISubVendor = 0x2C
	PCISubDevice = 0x2E

	PCICommandIO          uint16 = 1 << 0
	PCICommandMemory      uint16 = 1 << 1
	PCICommandBusMaster   uint16 = 1 << 2
	PCICommandINTxDisable uint16 = 1 << 10

	pciCommandWritable = PCICommandIO | PCICommandMemory | PCICommandBusMaster | PCICommandINTxDisable
	pciConfigSize      = 256
)

// Device is the nic.Device side of a model: register window 0 dispatching to the
// Model, the model's Memory, a PCI configuration space whose bus-master bit gates
// DMA, and MSI-X vectors the model signals. Safe for concurrent use.
type Device struct {
	cfg    DeviceConfig // immutable
	model  Model        // immutable
	mem    *Memory      // immutable
	faults *Faults      // immutable (the memory's log)
	regs   regWindow    // immutable

	closed atomic.Bool
	memOn  atomic.Bool            // PCI command Memory Space bit
	irqs   atomic.Pointer[[]*IRQ] // enabled vectors; nil when none
	lost   atomic.Uint64          // signals on vectors not enabled

	inj          atomic.Pointer[Injector] // faults (devfault.go); nil: none
	lostInjected atomic.Uint64            // signals the injector lost

	mu     sync.Mutex
	config [pciConfigSize]byte // guarded by mu
}

// NewDevice builds the Device base for model. DMA is shut (bus mastering off)
// until EnableBusMaster or a config write sets the command bit, as vfio-pci
// leaves a device; memory decoding is on, as after vfio-pci's enable.
func NewDevice(cfg DeviceConfig, mem *Memory, model Model) *Device {
	if cfg.Name == "" {
		cfg.Name = "sim"
	}
	if cfg.Bus == "" {
		cfg.Bus = "sim"
	}
	if cfg.Class == 0 {
		cfg.Class = 0x020000
	}
	if cfg.MSIXVectors < 1 {
		cfg.MSIXVectors = 1
	}
	d := &Device{cfg: cfg, model: model, mem: mem, faults: mem.Faults()}
	d.regs = regWindow{d: d}
	le := binary.LittleEndian
	le.PutUint16(d.config[PCIVendorID:], cfg.Vendor)
	le.PutUint16(d.config[PCIDeviceID:], cfg.Device)
	le.PutUint16(d.config[PCICommand:], PCICommandMemory)
	d.config[PCIRevision] = cfg.Revision
	d.config[PCIClass] = byte(cfg.Class)
	d.config[PCIClass+1] = byte(cfg.Class >> 8)
	d.config[PCIClass+2] = byte(cfg.Class >> 16)
	le.PutUint16(d.config[PCISubVendor:], cfg.SubVendor)
	le.PutUint16(d.config[PCISubDevice:], cfg.SubDevice)
	d.memOn.Store(true)
	mem.SetDMAEnabled(false)
	return d
}

// Info implements nic.Device.
func (d *Device) Info() nic.DeviceInfo {
	return nic.DeviceInfo{
		Name: d.cfg.Name, Bus: d.cfg.Bus, Vendor: d.cfg.Vendor, Device: d.cfg.Device,
		SubVendor: d.cfg.SubVendor, SubDevice: d.cfg.SubDevice, Revision: d.cfg.Revision,
	}
}

// Faults is the log shared by the device, its memory and its model.
func (d *Device) Faults() *Faults { return d.faults }

// Memory is the model's DMA memory (the device side of DMA()).
func (d *Device) Memory() *Memory { return d.mem }

// Regs implements nic.Device: window 0 is the model's BAR0.
func (d *Device) Regs(n int) (nic.Regs, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("sim: %s: register window %d: %w", d.cfg.Name, n, nic.ErrClosed)
	}
	if n != 0 {
		return nil, fmt.Errorf("sim: %s has register window 0 only, not %d: %w", d.cfg.Name, n, nic.ErrNotSupported)
	}
	return &d.regs, nil
}

// DMA implements nic.Device.
func (d *Device) DMA() dma.Allocator { return d.mem }

// BusMaster reports whether the PCI command register allows DMA.
func (d *Device) BusMaster() bool { return d.mem.DMAEnabled() }

// ReadConfig implements nic.Device.
func (d *Device) ReadConfig(off, size int) (uint32, error) {
	if err := d.configRange(off, size); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var v uint32
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint32(d.config[off+i])
	}
	return v, nil
}

// WriteConfig implements nic.Device. Only the command register's IO, Memory,
// Bus Master and INTx Disable bits are writable; writes elsewhere are ignored,
// as read-only fields ignore them on hardware.
func (d *Device) WriteConfig(off, size int, val uint32) error {
	if err := d.configRange(off, size); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 0; i < size; i++ {
		o := off + i
		if o != PCICommand && o != PCICommand+1 {
			continue
		}
		b := byte(val >> (8 * i))
		mask := byte(pciCommandWritable >> (8 * (o - PCICommand)))
		d.config[o] = d.config[o]&^mask | b&mask
	}
	d.applyCommandLocked()
	return nil
}

func (d *Device) configRange(off, size int) error {
	if d.closed.Load() {
		return fmt.Errorf("sim: %s: config access: %w", d.cfg.Name, nic.ErrClosed)
	}
	if size != 1 && size != 2 && size != 4 {
		return fmt.Errorf("sim: config access of size %d: want 1, 2 or 4", size)
	}
	if off < 0 || off+size > pciConfigSize || off%size != 0 {
		return fmt.Errorf("sim: config access of %d bytes at 0x%x: outside the %d-byte space or unaligned", size, off, pciConfigSize)
	}
	return nil
}

func (d *Device) applyCommandLocked() {
	cmd := binary.LittleEndian.Uint16(d.config[PCICommand:])
	d.mem.SetDMAEnabled(cmd&PCICommandBusMaster != 0)
	d.memOn.Store(cmd&PCICommandMemory != 0)
}

// EnableBusMaster implements nic.Device.
func (d *Device) EnableBusMaster() error {
	if d.closed.Load() {
		return fmt.Errorf("sim: %s: enable bus master: %w", d.cfg.Name, nic.ErrClosed)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cmd := binary.LittleEndian.Uint16(d.config[PCICommand:]) | PCICommandBusMaster
	binary.LittleEndian.PutUint16(d.config[PCICommand:], cmd)
	d.applyCommandLocked()
	return nil
}

// EnableMSIX implements nic.Device: min(n, MSIXVectors) vectors.
func (d *Device) EnableMSIX(n int) ([]nic.IRQ, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("sim: %s: enable MSI-X: %w", d.cfg.Name, nic.ErrClosed)
	}
	if n < 1 {
		return nil, fmt.Errorf("sim: %s: enable %d MSI-X vectors: want at least 1", d.cfg.Name, n)
	}
	n = min(n, d.cfg.MSIXVectors)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.teardownLocked()
	qs := make([]*IRQ, n)
	out := make([]nic.IRQ, n)
	for i := range qs {
		qs[i] = newIRQ(i)
		out[i] = qs[i]
	}
	d.irqs.Store(&qs)
	return out, nil
}

// DisableIRQs implements nic.Device. Waiters on the old vectors return ErrClosed.
func (d *Device) DisableIRQs() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.teardownLocked()
	return nil
}

func (d *Device) teardownLocked() {
	if p := d.irqs.Swap(nil); p != nil {
		for _, q := range *p {
			close(q.done)
		}
	}
}

// Signal raises MSI-X vector v. It reports false (and counts the loss) when the
// vector is not enabled: the model decides whether that is a fault. It never
// blocks and never allocates.
func (d *Device) Signal(v int) bool {
	if d.irqLost() { // devfault.go: sent, never delivered
		return true
	}
	p := d.irqs.Load()
	if p == nil || v < 0 || v >= len(*p) {
		d.lost.Add(1)
		return false
	}
	(*p)[v].signal()
	return true
}

// VectorsEnabled is the number of MSI-X vectors set up by EnableMSIX (0 if none).
func (d *Device) VectorsEnabled() int {
	if p := d.irqs.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// LostSignals counts interrupts raised on vectors that were not enabled.
func (d *Device) LostSignals() uint64 { return d.lost.Load() }

// Reset implements nic.Device: the model's function-level reset. The PCI command
// register survives, as vfio-pci saves and restores config space around a reset.
func (d *Device) Reset() error {
	if d.closed.Load() {
		return fmt.Errorf("sim: %s: reset: %w", d.cfg.Name, nic.ErrClosed)
	}
	d.model.Reset()
	return nil
}

// Close implements nic.Device: vectors are torn down, memory unmapped, and later
// register accesses fault.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.mu.Lock()
	d.teardownLocked()
	d.mu.Unlock()
	d.mem.SetDMAEnabled(false)
	return d.mem.Close()
}

// regWindow is register window 0: it checks each access and calls the model.
type regWindow struct{ d *Device }

func (w *regWindow) check(op string, off uint32) bool {
	d := w.d
	switch {
	case d.closed.Load():
		d.faults.Add(op, "", uint64(off), "register access after Close")
	case off&3 != 0:
		d.faults.Add(op, "", uint64(off), "unaligned 32-bit register access")
	case off >= d.cfg.BARSize || d.cfg.BARSize-off < 4:
		d.faults.Add(op, "", uint64(off), "outside the 0x%x-byte register window", d.cfg.BARSize)
	case !d.memOn.Load():
		d.faults.Add(op, "", uint64(off), "register access with PCI memory decoding disabled (master abort)")
	case d.cfg.Gate != nil && d.gateRefuses(op, off):
	default:
		return true
	}
	return false
}

// gateRefuses asks DeviceConfig.Gate, recording a refusal as a bus error.
func (d *Device) gateRefuses(op string, off uint32) bool {
	if err := d.cfg.Gate(); err != nil {
		d.faults.Add(OpBusError, "", uint64(off), "%s: %v", op, err)
		return true
	}
	return false
}

// Read32 implements nic.Regs. With the cache model each access is a moment
// (see cache.go) before the model sees it. A refused read returns all ones, as a master abort.
func (w *regWindow) Read32(off uint32) uint32 {
	if w.d.Removed() { // devfault.go: the read completes with all ones
		return 0xFFFFFFFF
	}
	if !w.check("read32", off) {
		return 0xFFFFFFFF
	}
	w.d.mem.cpuMoment()
	return w.d.model.Read32(off)
}

// Write32 implements nic.Regs.
func (w *regWindow) Write32(off uint32, val uint32) {
	if w.d.Removed() {
		return // devfault.go: nothing receives the write
	}
	if w.check("write32", off) {
		w.d.mem.cpuMoment()
		w.d.model.Write32(off, val)
	}
}

var _ nic.Device = (*Device)(nil)
