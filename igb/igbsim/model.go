package igbsim

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// family groups the device IDs whose register behaviour differs.
type family uint8

const (
	fam82576 family = iota // 82576: IVAR by queue, 24 receive addresses
	famI350                // I350: 82580-style IVAR, 32 receive addresses
	famI210                // I210/I211: 82580-style IVAR, 16 receive addresses
)

// devInfo is what the model knows of one PCI device ID (Linux e1000_hw.h).
type devInfo struct {
	fam       family
	maxQueues int
	vectors   int // MSI-X vectors of the function
	rar       int // receive address registers
	phyID     uint32
	name      string
}

var devices = map[uint16]devInfo{
	0x10C9: {fam82576, 8, 25, 24, 0x02A80390, "82576"},
	0x10E6: {fam82576, 8, 25, 24, 0x02A80390, "82576 fiber"},
	0x10E7: {fam82576, 8, 25, 24, 0x02A80390, "82576 serdes"},
	0x10E8: {fam82576, 8, 25, 24, 0x02A80390, "82576 quad copper"},
	0x1526: {fam82576, 8, 25, 24, 0x02A80390, "82576 quad copper ET2"},
	0x150A: {fam82576, 8, 25, 24, 0x02A80390, "82576 NS"},
	0x1521: {famI350, 8, 10, 32, 0x015403B0, "I350 copper"},
	0x1522: {famI350, 8, 10, 32, 0x015403B0, "I350 fiber"},
	0x1523: {famI350, 8, 10, 32, 0x015403B0, "I350 serdes"},
	0x1524: {famI350, 8, 10, 32, 0x015403B0, "I350 SGMII"},
	0x1533: {famI210, 4, 5, 16, 0x01410C00, "I210 copper"},
	0x1536: {famI210, 4, 5, 16, 0x01410C00, "I210 fiber"},
	0x1537: {famI210, 4, 5, 16, 0x01410C00, "I210 serdes"},
	0x1538: {famI210, 4, 5, 16, 0x01410C00, "I210 SGMII"},
	0x157B: {famI210, 4, 5, 16, 0x01410C00, "I210 copper flashless"},
	0x157C: {famI210, 4, 5, 16, 0x01410C00, "I210 serdes flashless"},
	0x1518: {fam82576, 8, 25, 24, 0x02A80390, "82576 NS serdes"},
	0x150D: {fam82576, 8, 25, 24, 0x02A80390, "82576 serdes quad"},
	0x1539: {famI210, 2, 5, 16, 0x01410C00, "I211 copper"},
}

// Config describes the modelled device.
type Config struct {
	// DeviceID is the PCI device ID (vendor 8086). 0: 0x10C9 (82576).
	DeviceID uint16
	// MAC is the factory address loaded into RAL0/RAH0 at reset and into the
	// NVM image. nil: 02:00:00:00:00:01 (locally administered).
	MAC net.HardwareAddr
	// Queues is the number of RX and TX queue pairs modelled (1 to the device's
	// maximum). 0: 4 (2 on the I211).
	Queues int
	// PHYID overrides the internal PHY's identifier (PHYID1<<16 | PHYID2).
	PHYID uint32
	// PHYAddr is the PHY's MDIO address. 0: 1, as the internal PHY.
	PHYAddr int
	// AutonegDelay is the time from an autonegotiation restart to link up.
	// 0: sim.DefaultAutonegDelay.
	AutonegDelay time.Duration
	// BreakLink is how long the PHY keeps a link that was up down when its
	// autonegotiation restarts (sim.PHYConfig.BreakLink; sim.BreakLinkMin is
	// the standard's). 0: no break.
	BreakLink time.Duration
	// ResetDelay is how long a CTRL.RST lasts: register writes before it ends are
	// faults and EECD.AUTO_RD reads 0. 0: 1 ms; negative: instant.
	ResetDelay time.Duration
	// NonCoherent gives the device its own copy of memory (see sim.Memory).
	NonCoherent bool
	// Below4G places DMA memory below 4 GiB.
	Below4G bool
	// Unplugged starts with no cable.
	Unplugged bool
	// PartnerNo1000 makes the link partner 10/100 only.
	PartnerNo1000 bool
	// Left starts the device as Linux's igb leaves it (left.go) instead of
	// fresh out of reset. 0: power-on reset.
	Left sim.KernelLeft
	// SerDesPartnerForced: on a SerDes port, the fiber partner has
	// autonegotiation off (pcs.go). Unplugged there means no light.
	SerDesPartnerForced bool
	// NVMPCSAutonegOff sets the 82576 SerDes NVM's "PCS autonegotiation
	// disabled" bit (word 3 bit 14), which has Linux force the link.
	NVMPCSAutonegOff bool
	// Backplane wires a SerDes port for 1000BASE-KX (CTRL_EXT.LINK_MODE
	// 01b), whose partner never negotiates (pcs.go).
	Backplane bool
	// Name is the device name in nic.DeviceInfo. "": "igbsim".
	Name string
	// Sched sets the device side's latencies and seed (see sim.Sched): the
	// zero value runs transmission and MDI cycles a few microseconds after the
	// register write; Sync runs them inside it (benchmarks).
	Sched sim.SchedConfig
}

// Counters are the model's own totals (never cleared by register reads).
type Counters struct {
	RxFrames   uint64 // frames written to an RX ring
	RxBytes    uint64 // their bytes (without FCS)
	RxFiltered uint64 // dropped by the address filter
	RxMissed   uint64 // dropped: queue disabled or no free descriptor
	RxNoLink   uint64 // arrived while link down, RX disabled or DMA shut
	RxErrors   uint64 // undersize or oversize
	TxFrames   uint64 // frames put on the wire
	TxBytes    uint64
	TxDropped  uint64 // frames not sent because of a descriptor or DMA fault
	IRQs       uint64 // MSI-X messages sent
}

// rxQueue is one receive ring's registers. The driver writes the tail (RDT) and
// the model the head (RDH): descriptors [RDH, RDT) belong to the device.
type rxQueue struct {
	bal, bah, len, srrctl uint32
	head, tail, dctl, dca uint32
	rqdpc                 uint32
	baSet, lenSet         bool
	// fetched holds each descriptor as the device fetched it when an RDT
	// write handed it over (fetchedOK marks which), as for TX.
	fetched   []byte
	fetchedOK []bool
}

// txQueue is one transmit ring's registers. The driver writes the tail (TDT),
// the model the head (TDH): descriptors [TDH, TDT) are the device's to send.
type txQueue struct {
	bal, bah, len         uint32
	head, tail, dctl, dca uint32
	wbal, wbah            uint32
	baSet, lenSet         bool
	// fetched holds each descriptor as the device fetched it when a TDT
	// write handed it over (fetchedOK marks which); a descriptor that differs
	// when the device processes it was written after the tail. Sized when the
	// queue is enabled.
	fetched   []byte
	fetchedOK []bool

	// The context slots (IDX 0 and 1) as context descriptors loaded them,
	// cleared when the queue is enabled (txoffload.go). ahead: the descriptor
	// consumed last was a context, whose LaunchTime is aheadLT (what a timed
	// frame on an SR queue launches at). hold: gatherLocked found the frame at
	// TDH waiting for its launch time, this much longer.
	ctx     [2]txContext
	ahead   bool
	aheadLT uint32
	hold    time.Duration
}

func (q *rxQueue) base() uint64 { return uint64(q.bah)<<32 | uint64(q.bal) }
func (q *txQueue) base() uint64 { return uint64(q.bah)<<32 | uint64(q.bal) }

// Model is the 82576/I350/I210 as the driver sees it through BAR0. All register
// state is guarded by mu; transmit processing is serialised by txMu, which is
// taken before mu and held while frames go out (mu is not held then, so a wire
// that delivers synchronously into another model, or back into this one, cannot
// deadlock).
type Model struct {
	sim.ModelBase // the accessors every model shares, over the parts below (sim/modelbase.go)

	cfg    Config      // immutable after New
	info   devInfo     // immutable
	mac    [6]byte     // immutable factory address
	dev    *sim.Device // immutable
	mem    *sim.Memory // immutable
	faults *sim.Faults // immutable
	phy    *sim.PHY    // immutable
	nvm    [nvmWords]uint16

	sched  *sim.Sched // immutable: the device side's clock
	txT    *sim.Timer // immutable: the transmit engine's next step
	mdiT   *sim.Timer // immutable: the end of the running MDI cycle
	stampT *sim.Timer // immutable: TXSTMPL/H loading after a frame left (ptp.go)

	txMu    sync.Mutex
	txBatch []txFrame // scratch of transmit; guarded by txMu
	txArena []byte    // gathered multi-descriptor and padded frames; guarded by txMu

	mu         sync.Mutex
	closed     bool
	wire       sim.Wire // guarded by mu: where transmitted frames go
	gen        uint64   // bumps at every reset
	resetting  bool
	resetUntil time.Time
	txPend     uint32 // TX queues the engine has to look at
	mdiBusy    bool   // an MDI cycle runs (MDIC.READY clear)

	ctrl, ctrlExt, status, eecd, eerd, mdic uint32
	rctl, tctl, rxcsum, rlpml, mrqc         uint32
	swsm                                    uint32
	icr, ims                                uint32
	gpie, eicr, eims, eiac, eiam            uint32
	ivar                                    [8]uint32
	ivarMisc                                uint32
	eitr                                    []uint32
	lastFire                                []time.Time
	eitrTimer                               []*time.Timer
	eitrArmed                               []bool
	plain                                   map[reg]uint32
	rar                                     [32][2]uint32
	mta                                     [128]uint32
	reta                                    [128]byte
	rssKey                                  [rssKeyLen]byte
	rssTab                                  *toeplitzTable
	rssDirty                                bool
	rx                                      []rxQueue
	tx                                      []txQueue
	stats                                   [nStats]uint32
	cnt                                     Counters
	crcBuf                                  []byte        // RX scratch for frames with their FCS kept
	fifo                                    *sim.RxFIFO   // the receive packet buffer (rxfifo.go)
	inj                                     *sim.Injector // immutable: injected faults (fault.go)
	txBusErr                                bool          // a bus error stopped the TX DMA until a reset
	ptp                                     ptpState
	qav                                     qavState
	pcs                                     pcsState    // SerDes ports (pcs.go)
	pcsUp                                   atomic.Bool // pcs.up, lock-free for the line rate
}

// ErrConfig is wrapped by New for a configuration the model cannot build.
var ErrConfig = errors.New("igbsim: bad configuration")

// New builds a model in its power-on state: reset done, link down (the PHY
// negotiates only after software restarts autonegotiation), bus mastering off.
func New(cfg Config) (*Model, error) {
	if cfg.DeviceID == 0 {
		cfg.DeviceID = 0x10C9
	}
	info, ok := devices[cfg.DeviceID]
	if !ok {
		return nil, fmt.Errorf("igbsim: device ID 0x%04x is not an 82576, I350, I210 or I211: %w", cfg.DeviceID, ErrConfig)
	}
	if cfg.Queues == 0 {
		cfg.Queues = min(4, info.maxQueues)
	}
	if cfg.Queues < 1 || cfg.Queues > info.maxQueues {
		return nil, fmt.Errorf("igbsim: %d queues: the %s has 1 to %d: %w", cfg.Queues, info.name, info.maxQueues, ErrConfig)
	}
	m := &Model{cfg: cfg, info: info}
	mac, err := sim.FactoryMAC(cfg.MAC)
	if err != nil {
		return nil, fmt.Errorf("igbsim: %w: %w", err, ErrConfig)
	}
	m.mac = mac
	if cfg.PHYID == 0 {
		cfg.PHYID = info.phyID
	}
	if cfg.PHYAddr, err = sim.PHYAddr(cfg.PHYAddr); err != nil {
		return nil, fmt.Errorf("igbsim: %w: %w", err, ErrConfig)
	}
	if err := sim.CheckLeft("igbsim", cfg.Left, leftStates); err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrConfig)
	}
	if err := cfg.checkSerDes(info); err != nil {
		return nil, err
	}
	if cfg.ResetDelay == 0 {
		cfg.ResetDelay = time.Millisecond
	}
	if cfg.Name == "" {
		cfg.Name = "igbsim"
	}
	m.cfg = cfg
	m.faults = &sim.Faults{}
	m.mem = sim.NewMemory(sim.MemoryConfig{NonCoherent: cfg.NonCoherent, Below4G: cfg.Below4G}, m.faults)
	m.dev = sim.NewDevice(sim.DeviceConfig{
		Name: cfg.Name, Vendor: 0x8086, Device: cfg.DeviceID, SubVendor: 0x8086, SubDevice: 0x0000,
		Revision: 1, BARSize: 128 << 10, MSIXVectors: info.vectors,
	}, m.mem, m)
	m.mem.SetDeviceLock(&m.mu) // every device-side write happens under mu
	m.sched = sim.NewSched(cfg.Sched)
	m.txT = m.sched.NewTimer(m.txRun)
	m.mdiT = m.sched.NewTimer(m.mdiDone)
	m.stampT = m.sched.NewTimer(m.stampDone)
	m.phy = sim.NewPHY(sim.PHYConfig{
		Addr: cfg.PHYAddr, ID1: uint16(cfg.PHYID >> 16), ID2: uint16(cfg.PHYID),
		AutonegDelay: cfg.AutonegDelay, BreakLink: cfg.BreakLink, PartnerNo1000: cfg.PartnerNo1000, Unplugged: cfg.Unplugged,
		Faults: m.faults, StatStyle: phyStyle(info.fam),
	})
	// A link change raises LSC; it runs on its own goroutine because the PHY may
	// report it from inside an MDIC access, with mu held.
	m.phy.SetNotify(func(nic.LinkState) { go m.linkChanged() })
	m.inj = new(sim.Injector)
	m.dev.SetInjector(m.inj, m.phy) // fault.go
	m.wire.SetLineRate(m.mediaLink) // sim/linerate.go: frames at the negotiated speed
	m.wire.SetTxFIFO(txPBBytes)
	m.buildNVM()
	m.rx = make([]rxQueue, cfg.Queues)
	m.tx = make([]txQueue, cfg.Queues)
	m.eitr = make([]uint32, info.vectors)
	m.lastFire = make([]time.Time, info.vectors)
	m.eitrTimer = make([]*time.Timer, info.vectors)
	m.eitrArmed = make([]bool, info.vectors)
	m.crcBuf = make([]byte, tsHdrLen+maxTxFrame+4)
	m.txBatch = make([]txFrame, 0, txBatchMax)
	m.txArena = make([]byte, 0, 64<<10)
	m.InitBase(sim.ModelParts{Lock: &m.mu, Wire: &m.wire, Inject: m.Inject, Reset: m.resetFLR, MAC: m.mac, Device: m.dev,
		Memory: m.mem, PHY: m.phy, LineRate: m.mediaLink, Faults: m.faults, Injector: m.inj, Sched: m.sched, RegName: regName})
	m.mu.Lock()
	m.resetLocked(false)
	m.applyLeftLocked()
	m.mu.Unlock()
	return m, nil
}

// phyStyle is the internal PHY's status register layout: IGP on the 82576,
// Marvell-style on the I350 and I210.
func phyStyle(f family) sim.PHYStatStyle {
	if f == fam82576 {
		return sim.PHYStatIGP
	}
	return sim.PHYStatMarvell
}

// buildNVM fills the EEPROM image: the MAC in words 0-2 and a checksum word
// making words 0x00-0x3F sum to 0xBABA; on the I350, each port's LAN section
// the same way (nvmSections).
func (m *Model) buildNVM() {
	for n, base := range m.nvmSections() {
		mac := m.mac
		mac[5] += byte(n) // the other ports' addresses follow the first
		for i := 0; i < 3; i++ {
			m.nvm[base+i] = uint16(mac[2*i]) | uint16(mac[2*i+1])<<8
		}
		m.nvm[base+nvmCompat] = m.nvmCompatWord()
		var sum uint16
		for i := 0; i < nvmChecksumReg; i++ {
			sum += m.nvm[base+i]
		}
		m.nvm[base+nvmChecksumReg] = nvmSum - sum
	}
}

// Device is the model as a nic.Device, for a driver.
func (m *Model) Device() nic.Device { return m.dev }

// Counters returns the model's own totals.
func (m *Model) Counters() Counters {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cnt
}

// Close detaches the wire and closes the device (memory unmapped, vectors torn down).
func (m *Model) Close() error {
	return m.CloseBase(func() {
		m.mu.Lock()
		m.closed = true
		for _, t := range m.eitrTimer {
			if t != nil {
				t.Stop()
			}
		}
		m.mu.Unlock()
	})
}

// resetFLR is the function-level reset (sim.Model's Reset, through
// sim.ModelBase): registers return to their reset values as with CTRL.RST,
// but the reset is over at once.
func (m *Model) resetFLR() { m.resetLocked(false) }

// resetLocked puts every register at its reset value. With delay, the reset
// lasts ResetDelay: writes fault and EECD.AUTO_RD reads 0 until it ends.
func (m *Model) resetLocked(delay bool) {
	m.gen++
	m.wire.TxIdle()
	m.ctrl = ctrlFD | ctrlSpeed1000
	m.ctrlExt = m.ctrlExtResetValue() | m.ctrlExt&m.keptCtrlExt() // pcs.go
	m.status = statusPHYRA | statusLANInit
	m.eecd = eecdPres | eecdAutoRD | eecdSize
	if m.hasFlash() {
		m.eecd |= eecdFlashI210
	}
	m.eerd, m.mdic, m.mdiBusy = 0, mdicReady, false
	m.rctl, m.tctl = 0, tctlDefault
	m.rxcsum, m.rlpml, m.mrqc = 0, rlpmlDefault, 0
	m.swsm = 0
	m.icr, m.ims = 0, 0
	m.gpie, m.eicr, m.eims, m.eiac, m.eiam = 0, 0, 0, 0, 0
	m.ivar = [8]uint32{}
	m.ivarMisc = 0
	for i := range m.eitr {
		m.eitr[i] = 0
		m.lastFire[i] = time.Time{}
		m.eitrArmed[i] = false
		if m.eitrTimer[i] != nil {
			m.eitrTimer[i].Stop()
		}
	}
	m.plain = map[reg]uint32{}
	m.rar = [32][2]uint32{}
	m.rar[0][0] = uint32(m.mac[0]) | uint32(m.mac[1])<<8 | uint32(m.mac[2])<<16 | uint32(m.mac[3])<<24
	m.rar[0][1] = uint32(m.mac[4]) | uint32(m.mac[5])<<8 | rahAV
	m.mta = [128]uint32{}
	m.reta = [128]byte{}
	m.rssKey = [rssKeyLen]byte{}
	m.rssDirty = true
	m.ptp.reset(m.info.fam == famI210, m.info.fam == famI350)
	m.qav = qavState{}
	m.resetPCSLocked()
	for i := range m.rx {
		m.rx[i] = rxQueue{srrctl: srrctlDefault}
	}
	for i := range m.tx {
		m.tx[i] = txQueue{}
	}
	m.stats = [nStats]uint32{}
	m.txBusErr = false
	m.inj.DeviceReset() // a reset ends a hang, a stall, a dead PHY (fault.go)
	if m.fifo != nil {
		m.fifo.Flush() // a reset empties the packet buffer
	}
	m.resetting = false
	if delay && m.cfg.ResetDelay > 0 {
		m.resetting = true
		m.resetUntil = time.Now().Add(m.cfg.ResetDelay)
		m.eecd &^= eecdAutoRD
	}
}

// inResetLocked reports whether a reset is still in progress, ending it when
// its time has passed.
func (m *Model) inResetLocked() bool {
	if !m.resetting {
		return false
	}
	if time.Now().Before(m.resetUntil) {
		return true
	}
	m.resetting = false
	m.eecd |= eecdAutoRD
	return false
}

// linkUpLocked is STATUS.LU: the PHY's link (the PCS's on a SerDes port,
// pcs.go), seen by the MAC only with CTRL.SLU (82576 datasheet 3.5.4: with the
// internal PHY, SLU must be set) and not in reset.
func (m *Model) linkUpLocked() bool {
	return m.ctrl&ctrlSLU != 0 && !m.resetting && m.mediaLinkUp()
}

// linkChanged raises the link status change cause.
func (m *Model) linkChanged() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.icr |= icrLSC
	m.raiseOtherLocked()
	m.mu.Unlock()
}

// Read32 implements sim.Model.
func (m *Model) Read32(off uint32) uint32 {
	return m.ReadReg(func() uint32 { return m.readLocked(off) })
}

// Write32 implements sim.Model.
func (m *Model) Write32(off, val uint32) {
	m.WriteRegOutOfReset(&m.txPend, m.txT, off, val, m.inResetLocked, "the device is in reset (wait for EECD.AUTO_RD)",
		func() uint32 { return m.writeLocked(off, val) })
}

// readLocked returns register off. Reads have the side effects the datasheet
// gives them (clear on read, semaphore acquisition).
func (m *Model) readLocked(off uint32) uint32 {
	if q, r, isRX, ok := m.queueReg(off); ok {
		return m.readQueueLocked(q, r, isRX, off)
	}
	if v, ok := m.readPTPLocked(off); ok {
		return v
	}
	if v, ok := m.readQavLocked(off); ok {
		return v
	}
	if v, ok := m.readVariantLocked(off); ok {
		return v
	}
	if v, ok := m.readPCSLocked(off); ok {
		return v
	}
	switch off {
	case regCTRL:
		v := m.ctrl
		if m.inResetLocked() {
			v |= ctrlRST
		}
		return v
	case regSTATUS:
		return m.statusLocked()
	case regEECD:
		m.inResetLocked()
		return m.eecd
	case regEERD:
		return m.eerd
	case regCTRLEXT:
		return m.ctrlExt
	case regMDIC:
		return m.mdic
	case regICR:
		v := m.icr
		m.icr = 0
		return v
	case regICS, regIMC, regEICS, regEIMC:
		m.faults.Add("read32", regName(off), uint64(off), "read of a write-only register")
		return 0
	case regIMS:
		return m.ims
	case regRCTL:
		return m.rctl
	case regTCTL:
		return m.tctl
	case regGPIE:
		return m.gpie
	case regEIMS:
		return m.eims
	case regEIAC:
		return m.eiac
	case regEIAM:
		return m.eiam
	case regEICR:
		v := m.eicr
		m.eicr = 0
		return v
	case regIVARMISC:
		return m.ivarMisc
	case regRXCSUM:
		return m.rxcsum
	case regRLPML:
		return m.rlpml
	case regMRQC:
		return m.mrqc
	case regSWSM:
		v := m.swsm
		m.swsm |= swsmSMBI // reading acquires the SMBI semaphore
		return v
	case regEEMNGCTL, regEEMNGI210:
		return eemngCfgDone
	}
	switch {
	case off >= regStatsBase && off < regStatsEnd:
		return m.readStatLocked(int(off-regStatsBase) / 4)
	case off >= regEITR0 && off < regEITR0+4*uint32(len(m.eitr)):
		return m.eitr[(off-regEITR0)/4]
	case off >= regIVAR0 && off < regIVAR0+8*4:
		return m.ivar[(off-regIVAR0)/4]
	case off >= regMTA && off < regMTA+128*4:
		return m.mta[(off-regMTA)/4]
	case off >= regRETA && off < regRETA+32*4:
		i := (off - regRETA)
		return uint32(m.reta[i]) | uint32(m.reta[i+1])<<8 | uint32(m.reta[i+2])<<16 | uint32(m.reta[i+3])<<24
	case off >= regRSSRK && off < regRSSRK+rssKeyLen:
		i := off - regRSSRK
		return le.Uint32(m.rssKey[i : i+4])
	}
	if n, hi, ok := m.rarIndex(off); ok {
		return m.rar[n][hi]
	}
	if m.isPlain(off) {
		return m.plain[off]
	}
	m.Unimplemented("read32", off)
	return 0
}

func (m *Model) statusLocked() uint32 {
	v := m.status
	if m.ctrl&ctrlGIOMasterDi == 0 {
		v |= statusGIOMasterE
	}
	if m.linkUpLocked() {
		st := m.mediaLink()
		v |= statusLU
		if st.FullDuplex {
			v |= statusFD
		}
		switch st.SpeedMbps {
		case 1000:
			v |= statusSpeed1000
		case 100:
			v |= statusSpeed100
		}
	}
	return v
}

func (m *Model) isPlain(off uint32) bool {
	if _, ok := plainRegs[off]; ok {
		return true
	}
	for _, r := range plainRanges {
		if off >= r.start && off < r.end {
			return true
		}
	}
	return false
}

// rarIndex decodes a receive address register: entry n, word hi (0 RAL, 1 RAH).
func (m *Model) rarIndex(off uint32) (n int, hi int, ok bool) {
	switch {
	case off >= regRA && off < regRA+16*8:
		n = int(off-regRA) / 8
	case off >= regRA2 && off < regRA2+16*8:
		n = 16 + int(off-regRA2)/8
	default:
		return 0, 0, false
	}
	if n >= m.info.rar {
		return 0, 0, false
	}
	return n, int(off&4) / 4, true
}

// queueReg decodes a queue register: queue q, offset r inside the block.
func (m *Model) queueReg(off uint32) (q int, r uint32, isRX bool, ok bool) {
	switch {
	case off >= rxBlockLow && off < rxBlockLow+4*blockLowLen:
		q, r, isRX = int(off-rxBlockLow)/blockLowLen, (off-rxBlockLow)%blockLowLen, true
	case off >= txBlockLow && off < txBlockLow+4*blockLowLen:
		q, r = int(off-txBlockLow)/blockLowLen, (off-txBlockLow)%blockLowLen
	case off >= rxBlockHigh && off < rxBlockHigh+16*blockHighLn:
		q, r, isRX = int(off-rxBlockHigh)/blockHighLn, (off-rxBlockHigh)%blockHighLn, true
	case off >= txBlockHigh && off < txBlockHigh+16*blockHighLn:
		q, r = int(off-txBlockHigh)/blockHighLn, (off-txBlockHigh)%blockHighLn
	default:
		return 0, 0, false, false
	}
	if q >= len(m.rx) {
		return 0, 0, false, false // a queue this model does not have: unimplemented
	}
	return q, r, isRX, true
}

func (m *Model) readQueueLocked(q int, r uint32, isRX bool, off uint32) uint32 {
	if v, ok := m.readDVMOLRLocked(q, r, isRX, off); ok {
		return v
	}
	if isRX {
		x := &m.rx[q]
		switch r {
		case qBAL:
			return x.bal
		case qBAH:
			return x.bah
		case qLEN:
			return x.len
		case qSRRCTL:
			return x.srrctl
		case qHead:
			return x.head
		case qDCA:
			return x.dca
		case qTail:
			return x.tail
		case qDCTL:
			return x.dctl
		case qRQDPC:
			v := x.rqdpc
			if m.rqdpcClearsOnRead() {
				x.rqdpc = 0
			}
			return v
		}
	} else {
		x := &m.tx[q]
		switch r {
		case qBAL:
			return x.bal
		case qBAH:
			return x.bah
		case qLEN:
			return x.len
		case qHead:
			return x.head
		case qDCA:
			return x.dca
		case qTail:
			return x.tail
		case qDCTL:
			return x.dctl
		case qTDWBAL:
			return x.wbal
		case qTDWBAH:
			return x.wbah
		}
	}
	m.Unimplemented("read32", off)
	return 0
}

// writeLocked applies a register write. It returns a bit mask of TX queues to
// run (outside mu).
func (m *Model) writeLocked(off, val uint32) (kick uint32) {
	if q, r, isRX, ok := m.queueReg(off); ok {
		if isRX {
			m.writeRxQueueLocked(q, r, off, val)
			return 0
		}
		return m.writeTxQueueLocked(q, r, off, val)
	}
	if m.writePTPLocked(off, val) || m.writeQavLocked(off, val) || m.writeVariantLocked(off, val) || m.writePCSLocked(off, val) {
		return 0
	}
	switch off {
	case regCTRL:
		m.writeCtrlLocked(val)
		return 0
	case regSTATUS:
		if val&statusPHYRA == 0 {
			m.status &^= statusPHYRA
		}
		return 0
	case regEECD:
		m.eecd = m.eecd&(eecdPres|eecdAutoRD|eecdFlashI210|eecdSize) | val&^(eecdPres|eecdAutoRD|eecdFlashI210|eecdSize)
		return 0
	case regEERD:
		m.writeEERDLocked(val)
		return 0
	case regCTRLEXT:
		m.writeCtrlExtLocked(val) // pcs.go
		return 0
	case regMDIC:
		m.writeMDICLocked(val)
		return 0
	case regICR:
		m.icr &^= val
		return 0
	case regICS:
		m.icr |= val
		m.raiseOtherLocked()
		return 0
	case regIMS:
		m.ims |= val
		m.raiseOtherLocked()
		return 0
	case regIMC:
		m.ims &^= val
		return 0
	case regRCTL:
		m.rctl = val
		return 0
	case regTCTL:
		was := m.tctl
		m.tctl = val
		if was&tctlEN == 0 && val&tctlEN != 0 {
			return m.pendingTxLocked()
		}
		return 0
	case regGPIE:
		m.gpie = val
		return 0
	case regEICS:
		m.eicr |= val
		m.evaluateLocked(val)
		return 0
	case regEIMS:
		m.eims |= val
		m.evaluateLocked(val)
		return 0
	case regEIMC:
		m.eims &^= val
		return 0
	case regEIAC:
		m.eiac = val
		return 0
	case regEIAM:
		m.eiam = val
		return 0
	case regEICR:
		m.eicr &^= val // write 1 to clear
		return 0
	case regIVARMISC:
		m.ivarMisc = val
		m.checkIVARLocked(off, val)
		return 0
	case regRXCSUM:
		m.rxcsum = val
		return 0
	case regRLPML:
		m.rlpml = val & 0x3FFF
		return 0
	case regMRQC:
		if e := val & mrqcMRQEMask; e != 0 && e != mrqcRSS {
			m.faults.Add("write32", "MRQC", uint64(off), "MRQE=%d (VMDq modes) is not modelled: use 0 or 2 (RSS)", e)
			return 0
		}
		m.mrqc = val
		return 0
	case regSWSM:
		m.swsm = val & (swsmSMBI | swsmSWESMBI)
		return 0
	case regEEMNGCTL, regEEMNGI210:
		return 0 // CFG_DONE bits are read-only; the rest is not modelled
	}
	switch {
	case off >= regStatsBase && off < regStatsEnd:
		m.faults.Add("write32", regName(off), uint64(off), "write to a read-only statistics register")
		return 0
	case off >= regEITR0 && off < regEITR0+4*uint32(len(m.eitr)):
		m.eitr[(off-regEITR0)/4] = val
		return 0
	case off >= regIVAR0 && off < regIVAR0+8*4:
		m.ivar[(off-regIVAR0)/4] = val
		m.checkIVARLocked(off, val)
		return 0
	case off >= regMTA && off < regMTA+128*4:
		m.mta[(off-regMTA)/4] = val
		return 0
	case off >= regRETA && off < regRETA+32*4:
		i := off - regRETA
		for k := uint32(0); k < 4; k++ {
			e := byte(val >> (8 * k))
			if int(e&0xF) >= len(m.rx) {
				m.faults.Add("write32", regName(off), uint64(off), "RETA entry %d names queue %d of %d", i+k, e&0xF, len(m.rx))
			}
			m.reta[i+k] = e
		}
		return 0
	case off >= regRSSRK && off < regRSSRK+rssKeyLen:
		i := off - regRSSRK
		le.PutUint32(m.rssKey[i:i+4], val)
		m.rssDirty = true
		return 0
	}
	if n, hi, ok := m.rarIndex(off); ok {
		m.rar[n][hi] = val
		if hi == 1 && val&rahAV != 0 && val&rahASELMask != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "RAH.ASEL=%d (source address match) is not modelled", (val&rahASELMask)>>16)
		}
		return 0
	}
	if m.isPlain(off) {
		m.plain[off] = val
		return 0
	}
	m.Unimplemented("write32", off)
	return 0
}

func (m *Model) writeCtrlLocked(val uint32) {
	if val&(ctrlRST|ctrlDEVRST) != 0 {
		m.resetLocked(true) // RST self-clears when the reset is over
		return
	}
	if val&ctrlPHYRST != 0 {
		val &^= ctrlPHYRST
		m.status |= statusPHYRA
		// The PHY reports link changes on another goroutine: safe under mu.
		m.phy.Write(sim.MIIBMCR, sim.BMCRReset)
	}
	m.ctrl = val
	m.pcsCtrlWrittenLocked(val)
}

func (m *Model) writeEERDLocked(val uint32) {
	if val&eerdStart == 0 {
		m.eerd = val
		return
	}
	addr := (val >> eerdAddrShift) & 0x3FFF
	if int(addr) >= nvmWords {
		m.faults.Add("write32", "EERD", uint64(regEERD), "NVM read of word 0x%x beyond the %d-word image", addr, nvmWords)
		m.eerd = val&^eerdStart | eerdDone
		return
	}
	m.eerd = uint32(m.nvm[addr])<<eerdDataShift | addr<<eerdAddrShift | eerdDone
}

// writeMDICLocked starts an MDI cycle; it completes (mdiDone) after the
// device side's latency, with READY (on the hardware some 64 MDC cycles). A
// write while a cycle runs is refused: software polls READY first (Linux
// igb_read_phy_reg_mdic). A PHY address other than the internal PHY's answers
// with ERROR.
func (m *Model) writeMDICLocked(val uint32) {
	if m.mdiBusy {
		m.faults.Add("write32", "MDIC", uint64(regMDIC), "MDIC 0x%08x written while the previous MDI cycle is still running (READY clear): poll MDIC.READY first; the write is refused", val)
		return
	}
	m.mdiBusy = true
	m.mdic = val &^ (mdicReady | mdicError)
	m.mdiT.Arm()
}

// mdiDone ends the MDI cycle MDIC holds (the mdiT timer).
func (m *Model) mdiDone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mdiBusy {
		return // cut off by a reset
	}
	m.mdiBusy = false
	m.mdiCycleLocked(m.mdic)
}

// mdiCycleLocked performs the MDI cycle val and sets READY.
func (m *Model) mdiCycleLocked(val uint32) {
	phyAddr := int(val>>mdicPHYShift) & 0x1F
	regNum := int(val>>mdicRegShift) & 0x1F
	op := val & mdicOpMask
	if m.noMDIOPHYLocked(val) { // pcs.go: a SerDes port has no PHY on MDIO
		return
	}
	switch {
	case op != mdicOpRead && op != mdicOpWrite:
		m.faults.Add("write32", "MDIC", uint64(regMDIC), "MDIC opcode %d is neither read (2) nor write (1)", op>>26)
		m.mdic = val | mdicReady | mdicError
	case phyAddr != m.phy.Addr():
		m.mdic = val | mdicReady | mdicError
	case op == mdicOpRead:
		// The PHY's lock is taken inside; it never calls back into the model
		// synchronously (link changes are reported on another goroutine).
		d := uint32(m.phy.Read(regNum))
		m.mdic = val&^(mdicDataMask|mdicError) | d | mdicReady
	default:
		m.phy.Write(regNum, uint16(val))
		m.mdic = val&^mdicError | mdicReady
	}
}

func (m *Model) checkIVARLocked(off, val uint32) {
	for k := 0; k < 4; k++ {
		e := val >> (8 * k) & 0xFF
		if e&ivarValid != 0 && int(e&ivarVecMask) >= m.info.vectors {
			m.faults.Add("write32", regName(off), uint64(off), "IVAR entry maps a cause to vector %d; the %s has %d", e&ivarVecMask, m.info.name, m.info.vectors)
		}
	}
}

// writeRxQueueLocked applies a write to an RX queue register, refusing what the
// datasheet forbids or leaves undefined.
func (m *Model) writeRxQueueLocked(q int, r, off, val uint32) {
	x := &m.rx[q]
	enabled := x.dctl&dctlEnable != 0
	switch r {
	case qBAL, qBAH, qLEN, qSRRCTL:
		if enabled {
			m.faults.Add("write32", regName(off), uint64(off), "ring configuration changed while RX queue %d is enabled", q)
			return
		}
	}
	switch r {
	case qBAL:
		if val%ringAlign != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "RX ring base 0x%x not 128-byte aligned", val)
			return
		}
		x.bal, x.baSet = val, true
	case qBAH:
		x.bah, x.baSet = val, x.baSet || val != 0
	case qLEN:
		if val == 0 || val%ringAlign != 0 || val > maxRingLen {
			m.faults.Add("write32", regName(off), uint64(off), "RX ring length %d: want a non-zero multiple of 128 up to %d", val, maxRingLen)
			return
		}
		x.len, x.lenSet = val, true
	case qSRRCTL:
		x.srrctl = val
	case qHead:
		if enabled {
			m.faults.Add("write32", regName(off), uint64(off), "RDH written while RX queue %d is enabled (the device owns the head)", q)
			return
		}
		if x.len == 0 || val >= x.len/descSize {
			m.faults.Add("write32", regName(off), uint64(off), "RDH %d outside the ring (%d descriptors)", val, x.len/descSize)
			return
		}
		x.head = val
	case qTail:
		if x.len == 0 || val >= x.len/descSize {
			m.faults.Add("write32", regName(off), uint64(off), "RDT %d written beyond the ring (%d descriptors)", val, x.len/descSize)
			return
		}
		old := x.tail
		x.tail = val
		if enabled {
			m.fetchLocked(x.fetched, x.fetchedOK, x.base(), x.len, old, val)
			m.drainRxFIFOLocked(nil) // rxfifo.go: waiting frames take the new descriptors
		}
	case qDCA:
		x.dca = val
	case qDCTL:
		if val&dctlEnable != 0 && !enabled && !m.checkRingLocked("RX", q, off, x.base(), x.len, x.baSet, x.lenSet) {
			return
		}
		if val&dctlEnable != 0 && !enabled {
			if x.srrctl&srrctlDescType != srrctlAdvOneBuf {
				m.faults.Add("write32", regName(off), uint64(off), "RX queue %d enabled with SRRCTL.DESCTYPE %d: only advanced one-buffer (1) is modelled", q, (x.srrctl&srrctlDescType)>>25)
				return
			}
			if x.srrctl&srrctlTimestamp != 0 && !m.bufferStampOK() {
				m.faults.Add("write32", regName(off), uint64(off), "RX queue %d enabled with SRRCTL.TIMESTAMP: the 82576 has no timestamp in the buffer", q)
				return
			}
			if x.srrctl&srrctlBSizeMask == 0 {
				m.faults.Add("write32", regName(off), uint64(off), "RX queue %d enabled with SRRCTL.BSIZEPKT 0", q)
				return
			}
			if n := int(x.len / descSize); len(x.fetchedOK) != n {
				x.fetched, x.fetchedOK = make([]byte, n*descSize), make([]bool, n)
			} else {
				clear(x.fetchedOK)
			}
		}
		x.dctl = val // ENABLE reads back at once
	case qRQDPC:
		if m.rqdpcClearsOnRead() {
			m.faults.Add("write32", regName(off), uint64(off), "write to RQDPC, a clear-on-read counter on the %s", m.info.name)
			return
		}
		x.rqdpc = val // I210: software clears it by writing (variant.go)
	default:
		if !m.writeDVMOLRLocked(q, r, off, val) {
			m.Unimplemented("write32", off)
		}
	}
}

// checkRingLocked validates a ring at enable time.
func (m *Model) checkRingLocked(kind string, q int, off uint32, base uint64, length uint32, baSet, lenSet bool) bool {
	switch {
	case !baSet || !lenSet:
		m.faults.Add("write32", regName(off), uint64(off), "%s queue %d enabled before its base and length were set", kind, q)
	case base%ringAlign != 0:
		m.faults.Add("write32", regName(off), uint64(off), "%s queue %d ring base 0x%x not 128-byte aligned", kind, q, base)
	case m.mem.Check(base, int(length)) != nil:
		m.faults.Add("write32", regName(off), uint64(off), "%s queue %d ring [0x%x, +%d) is not mapped for the device", kind, q, base, length)
	default:
		return true
	}
	return false
}

func (m *Model) writeTxQueueLocked(q int, r, off, val uint32) (kick uint32) {
	x := &m.tx[q]
	enabled := x.dctl&dctlEnable != 0
	switch r {
	case qBAL, qBAH, qLEN:
		if enabled {
			m.faults.Add("write32", regName(off), uint64(off), "ring configuration changed while TX queue %d is enabled", q)
			return 0
		}
	}
	switch r {
	case qBAL:
		if val%ringAlign != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "TX ring base 0x%x not 128-byte aligned", val)
			return 0
		}
		x.bal, x.baSet = val, true
	case qBAH:
		x.bah, x.baSet = val, x.baSet || val != 0
	case qLEN:
		if val == 0 || val%ringAlign != 0 || val > maxRingLen {
			m.faults.Add("write32", regName(off), uint64(off), "TX ring length %d: want a non-zero multiple of 128 up to %d", val, maxRingLen)
			return 0
		}
		x.len, x.lenSet = val, true
	case qHead:
		if enabled {
			m.faults.Add("write32", regName(off), uint64(off), "TDH written while TX queue %d is enabled (the device owns the head)", q)
			return 0
		}
		if x.len == 0 || val >= x.len/descSize {
			m.faults.Add("write32", regName(off), uint64(off), "TDH %d outside the ring (%d descriptors)", val, x.len/descSize)
			return 0
		}
		x.head = val
	case qTail:
		if x.len == 0 || val >= x.len/descSize {
			m.faults.Add("write32", regName(off), uint64(off), "TDT %d written beyond the ring (%d descriptors)", val, x.len/descSize)
			return 0
		}
		old := x.tail
		x.tail = val
		if enabled {
			m.fetchTxLocked(x, old, val)
		}
		if enabled && m.tctl&tctlEN != 0 {
			if m.ctrl&ctrlGIOMasterDi != 0 {
				m.faults.Add("write32", regName(off), uint64(off), "TDT written while CTRL.GIO_MASTER_DISABLE blocks DMA")
				return 0
			}
			return 1 << q
		}
	case qDCA:
		x.dca = val
	case qDCTL:
		if val&dctlEnable != 0 && !enabled {
			if !m.checkRingLocked("TX", q, off, x.base(), x.len, x.baSet, x.lenSet) {
				return 0
			}
			if n := int(x.len / descSize); len(x.fetchedOK) != n {
				x.fetched, x.fetchedOK = make([]byte, n*descSize), make([]bool, n)
			} else {
				clear(x.fetchedOK)
			}
			x.ctx, x.ahead, x.hold = [2]txContext{}, false, 0 // contexts must be loaded again
			x.dctl = val
			if m.tctl&tctlEN != 0 && x.head != x.tail {
				return 1 << q
			}
			return 0
		}
		x.dctl = val
	case qTDWBAL:
		if val&tdwbalEnable != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "TX head write-back is not modelled")
			return 0
		}
		x.wbal = val
	case qTDWBAH:
		x.wbah = val
	default:
		m.Unimplemented("write32", off)
	}
	return 0
}

// pendingTxLocked is the mask of enabled TX queues with descriptors to send.
func (m *Model) pendingTxLocked() (mask uint32) {
	for i := range m.tx {
		if m.tx[i].dctl&dctlEnable != 0 && m.tx[i].head != m.tx[i].tail {
			mask |= 1 << i
		}
	}
	return mask
}

// regNames are the fixed registers with side effects, for fault messages.
var regNames = map[uint32]string{
	regCTRL: "CTRL", regSTATUS: "STATUS", regEECD: "EECD", regEERD: "EERD", regCTRLEXT: "CTRL_EXT",
	regMDIC: "MDIC", regICR: "ICR", regICS: "ICS", regIMS: "IMS", regIMC: "IMC", regRCTL: "RCTL",
	regTCTL: "TCTL", regGPIE: "GPIE", regEICS: "EICS", regEIMS: "EIMS", regEIMC: "EIMC",
	regEIAC: "EIAC", regEIAM: "EIAM", regEICR: "EICR", regIVARMISC: "IVAR_MISC", regRXCSUM: "RXCSUM",
	regRLPML: "RLPML", regMRQC: "MRQC", regSWSM: "SWSM", regEEMNGCTL: "EEMNGCTL",
}

var (
	rxNames = map[uint32]string{qBAL: "RDBAL", qBAH: "RDBAH", qLEN: "RDLEN", qSRRCTL: "SRRCTL", qHead: "RDH", qDCA: "DCA_RXCTRL", qTail: "RDT", qDCTL: "RXDCTL", qRQDPC: "RQDPC"}
	txNames = map[uint32]string{qBAL: "TDBAL", qBAH: "TDBAH", qLEN: "TDLEN", qHead: "TDH", qDCA: "DCA_TXCTRL", qTail: "TDT", qDCTL: "TXDCTL", qTDWBAL: "TDWBAL", qTDWBAH: "TDWBAH"}
)

// regName names a register for fault messages (rare path: it allocates).
func regName(off uint32) string {
	if n, ok := regNames[off]; ok {
		return n
	}
	if n, ok := plainRegs[off]; ok {
		return n
	}
	var q, r uint32
	var tab map[uint32]string
	switch {
	case off >= rxBlockLow && off < rxBlockLow+4*blockLowLen:
		q, r, tab = (off-rxBlockLow)/blockLowLen, (off-rxBlockLow)%blockLowLen, rxNames
	case off >= txBlockLow && off < txBlockLow+4*blockLowLen:
		q, r, tab = (off-txBlockLow)/blockLowLen, (off-txBlockLow)%blockLowLen, txNames
	case off >= rxBlockHigh && off < rxBlockHigh+16*blockHighLn:
		q, r, tab = (off-rxBlockHigh)/blockHighLn, (off-rxBlockHigh)%blockHighLn, rxNames
	case off >= txBlockHigh && off < txBlockHigh+16*blockHighLn:
		q, r, tab = (off-txBlockHigh)/blockHighLn, (off-txBlockHigh)%blockHighLn, txNames
	}
	if tab != nil {
		if n, ok := tab[r]; ok {
			return fmt.Sprintf("%s(%d)", n, q)
		}
		return fmt.Sprintf("queue %d +0x%x", q, r)
	}
	switch {
	case off >= regStatsBase && off < regStatsEnd:
		return fmt.Sprintf("STATS+0x%x", off-regStatsBase)
	case off >= regEITR0 && off < regEITR0+0x100:
		return fmt.Sprintf("EITR(%d)", (off-regEITR0)/4)
	case off >= regIVAR0 && off < regIVAR0+0x20:
		return fmt.Sprintf("IVAR(%d)", (off-regIVAR0)/4)
	case off >= regRETA && off < regRETA+0x80:
		return fmt.Sprintf("RETA(%d)", (off-regRETA)/4)
	case off >= regRSSRK && off < regRSSRK+0x28:
		return fmt.Sprintf("RSSRK(%d)", (off-regRSSRK)/4)
	case off >= regRA && off < regRA+0x80:
		return fmt.Sprintf("RA(%d)", (off-regRA)/8)
	case off >= regMTA && off < regMTA+0x200:
		return fmt.Sprintf("MTA(%d)", (off-regMTA)/4)
	}
	return ""
}
