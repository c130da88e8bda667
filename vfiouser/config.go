package vfiouser

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/xnic-dev/xnic/sim"
)

// The configuration space the server presents (region 7, 4096 bytes, as a PCI
// Express function has: QEMU's vfio-pci treats a 256-byte space as conventional
// PCI and drops the Express capability. The capabilities sit in the first 256
// bytes as PCI Local Bus 3.0, 6.7 requires; the extended space from 0x100 is an
// empty extended capability list, a zero header (PCIe 3.0, 7.9.1), read-only). The type 0 header comes from the model's
// sim.Device (IDs, class, revision; the command register is the Device's own, so
// the Memory Space and Bus Master bits gate the model as today); the BARs, the
// interrupt pin and the capability list are the server's:
//
//	0x10 BAR0  32-bit memory, non-prefetchable: the model's registers
//	0x1C BAR3  32-bit memory, non-prefetchable: MSI-X table (offset 0) and PBA
//	           (offset 0x2000), as on the 82576 (datasheet 9.4, "MSI-X BAR")
//	0x3D interrupt pin INTA
//	0x40 PCI power management (PM 1.2, 3.2): D0/D3hot, no PME
//	0x50 MSI, 64-bit address, 1 vector (PCI 3.0, 6.8.1)
//	0x70 MSI-X, table and PBA in BAR3 (PCI 3.0, 6.8.2)
//	0xA0 PCI Express capability v2, endpoint, x1 2.5 GT/s (PCIe 3.0, 7.8)
//
// QEMU's vfio-pci emulates the BAR registers and the MSI and MSI-X capabilities
// itself (it programs interrupts through SET_IRQS); the server still gives them
// the read-only and read-write bits the specifications define, so a client that
// does not emulate them sees a plausible function.
const (
	cfgBAR0       = 0x10
	cfgBAR3       = 0x1C
	cfgCapPtr     = 0x34
	cfgIntLine    = 0x3C
	cfgIntPin     = 0x3D
	cfgPM         = 0x40
	cfgMSI        = 0x50
	cfgMSIX       = 0x70
	cfgPCIe       = 0xA0
	cfgPCIeLen    = 0x3C
	cfgStatusCaps = 1 << 4 // status register: capabilities list present
	configSize    = 4096

	capIDPM   = 0x01
	capIDMSI  = 0x05
	capIDPCIe = 0x10
	capIDMSIX = 0x11

	// MSIXBAR is the BAR holding the MSI-X table and PBA.
	MSIXBAR = 3
	// msixPBAOffset is the PBA's offset inside the MSI-X BAR.
	msixPBAOffset = 0x2000
	// msixBARSize is the size of the MSI-X BAR (16 KiB, as the 82576's).
	msixBARSize = 0x4000
	// maxMSIXVectors fits the table below the PBA (16 bytes per entry).
	maxMSIXVectors = msixPBAOffset / 16
)

// configSpace is the server's configuration space. Safe for concurrent use.
type configSpace struct {
	dev *sim.Device // immutable
	// onCommand runs after a write reached the command register; set once by
	// NewSession.
	onCommand func()
	bar0Size  uint32 // immutable: power of two, >= the model's window
	vectors   int    // immutable: MSI-X table size

	mu    sync.Mutex
	img   [configSize]byte // guarded by mu: everything but the command register
	wmask [configSize]byte // immutable after newConfigSpace: writable bits
}

func pow2(n uint32) uint32 {
	p := uint32(4096)
	for p < n {
		p <<= 1
	}
	return p
}

func newConfigSpace(dev *sim.Device) (*configSpace, error) {
	pc := dev.PCIConfig()
	if pc.MSIXVectors > maxMSIXVectors {
		return nil, fmt.Errorf("vfiouser: %s has %d MSI-X vectors; the MSI-X BAR holds %d", pc.Name, pc.MSIXVectors, maxMSIXVectors)
	}
	if pc.BARSize == 0 || pc.BARSize > 1<<30 {
		return nil, fmt.Errorf("vfiouser: %s: register window of %d bytes", pc.Name, pc.BARSize)
	}
	c := &configSpace{dev: dev, bar0Size: pow2(pc.BARSize), vectors: pc.MSIXVectors}
	for off := 0; off < 0x10; off += 4 {
		v, err := dev.ReadConfig(off, 4)
		if err != nil {
			return nil, fmt.Errorf("vfiouser: read the model's config header: %w", err)
		}
		binary.LittleEndian.PutUint32(c.img[off:], v)
	}
	for off := 0x2C; off < 0x30; off += 4 {
		v, err := dev.ReadConfig(off, 4)
		if err != nil {
			return nil, fmt.Errorf("vfiouser: read the model's config header: %w", err)
		}
		binary.LittleEndian.PutUint32(c.img[off:], v)
	}
	le := binary.LittleEndian
	le.PutUint16(c.img[0x06:], le.Uint16(c.img[0x06:])|cfgStatusCaps)
	c.img[0x0E] = 0 // header type 0, single function
	// BARs: memory, 32-bit, non-prefetchable (low 4 bits 0); the address bits
	// above the size are writable.
	le.PutUint32(c.wmask[cfgBAR0:], ^(c.bar0Size - 1))
	le.PutUint32(c.wmask[cfgBAR3:], ^uint32(msixBARSize-1))
	c.img[cfgCapPtr] = cfgPM
	c.img[cfgIntPin] = 1
	c.wmask[cfgIntLine] = 0xFF

	// Power management: PMC version 3 (PM 1.2), no D1/D2, no PME; PMCSR power
	// state bits 1:0 writable, No_Soft_Reset set (D3hot->D0 keeps state).
	c.img[cfgPM], c.img[cfgPM+1] = capIDPM, cfgMSI
	le.PutUint16(c.img[cfgPM+2:], 0x0003)
	le.PutUint16(c.img[cfgPM+4:], 1<<3)
	c.wmask[cfgPM+4] = 0x03

	// MSI: 64-bit capable (bit 7), one message; enable (bit 0) and Multiple
	// Message Enable (6:4) writable; address and data writable.
	c.img[cfgMSI], c.img[cfgMSI+1] = capIDMSI, cfgMSIX
	le.PutUint16(c.img[cfgMSI+2:], 1<<7)
	c.wmask[cfgMSI+2] = 0x71
	le.PutUint32(c.wmask[cfgMSI+4:], 0xFFFFFFFC)
	le.PutUint32(c.wmask[cfgMSI+8:], 0xFFFFFFFF)
	le.PutUint16(c.wmask[cfgMSI+12:], 0xFFFF)

	// MSI-X: table size N-1; Function Mask (14) and Enable (15) writable.
	c.img[cfgMSIX], c.img[cfgMSIX+1] = capIDMSIX, cfgPCIe
	le.PutUint16(c.img[cfgMSIX+2:], uint16(c.vectors-1))
	c.wmask[cfgMSIX+3] = 0xC0
	le.PutUint32(c.img[cfgMSIX+4:], 0|MSIXBAR)
	le.PutUint32(c.img[cfgMSIX+8:], msixPBAOffset|MSIXBAR)

	// PCI Express v2, endpoint (type 0); Device Capabilities: 256-byte max
	// payload; Device Control writable (enables, payload and read request size);
	// Link Capabilities and Status: 2.5 GT/s, x1.
	c.img[cfgPCIe], c.img[cfgPCIe+1] = capIDPCIe, 0
	le.PutUint16(c.img[cfgPCIe+2:], 0x0002)
	le.PutUint32(c.img[cfgPCIe+4:], 0x1)
	le.PutUint16(c.wmask[cfgPCIe+8:], 0x7FFF)
	le.PutUint32(c.img[cfgPCIe+0x0C:], 1<<4|1)
	le.PutUint16(c.img[cfgPCIe+0x12:], 1<<4|1)
	return c, nil
}

// read copies [off, off+len(p)) of the space into p.
func (c *configSpace) read(off int, p []byte) error {
	if off < 0 || off+len(p) > len(c.img) {
		return fmt.Errorf("config read of %d bytes at 0x%x: outside the %d-byte space", len(p), off, len(c.img))
	}
	c.mu.Lock()
	copy(p, c.img[off:])
	c.mu.Unlock()
	// The command register is the model's.
	for i := range p {
		if o := off + i; o == sim.PCICommand || o == sim.PCICommand+1 {
			v, err := c.dev.ReadConfig(o, 1)
			if err != nil {
				return err
			}
			p[i] = byte(v)
		}
	}
	return nil
}

// write applies p at off through the writable-bit mask; the command register
// goes to the model (sim.Device.WriteConfig keeps its own writable bits).
func (c *configSpace) write(off int, p []byte) error {
	if off < 0 || off+len(p) > len(c.img) {
		return fmt.Errorf("config write of %d bytes at 0x%x: outside the %d-byte space", len(p), off, len(c.img))
	}
	c.mu.Lock()
	for i, b := range p {
		o := off + i
		c.img[o] = c.img[o]&^c.wmask[o] | b&c.wmask[o]
	}
	c.mu.Unlock()
	cmd := false
	for i, b := range p {
		if o := off + i; o == sim.PCICommand || o == sim.PCICommand+1 {
			if err := c.dev.WriteConfig(o, 1, uint32(b)); err != nil {
				return err
			}
			cmd = true
		}
	}
	if cmd && c.onCommand != nil {
		c.onCommand()
	}
	return nil
}
