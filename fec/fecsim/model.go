package fecsim

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// Variant selects the ENET generation modelled.
type Variant uint8

const (
	// IMX8MP is the i.MX8M Plus ENET ("fsl,imx8mp-fec"): three RX and three TX
	// rings, gigabit, enhanced BDs, interrupt coalescing, four interrupt lines
	// (GIC SPI 118-121).
	IMX8MP Variant = iota
	// IMX6 is the single-ring i.MX6/7-class ENET ("fsl,imx6q-fec"): one RX and
	// one TX ring, gigabit, enhanced BDs, no coalescing, one interrupt line.
	IMX6
)

func (v Variant) String() string {
	switch v {
	case IMX8MP:
		return "imx8mp"
	case IMX6:
		return "imx6"
	}
	return fmt.Sprintf("Variant(%d)", uint8(v))
}

// variantInfo is what differs between the variants.
type variantInfo struct {
	rings      int
	lines      int // interrupt lines
	compatible string
	coalesce   bool
	c45        bool
	phyID      uint32
	// err007885: a TDAR write while the ring runs can hang the transmit
	// state machines (Linux FEC_QUIRK_ERR007885: i.MX6SX, i.MX8M).
	err007885 bool
	// err006358: once the device saw a BD without R it clears TDAR later
	// even if TDAR was written meanwhile (Linux FEC_QUIRK_ERR006358: i.MX6Q).
	err006358 bool
}

var variants = [...]variantInfo{
	IMX8MP: {rings: 3, lines: 4, compatible: "fsl,imx8mp-fec", coalesce: true, c45: true, phyID: 0x001CC916, err007885: true}, // RTL8211F on the EVK
	IMX6:   {rings: 1, lines: 1, compatible: "fsl,imx6q-fec", phyID: 0x004DD074, err006358: true},                             // AR8031 on SabreSD
}

// Config describes the modelled device and its board.
type Config struct {
	// Variant is the ENET generation. Default IMX8MP.
	Variant Variant
	// MAC is the address loaded into PALR/PAUR at reset (as QEMU does; on
	// hardware it comes from the fuses through the boot loader).
	// nil: 02:00:00:00:00:01.
	MAC net.HardwareAddr
	// PHYID is the PHY's identifier (PHYID1<<16 | PHYID2). 0: the variant's
	// board PHY.
	PHYID uint32
	// PHYAddr is the PHY's MDIO address (0-31). 0: 1.
	PHYAddr int
	// PHYOnBusOf wires this MAC's PHY to another MAC's MDIO pins instead of
	// its own, as boards with one shared management bus do (the i.MX6UL EVK:
	// both PHYs on ENET2's bus, imx6ul-14x14-evk.dtsi). This MAC's own MDIO
	// then reaches no PHY (reads return the pull-up's ones). Two PHYs at one
	// address on a bus are refused.
	PHYOnBusOf *Model
	// AutonegDelay is the time from an autonegotiation restart to link up.
	// 0: sim.DefaultAutonegDelay.
	AutonegDelay time.Duration
	// BreakLink is how long the PHY keeps a link that was up down when its
	// autonegotiation restarts (sim.PHYConfig.BreakLink; sim.BreakLinkMin is
	// the standard's). 0: no break.
	BreakLink time.Duration
	// Coherent makes DMA cache-coherent. The default (false) is what the i.MX
	// parts are: the device sees only what the driver synced (see sim.Memory).
	Coherent bool
	// Cache, when set, makes the non-coherent memory sim's CPU cache model
	// (whole lines, seeded evictions). Ignored with Coherent.
	Cache *sim.CacheConfig
	// HighMemory places DMA memory above 4 GiB with no limit, as a board whose
	// RAM the FEC cannot reach: every 32-bit BD address then misses. For
	// testing that a driver refuses such memory.
	HighMemory bool
	// RMII wires the MAC to the PHY through RMII (10/100) instead of RGMII.
	RMII bool
	// Unplugged starts with no cable.
	Unplugged bool
	// PartnerNo1000 makes the link partner 10/100 only.
	PartnerNo1000 bool
	// PartnerAbility is what the link partner advertises (ANLPAR, sim.AN*
	// bits); 0: 10/100 half and full duplex with pause.
	PartnerAbility uint16
	// PTPClockHz is the 1588 timer's clock. 0: 100 MHz (imx8mp.dtsi's
	// ENET_TIMER rate).
	PTPClockHz int
	// SystemClockHz is the ENET system clock, which times interrupt
	// coalescing (RXIC/TXIC with ICCS). 0: 266 MHz (imx8mp.dtsi).
	SystemClockHz int
	// Board is the SoC around the MAC (soc.go): its clock gates, PHY reset
	// line and /dev/mem policy decide whether accesses complete. nil: the
	// bare MAC (or a private board for the states in Left that need one).
	Board *sim.Board
	// Unit is the MAC's platform device on Board. "": the board's FEC.
	Unit string
	// Left starts the MAC as Linux's fec leaves it (soc.go). 0: reset.
	Left sim.KernelLeft
	// Name is the device name in nic.DeviceInfo. "": "fecsim".
	Name string
	// Sched sets the device side's latencies and seed (see sim.Sched). The
	// zero value runs the device asynchronously with random latencies; Sync
	// finishes every command inside the register write (benchmarks).
	Sched sim.SchedConfig
}

// Counters are the model's own totals (independent of the MIB registers).
type Counters struct {
	RxFrames   uint64 // frames written to an RX ring
	RxBytes    uint64 // their bytes as received (without FCS or SHIFT16 pad)
	RxFiltered uint64 // dropped by the address filter
	RxNoBD     uint64 // times a frame found its ring not active or out of empty BDs (it waits)
	RxOverflow uint64 // dropped: the receive FIFO was full (IEEE_R_MACERR)
	RxOff      uint64 // arrived while ETHEREN was clear, the link down, or closed
	RxErrors   uint64 // undersize, bad FCS, speed mismatch, DMA fault
	TxFrames   uint64 // frames put on the wire (or looped back)
	TxBytes    uint64 // their bytes without FCS
	TxDropped  uint64 // completed but not delivered: fault, link down, bad FCS
	MDIOFrames uint64 // MMFR frames completed
	IRQs       uint64 // interrupt lines signalled (and delivered)
}

// ring is one RX/TX ring pair's registers and DMA state. The driver writes
// RDSR/TDSR/MRBR and the E/R bits; the device owns the current BD pointers
// (rxCur/txCur), which only ETHEREN (and a reset) move back to the start.
type ring struct {
	rdsr, tdsr, mrbr uint32
	rxCur, txCur     uint32 // device-owned: address of the next BD
	rdar, tdar       bool   // RDAR/TDAR active bits
	// txClearing (ERR006358): the device found the ring drained and will
	// clear TDAR at its next step whatever is written meanwhile.
	txClearing bool
	// txHung (ERR007885): a TDAR write met the ring running; the transmit
	// state machine is stuck until ETHEREN clears or the MAC is reset.
	txHung bool
}

// Model is the ENET as a driver sees it through its 16 KiB register window.
// Register state is guarded by mu. Transmission runs on the goroutine that
// wrote TDAR (or cleared TCR.GTS): each frame's BDs are read, copied and written
// back under mu, then the frame goes to the wire with mu released; txMu (taken
// before mu) keeps frames in order and guards txScratch.
type Model struct {
	sim.ModelBase // the accessors every model shares, over the parts below (sim/modelbase.go)

	cfg    Config      // immutable after New
	info   variantInfo // immutable
	sched  *sim.Sched  // immutable: the device side's clock
	txT    *sim.Timer  // immutable: the transmit engine's next step
	mdioT  *sim.Timer  // immutable: the end of the running MDIO frame
	resetT *sim.Timer  // immutable: the end of ECR.RESET
	mac    [6]byte     // immutable factory address
	sd     *sim.Device // immutable: IRQ lines and memory lifetime
	dev    *Device     // immutable: the platform nic.Device
	mem    *sim.Memory // immutable
	faults *sim.Faults // immutable
	phy    *sim.PHY    // immutable
	// busPHYs are the PHYs on this MAC's MDIO pins: its own, unless wired to
	// another bus, and those of models wired to this one. Guarded by mu.
	busPHYs []*sim.PHY

	txMu      sync.Mutex
	txScratch []byte // one gathered TX frame; guarded by txMu

	closed atomic.Bool // set once by Close

	mu        sync.Mutex
	wire      sim.Wire      // guarded by mu: where transmitted frames go
	rxFIFO    *sim.RxFIFO   // guarded by mu: the receive FIFO (rxfifo.go), made when first used
	inj       *sim.Injector // immutable: injected faults (fault.go)
	gen       uint64        // bumps at every reset and ETHEREN clear
	rxScratch []byte        // one RX frame with pad and FCS; guarded by mu
	mdioBusy  bool          // an MDIO frame is being clocked out; guarded by mu
	mdioFrame uint32        // the MMFR value of that frame; guarded by mu
	resetting bool          // ECR.RESET in progress; guarded by mu
	phyHeld   bool          // the board held the PHY in reset at the last look; guarded by mu

	eir, eimr          uint32
	linePend           [4]uint32 // pending-and-enabled bits last signalled, per line
	lineFired          [4]uint64 // signals raised per line
	ecr, mmfr, mscr    uint32
	mibc, rcr, tcr     uint32
	palr, paur, opd    uint32
	txic, rxic         [3]uint32
	rxCoal, txCoal     [3]coalescer // held frame events (coalesce.go)
	iaur, ialr         uint32
	gaur, galr         uint32
	tfwr, ftrl         uint32
	fifo               [8]uint32 // RSFL..TIPG
	tacc, racc         uint32
	rcmr, dmacfg       [2]uint32
	qos, lpiSlp, lpiWk uint32
	atcr, atvr, atoff  uint32
	atper, atcor       uint32
	atinc, atstmp      uint32
	timer              *sim.PHClock // the 1588 counter while ATCR.EN (timer.go)
	tc                 [8]uint32
	mib                [nMIB]uint32
	rings              [3]ring
	cnt                Counters
}

// ErrConfig is wrapped by New for a configuration the model cannot build.
var ErrConfig = errors.New("fecsim: bad configuration")

// New builds a model in its power-on state (registers at their reset values,
// link down until software restarts autonegotiation through MDIO).
func New(cfg Config) (*Model, error) {
	if int(cfg.Variant) >= len(variants) {
		return nil, fmt.Errorf("fecsim: variant %d: want IMX8MP or IMX6: %w", cfg.Variant, ErrConfig)
	}
	info := variants[cfg.Variant]
	m := &Model{cfg: cfg, info: info}
	mac, err := sim.FactoryMAC(cfg.MAC)
	if err != nil {
		return nil, fmt.Errorf("fecsim: %w: %w", err, ErrConfig)
	}
	m.mac = mac
	if cfg.PHYID == 0 {
		cfg.PHYID = info.phyID
	}
	if cfg.PHYAddr, err = sim.PHYAddr(cfg.PHYAddr); err != nil {
		return nil, fmt.Errorf("fecsim: %w: %w", err, ErrConfig)
	}
	if cfg.Name == "" {
		cfg.Name = "fecsim"
	}
	m.cfg = cfg
	if err := m.setupBoard(); err != nil {
		return nil, err
	}
	m.faults = &sim.Faults{}
	mc := sim.MemoryConfig{Below4G: true, NonCoherent: !cfg.Coherent}
	if cfg.HighMemory {
		mc = sim.MemoryConfig{NonCoherent: !cfg.Coherent}
	}
	if cfg.Cache != nil && !cfg.Coherent {
		if err := cfg.Cache.Validate(); err != nil {
			return nil, fmt.Errorf("fecsim: %w: %w", err, ErrConfig)
		}
		mc.Cache = cfg.Cache
	}
	m.mem = sim.NewMemory(mc, m.faults)
	m.mem.SetDeviceLock(&m.mu) // every device-side access happens under mu
	m.phy = sim.NewPHY(sim.PHYConfig{
		Addr: cfg.PHYAddr, ID1: uint16(cfg.PHYID >> 16), ID2: uint16(cfg.PHYID),
		AutonegDelay: cfg.AutonegDelay, BreakLink: cfg.BreakLink, PartnerNo1000: cfg.PartnerNo1000 || cfg.RMII,
		PartnerAbility: cfg.PartnerAbility,
		Unplugged:      cfg.Unplugged, Faults: m.faults,
	})
	if o := cfg.PHYOnBusOf; o != nil {
		if err := o.wirePHY(m.phy); err != nil {
			return nil, err
		}
	} else {
		m.busPHYs = []*sim.PHY{m.phy}
	}
	m.wire.SetLineRate(m.phy.Link) // sim/linerate.go: frames at the negotiated speed
	m.wire.SetTxFIFO(txFIFOBytes)
	m.sd = sim.NewDevice(sim.DeviceConfig{Name: cfg.Name, BARSize: WindowSize, MSIXVectors: info.lines}, m.mem, m)
	m.inj = new(sim.Injector)
	m.sd.SetInjector(m.inj, m.phy)                                                      // fault.go
	m.dev = &Device{PlatformDevice: sim.NewPlatformDevice(m.sd, info.compatible), m: m} // DMA always on
	m.txScratch = make([]byte, maxFrameModel+8)
	m.rxScratch = make([]byte, maxFrameModel+8)
	m.sched = sim.NewSched(cfg.Sched)
	m.txT = m.sched.NewTimer(m.txRun)
	m.mdioT = m.sched.NewTimer(m.mdioDone)
	m.resetT = m.sched.NewTimer(m.resetDone)
	m.newCoalescers()
	m.InitBase(sim.ModelParts{Lock: &m.mu, Wire: &m.wire, Inject: m.Inject, MAC: m.mac, Device: m.sd,
		Memory: m.mem, PHY: m.phy, Faults: m.faults, Injector: m.inj, Sched: m.sched,
		Reset: m.resetLocked}) // the SoC-level reset of the block (reset controller or power domain cycle): as ECR.RESET
	m.resetLocked()
	m.applyLeftLocked()
	return m, nil
}

// wirePHY puts phy on m's MDIO bus (Config.PHYOnBusOf of another model).
func (m *Model) wirePHY(phy *sim.PHY) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.busPHYs {
		if p.Addr() == phy.Addr() {
			return fmt.Errorf("fecsim: a second PHY at MDIO address %d on the bus of %s: %w", phy.Addr(), m.cfg.Name, ErrConfig)
		}
	}
	m.busPHYs = append(m.busPHYs, phy)
	return nil
}

// busPHYLocked is the PHY at MDIO address pa on m's bus, nil when none.
func (m *Model) busPHYLocked(pa int) *sim.PHY {
	for _, p := range m.busPHYs {
		if p.Addr() == pa {
			return p
		}
	}
	return nil
}

// Device is the model as a platform nic.Device, for a driver.
func (m *Model) Device() *Device { return m.dev }

// Variant is the modelled generation.
func (m *Model) Variant() Variant { return m.cfg.Variant }

// Rings is the number of RX (and TX) rings of the variant.
func (m *Model) Rings() int { return m.info.rings }

// Counters returns the model's own totals.
func (m *Model) Counters() Counters {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cnt
}

// IRQFired counts the signals raised on interrupt line i (0-based; on the
// i.MX8MP lines 0-3 are GIC SPI 118-121), whether or not the driver enabled it.
func (m *Model) IRQFired(i int) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.linePend) {
		return 0
	}
	return m.lineFired[i]
}

// Close detaches the wire and closes the device (memory unmapped, IRQs torn
// down). Register accesses afterwards are faults.
func (m *Model) Close() error {
	return m.CloseBase(func() {
		m.closed.Store(true)
		m.stopCoalescers()
	})
}

// resetLocked puts every register at its reset value (QEMU imx8mp values).
// The PHY is a separate chip and keeps its state.
func (m *Model) resetLocked() {
	m.gen++
	m.wire.TxIdle()
	if m.rxFIFO != nil {
		m.rxFIFO.Flush() // a reset empties the receive FIFO
	}
	m.inj.DeviceReset() // a reset ends a hang, a stall, a dead PHY (fault.go)
	m.mdioBusy = false  // a frame being clocked out is cut off
	m.resetting = false
	m.eir, m.eimr = 0, 0
	m.linePend = [4]uint32{}
	m.ecr, m.mmfr, m.mscr = ecrReset, 0, 0
	m.mibc, m.rcr, m.tcr = mibcReset, rcrReset, 0
	m.palr = uint32(m.mac[0])<<24 | uint32(m.mac[1])<<16 | uint32(m.mac[2])<<8 | uint32(m.mac[3])
	m.paur = uint32(m.mac[4])<<24 | uint32(m.mac[5])<<16 | paurType
	m.opd = opdReset
	m.txic, m.rxic = [3]uint32{}, [3]uint32{}
	m.resetCoalescersLocked()
	m.iaur, m.ialr, m.gaur, m.galr = 0, 0, 0, 0
	m.tfwr, m.ftrl = 0, ftrlReset
	m.fifo = [8]uint32{}
	m.fifo[(regRAEM-regRSFL)/4] = raemReset
	m.fifo[(regRAFL-regRSFL)/4] = raflReset
	m.fifo[(regTAEM-regRSFL)/4] = taemReset
	m.fifo[(regTAFL-regRSFL)/4] = taflReset
	m.fifo[(regTIPG-regRSFL)/4] = tipgReset
	m.tacc, m.racc = 0, 0
	m.rcmr, m.dmacfg = [2]uint32{}, [2]uint32{}
	m.qos, m.lpiSlp, m.lpiWk = 0, 0, 0
	m.atcr, m.atvr, m.atoff, m.atper, m.atcor, m.atinc, m.atstmp = 0, 0, 0, atperRst, 0, 0, 0
	m.setTimerLocked(0)
	m.retimeLocked()
	m.tc = [8]uint32{}
	m.mib = [nMIB]uint32{}
	m.rings = [3]ring{}
}
