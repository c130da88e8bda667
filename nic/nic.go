package nic

import (
	"errors"
	"net"
	"time"

	"github.com/xnic-dev/xnic/dma"
)

// Regs is a window of 32-bit device registers addressed by byte offset.
//
// On a real device each call is exactly one aligned 32-bit load or store on the
// mapped BAR (never split, never merged); on a model it calls the model, which
// applies the register's side effects. Implementations are safe for concurrent use
// only as far as the hardware is: drivers serialise access to shared registers.
type Regs interface {
	Read32(off uint32) uint32
	Write32(off uint32, val uint32)
}

// IRQ is one interrupt vector delivered to the process, as a VFIO eventfd is.
type IRQ interface {
	// Wait blocks until the interrupt fires or timeout passes (timeout < 0: no
	// limit). It reports whether the interrupt fired, and consumes it.
	Wait(timeout time.Duration) (bool, error)
	// Fd is a file descriptor that becomes readable when the interrupt fires, for
	// callers that poll several, or -1 when the IRQ has none (models).
	Fd() int
}

// DeviceInfo identifies a device.
type DeviceInfo struct {
	Name       string // PCI address ("0000:03:00.0"), or a model's name
	Bus        string // "pci", "platform" or "sim"
	Vendor     uint16 // PCI vendor ID (0 on platform devices)
	Device     uint16 // PCI device ID
	SubVendor  uint16
	SubDevice  uint16
	Revision   uint8
	Compatible string // devicetree compatible string on platform devices
}

// Device is what a driver is handed: a VFIO device, a physical-memory mapping of a
// platform device, or a model.
type Device interface {
	Info() DeviceInfo
	// Regs returns register window n (a PCI BAR number, or the index of a platform
	// device's memory resource).
	Regs(n int) (Regs, error)
	// DMA is the allocator for memory this device may reach.
	DMA() dma.Allocator
	// ReadConfig and WriteConfig access PCI configuration space (size 1, 2 or 4).
	// Platform devices return ErrNotSupported.
	ReadConfig(off, size int) (uint32, error)
	WriteConfig(off, size int, val uint32) error
	// EnableBusMaster lets the device issue DMA (PCI command bit 2; vfio-pci leaves
	// it off).
	EnableBusMaster() error
	// EnableMSIX sets up n MSI-X vectors (fewer if the device has fewer; falling
	// back to MSI or INTx with one vector) and returns them in vector order.
	EnableMSIX(n int) ([]IRQ, error)
	// DisableIRQs tears down what EnableMSIX set up.
	DisableIRQs() error
	// Reset resets the device at bus level (VFIO_DEVICE_RESET, FLR), when it can.
	Reset() error
	// Close releases everything the Device holds. Regions and IRQs die with it.
	Close() error
}

// Errors shared by drivers and devices. They are wrapped with context.
var (
	ErrNotSupported = errors.New("not supported")
	// ErrConfig marks a configuration the driver refuses before touching
	// the device (a queue count or ring size the part cannot have).
	ErrConfig   = errors.New("bad configuration")
	ErrTimeout  = errors.New("timed out")
	ErrLinkDown = errors.New("link down")
	ErrNoDevice = errors.New("device not responding") // reads of all ones
	ErrClosed   = errors.New("closed")
)

// LinkState is what the MAC and PHY agree on.
type LinkState struct {
	Up         bool
	SpeedMbps  int // 10, 100, 1000, 2500; 0 when down
	FullDuplex bool
}

// Counter is one named statistic. Names follow the kernel's ethtool names where
// there is one (rx_packets, rx_missed_errors, ...).
type Counter struct {
	Name  string
	Value uint64
}

// Port is one Ethernet port with its queues, as the dataplane sees it.
//
// Control methods (Link, Stats, SetPromisc, ...) are safe to call from any
// goroutine. Each queue belongs to one goroutine at a time (see RxQueue, TxQueue).
type Port interface {
	Name() string
	MAC() net.HardwareAddr
	Link() LinkState
	// WaitLink waits until the link is up or timeout passes (wrapping ErrLinkDown).
	WaitLink(timeout time.Duration) (LinkState, error)
	NumQueues() int
	RxQueue(i int) RxQueue
	TxQueue(i int) TxQueue
	// Stats returns the device's hardware counters, accumulated to 64 bits.
	Stats() []Counter
	SetPromisc(on bool) error
	Close() error
}

// LinkAdjuster is a Port whose MAC must be restarted to follow a new speed
// or duplex, as Linux's fec_enet_adjust_link does with fec_restart: the rings
// start over, so AdjustLink may run only while no queue of the port is polled
// or sent on. Ports whose MAC follows the PHY by itself (igb) or is
// reprogrammed in place by Link (dwmac) do not implement it. The dataplane
// checks LinkMismatch with the link and, when it reports true, parks the
// port's queues and calls AdjustLink.
type LinkAdjuster interface {
	LinkMismatch() bool
	AdjustLink() (l LinkState, restarted bool, err error)
}

// RxQueue is one receive ring. It is not safe for concurrent use: one poll
// goroutine owns it.
type RxQueue interface {
	// Recv moves up to len(bufs) received frames into bufs and returns the count.
	// Ownership of each returned Buf passes to the caller (OwnerApp), who must give
	// it back (Buf.Free, or a TX queue). Recv refills the ring from its pool and
	// makes the refill visible with at most one tail write.
	Recv(bufs []*dma.Buf) int
	// Pool is where this ring's buffers come from.
	Pool() *dma.Pool
	// IRQ is the queue's interrupt, or nil when interrupts are not set up.
	IRQ() IRQ
	// ArmIRQ re-enables the queue's interrupt after a poll found the ring empty.
	// The caller polls once more after arming, so no frame is stranded.
	ArmIRQ()
}

// TxQueue is one transmit ring. It is not safe for concurrent use.
type TxQueue interface {
	// Send puts a prefix of bufs on the ring and returns how many it took; those
	// pass to the ring (OwnerTx) and come back to their pools when the device is
	// done (Reclaim). The rest stay with the caller. One tail write per call.
	Send(bufs []*dma.Buf) int
	// Reclaim returns completed buffers to their pools and reports how many,
	// counting those Send reclaimed to make room since the last Reclaim (so
	// sent minus reclaimed is what the ring holds).
	Reclaim() int
	// Free is the number of descriptors available to Send.
	Free() int
}
