package sim

import (
	"fmt"
	"net"
	"sync"

	"github.com/xnic-dev/xnic/nic"
)

// ModelBase is what every device model has around its registers, and the
// accessors tests, boards and the CLI use on it: the factory address, the DMA
// memory, the PHY, the fault log and injector, the device side's clock, and
// the wire with its attach, transmit and pacing plumbing. A model embeds it
// and calls InitBase once in its constructor; its registers, its lock and its
// datasheet behaviour stay its own.
//
// The base holds the model's parts, it does not own them: the model keeps its
// own references and uses them directly, and closes them in its Close. Every
// field is immutable after InitBase (the wire's state is guarded by the
// model's lock, the Wire's own rules).
type ModelBase struct {
	mu     sync.Locker // the model's register lock
	wire   *Wire
	inject func(frame []byte) bool
	reset  func()
	mac    [6]byte
	dev    *Device
	mem    *Memory
	phy    *PHY
	rate   func() nic.LinkState // what SetPaced(true) paces the wire at
	faults *Faults
	inj    *Injector
	sched  *Sched
	name   func(off uint32) string
}

// ModelParts are the parts a model hands its ModelBase.
type ModelParts struct {
	Lock     sync.Locker             // the model's register lock
	Wire     *Wire                   // the model's wire, guarded by Lock
	Inject   func(frame []byte) bool // the model's receive path for frames the wire delivers
	Reset    func()                  // the model's function-level reset, run with Lock held
	MAC      [6]byte                 // the factory address
	Device   *Device                 // the device base (bus mastering, interrupt vectors)
	Memory   *Memory                 // the DMA memory
	PHY      *PHY                    // the PHY the MAC talks to
	LineRate func() nic.LinkState    // the link the wire is paced at (SetPaced); nil: PHY's Link
	Faults   *Faults                 // the fault log
	Injector *Injector               // the fault injector
	Sched    *Sched                  // the device side's clock
	RegName  func(off uint32) string // the datasheet's name of a register, for faults (nil: none)
}

// InitBase sets the parts; a model calls it once, before it is shared.
func (b *ModelBase) InitBase(p ModelParts) {
	*b = ModelBase{mu: p.Lock, wire: p.Wire, inject: p.Inject, reset: p.Reset, mac: p.MAC, dev: p.Device,
		mem: p.Memory, phy: p.PHY, rate: p.LineRate, faults: p.Faults, inj: p.Injector, sched: p.Sched, name: p.RegName}
	if b.rate == nil && b.phy != nil {
		b.rate = b.phy.Link
	}
}

// SimDevice is the Device base (bus-master state, interrupt vectors, faults).
func (b *ModelBase) SimDevice() *Device { return b.dev }

// Memory is the model's DMA memory.
func (b *ModelBase) Memory() *Memory { return b.mem }

// PHY is the model's PHY (plug and unplug the cable with it).
func (b *ModelBase) PHY() *PHY { return b.phy }

// MAC is the factory address (a copy).
func (b *ModelBase) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), b.mac[:]...) }

// Faults returns the violations recorded so far.
func (b *ModelBase) Faults() []Fault { return b.faults.List() }

// FaultLog is the fault log itself (to Clear it in tests that provoke faults).
func (b *ModelBase) FaultLog() *Faults { return b.faults }

// Err is nil when the model recorded no fault; otherwise it names the device
// schedule's seed too, to rerun the same latencies.
func (b *ModelBase) Err() error {
	if err := b.faults.Err(); err != nil {
		return fmt.Errorf("%w (%v)", err, b.sched)
	}
	return nil
}

// Injector is the model's fault injector: schedule faults on it and Start it.
func (b *ModelBase) Injector() *Injector { return b.inj }

// Sched is the device side (its seed, for a test's failure message).
func (b *ModelBase) Sched() *Sched { return b.sched }

// Settle lets the device finish what it was asked to do (transmissions, MDIO
// cycles, a reset) now, as if its latencies had passed. For tests that check
// the wire right after a doorbell.
func (b *ModelBase) Settle() { b.sched.Settle() }

// Attach connects the model to a wire: frames arriving on link are received
// as Inject receives them, frames transmitted go out on it. nil detaches.
func (b *ModelBase) Attach(link Link) {
	b.wire.Attach(b.mu, link, func(f []byte) { b.inject(f) })
}

// SetTransmit sends transmitted frames to f instead of a wire (nil: drop
// them). f runs on the goroutine that rang the transmit doorbell (or the
// device side's, when it sends on its own time); the frame is valid only
// during the call.
func (b *ModelBase) SetTransmit(f func(frame []byte)) { b.wire.SetTransmit(b.mu, f) }

// SetPaced turns the wire's line rate on (the default, linerate.go: at
// ModelParts.LineRate) or off. Off, frames arrive and leave as fast as the
// caller and the model go: for benchmarks of the model's own cost, never for
// what a port would do.
func (b *ModelBase) SetPaced(on bool) {
	if on {
		b.wire.SetLineRate(b.rate)
		return
	}
	b.wire.SetLineRate(nil)
}

// Reset implements Model: the model's function-level reset (ModelParts.Reset)
// under its lock. The reset is over when Reset returns, as VFIO_DEVICE_RESET
// (or a SoC's reset controller) waits for the function to come back.
func (b *ModelBase) Reset() {
	b.mu.Lock()
	b.reset()
	b.mu.Unlock()
}

// CloseBase is the teardown every model's Close does: detach the wire, run
// stop (the model's own: its closed flag, its timers; nil: nothing), then
// close the fault injector, the device side's clock and the device (memory
// unmapped, interrupt vectors torn down), whose error it returns.
func (b *ModelBase) CloseBase(stop func()) error {
	b.Attach(nil)
	if stop != nil {
		stop()
	}
	b.inj.Close()
	b.sched.Close()
	return b.dev.Close()
}

// TxStep is one step of a transmit engine that runs on the device side: the
// timer t that a doorbell arms calls it, and the model serialises the steps
// (its transmit lock). It takes the queues in *pend (a mask guarded by the
// model's lock), lets each send up to a budget of frames (batch on a
// synchronous device side, 1 to stepMax at random otherwise: the device's own
// pace), and puts back, and re-arms t for, the queues that report more.
func (b *ModelBase) TxStep(pend *uint32, t *Timer, batch, stepMax int, send func(q, budget int) (more bool)) {
	budget := batch
	if !b.sched.Synchronous() {
		budget = 1 + b.sched.IntN(stepMax)
	}
	b.mu.Lock()
	mask := *pend
	*pend = 0
	b.mu.Unlock()
	var more uint32
	for q := 0; mask != 0; q++ {
		if mask&(1<<q) != 0 {
			mask &^= 1 << q
			if send(q, budget) {
				more |= 1 << q
			}
		}
	}
	if more != 0 {
		b.mu.Lock()
		*pend |= more
		t.Arm()
		b.mu.Unlock()
	}
}

// LeftBoardStates are the kernel-left states that live on the board, not in
// the MAC: a model starting in them needs a board (LeftBoard builds one).
const LeftBoardStates = LeftClocksGated | LeftPHYInReset

// ModelBoard resolves the board a model of the MAC kind sits on, and its
// unit there: board as given, or, when there is none and left holds board
// states, the private board LeftBoard builds; then the unit ModelUnit names
// on it. Without a board it returns nil and unit unchanged.
func ModelBoard(kind MACKind, board *Board, unit string, left KernelLeft) (*Board, string, error) {
	if board == nil && left&LeftBoardStates != 0 {
		b, err := LeftBoard(kind, left)
		if err != nil {
			return nil, unit, err
		}
		board = b
	}
	if board == nil {
		return nil, unit, nil
	}
	u, err := board.ModelUnit(kind, unit)
	if err != nil {
		return board, unit, err
	}
	return board, u, nil
}

// FactoryMAC is a model's factory address: mac, which must be a 6-byte
// unicast address, or the locally administered 02:00:00:00:00:01 when nil.
func FactoryMAC(mac []byte) ([6]byte, error) {
	var a [6]byte
	switch {
	case mac == nil:
		a = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	case len(mac) != 6 || mac[0]&1 != 0:
		return a, fmt.Errorf("factory MAC %v: want a 6-byte unicast address", net.HardwareAddr(mac))
	default:
		copy(a[:], mac)
	}
	return a, nil
}

// PHYInReset reports whether board (nil: none) holds the PHY of the MAC at
// unit in reset, and resets phy's registers when the line becomes asserted:
// a PHY in reset has no link and comes out of it with its defaults. *held is
// the model's record of the line (guarded by the model's lock).
func PHYInReset(board *Board, unit string, phy *PHY, held *bool) bool {
	if board == nil {
		return false
	}
	in := !board.PHYOperating(unit)
	if in && !*held {
		phy.Write(MIIBMCR, BMCRReset)
	}
	*held = in
	return in
}

// PHYAddr is a model's configured MDIO address of its PHY: addr, or 1 when
// 0; an address above 31 (or negative) is an error.
func PHYAddr(addr int) (int, error) {
	if addr == 0 {
		return 1, nil
	}
	if addr < 0 || addr > 31 {
		return addr, fmt.Errorf("PHY address %d: want 0-31", addr)
	}
	return addr, nil
}

// ReadReg is the register-read path of a model (its Read32): the device side
// catches up first (Sched.Poll), then read runs with the model's lock held.
func (b *ModelBase) ReadReg(read func() uint32) uint32 {
	b.sched.Poll()
	b.mu.Lock()
	defer b.mu.Unlock()
	return read()
}

// WriteReg is the register-write path of a model (its Write32): the device
// side catches up first, write runs with the model's lock held and returns
// the transmit queues the write rang (a mask, or any non-zero value for a
// single engine), which are or'ed into *pend (nil: none kept) with t armed
// for the engine's next step; on a synchronous device side what the write
// started runs before WriteReg returns.
func (b *ModelBase) WriteReg(pend *uint32, t *Timer, write func() (kick uint32)) {
	b.sched.Poll()
	b.mu.Lock()
	if kick := write(); kick != 0 {
		if pend != nil {
			*pend |= kick
		}
		t.Arm()
	}
	b.mu.Unlock()
	if b.sched.Synchronous() {
		b.sched.Poll()
	}
}

// regName is the register's name for a fault ("" without ModelParts.RegName).
func (b *ModelBase) regName(off uint32) string {
	if b.name == nil {
		return ""
	}
	return b.name(off)
}

// Unimplemented records an access (op: "read32" or "write32") to a register
// the model does not implement.
func (b *ModelBase) Unimplemented(op string, off uint32) {
	b.faults.Add(op, b.regName(off), uint64(off), "register not implemented by the model")
}

// WriteRegOutOfReset is WriteReg for a device that loses register writes
// while a reset of its own is under way: when inReset (run with the lock
// held) says one is, the write is recorded as a fault, "write of 0x... while
// " and during (what the reset is and how a driver waits for its end), and
// changes nothing; otherwise write runs.
func (b *ModelBase) WriteRegOutOfReset(pend *uint32, t *Timer, off, val uint32, inReset func() bool, during string, write func() (kick uint32)) {
	b.WriteReg(pend, t, func() uint32 {
		if inReset() {
			b.faults.Add("write32", b.regName(off), uint64(off), "write of 0x%08x while %s", val, during)
			return 0
		}
		return write()
	})
}
