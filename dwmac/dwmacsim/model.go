package dwmacsim

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// Variant is the integration of the IP the model presents.
type Variant uint8

const (
	// IntelMGbE is the Intel mGbE (Alder Lake-S 8086:7AAC by default): a PCI
	// function with bus mastering, 32 MSI-X vectors (RX channel i on 2i, TX
	// channel i on 2i+1 with DMA_Mode.INTM = 1), an xPCS at MDIO address 0x16.
	IntelMGbE Variant = iota
	// IMX8MP is the NXP i.MX8M Plus EQOS: a platform device
	// ("nxp,imx8mp-dwmac-eqos") with no PCI configuration space, one interrupt
	// line (macirq), 34 address bits and, on the real SoC, no cache coherency.
	IMX8MP
)

func (v Variant) String() string {
	switch v {
	case IntelMGbE:
		return "Intel mGbE"
	case IMX8MP:
		return "i.MX8MP EQOS"
	}
	return fmt.Sprintf("Variant(%d)", uint8(v))
}

// Config describes the modelled device. The zero value is an Alder Lake-S mGbE.
type Config struct {
	Variant Variant
	// SNPSVER is MAC_Version[7:0]: 0x40 (4.00) ... 0x52 (5.20). 0: 0x52 on
	// IntelMGbE, 0x51 on IMX8MP. Below 0x41 the interrupt enable register has
	// the 4.00 layout (NIE bit 16, AIE bit 15).
	SNPSVER uint8
	// PCIDevice is the PCI device ID (vendor 8086) of an IntelMGbE. 0: 0x7AAC.
	PCIDevice uint16
	// MAC is the address firmware left in MAC_Address0 at power-on (a DMA
	// software reset clears it to all ones). nil: 02:00:00:00:00:01.
	MAC net.HardwareAddr
	// Channels is the number of DMA channels and MTL queues each way (1-8).
	// 0: RxChannels and TxChannels, or the part's own counts: on IntelMGbE
	// those dwmac-intel gives the PCI ID (LookupIntel: 8/8 on Elkhart Lake,
	// 6 RX and 4 TX on Tiger, Alder and Raptor Lake), 5 each way on IMX8MP.
	Channels int
	// RxChannels and TxChannels set the two directions apart (1-8 each;
	// with Channels 0). 0: as above.
	RxChannels, TxChannels int
	// PHYID is the PHY's identifier (PHYID1<<16 | PHYID2). 0: a Marvell 88E1512
	// (0x01410DD0) on IntelMGbE, a Realtek RTL8211F (0x001CC916) on IMX8MP.
	PHYID uint32
	// PHYAddr is the PHY's MDIO address (1-31; 0 selects 1).
	PHYAddr int
	// AutonegDelay is the PHY's autonegotiation time. 0: sim.DefaultAutonegDelay.
	AutonegDelay time.Duration
	// BreakLink is how long the PHY keeps a link that was up down when its
	// autonegotiation restarts (sim.PHYConfig.BreakLink; sim.BreakLinkMin is
	// the standard's). 0: no break.
	BreakLink time.Duration
	// ResetDelay is how long a DMA software reset takes once the RX clock runs.
	// 0: 200 µs; negative: over at the next access.
	ResetDelay time.Duration
	// NonCoherent gives the device its own copy of memory, reconciled only by
	// Sync (the i.MX8MP EQOS is not cache-coherent).
	NonCoherent bool
	// Cache, when set, makes the non-coherent memory sim's CPU cache model
	// (whole lines, seeded evictions; implies NonCoherent).
	Cache *sim.CacheConfig
	// Below4G places DMA memory below 4 GiB (IOVAs from 0x1000_0000), for
	// drivers or tests that run without DMA_SysBus_Mode.EAME.
	Below4G bool
	// NoRxClock models a PHY that provides no RX clock (powered down, in reset,
	// or a SerDes not powered): DMA_Mode.SWR then never clears.
	NoRxClock bool
	// NoXPCS removes the xPCS an IntelMGbE has at MDIO address 0x16.
	NoXPCS bool
	// NoTxCOE models a core synthesized without the TX checksum offload
	// engine: HW_FEATURE0.TXCOESEL reads 0 and a descriptor asking for
	// checksum insertion (TDES3.CIC) is a fault. Both variants have it
	// (stmmac's dma_cap.tx_coe on the Intel mGbE and the i.MX8MP EQOS).
	NoTxCOE bool
	// NoTxCOEQueues has bit q set for each TX queue q synthesized without
	// the checksum engine, as a devicetree's "snps,coe-unsupported" says of
	// some cores (stmmac_mtl_setup; stmmac_xmit then checksums in
	// software). CIC on such a queue is a fault: the frame leaves without
	// the checksum.
	NoTxCOEQueues uint32
	// NoRxCOE models a core without the RX checksum offload engine:
	// HW_FEATURE0.RXCOESEL reads 0 and MAC_Configuration.IPC stays 0. Both
	// variants have it (rxcoe.go).
	NoRxCOE bool
	// PTPClockHz is the PTP reference clock (clk_ptp_ref). 0: 200 MHz on
	// IntelMGbE (dwmac-intel's clk_ptp_rate), 100 MHz on IMX8MP (the
	// ENET_QOS_TIMER rate imx8mp.dtsi assigns).
	PTPClockHz int
	// SystemClockHz is the clock the RX interrupt watchdog counts (Linux's
	// stmmac_clk). 0: 200 MHz on IntelMGbE, 266 MHz on IMX8MP (coalesce.go).
	SystemClockHz int
	// Unplugged starts with no cable; PartnerNo1000 makes the partner 10/100.
	Unplugged     bool
	PartnerNo1000 bool
	// Board is the SoC around an IMX8MP (soc.go): clock gates, the PHY's
	// reset line, /dev/mem policy and the TX clock. nil: the bare MAC (or a
	// private board for the states in Left that need one).
	Board *sim.Board
	// Unit is the MAC's platform device on Board. "": the board's EQOS.
	Unit string
	// Left starts the device as Linux's stmmac leaves it (soc.go). 0: as
	// firmware leaves it at power-on.
	Left sim.KernelLeft
	// Name is nic.DeviceInfo.Name. "": "dwmacsim".
	Name string
	// Sched sets the device side's latencies and seed (see sim.Sched): the
	// zero value runs the TX DMA asynchronously, a few microseconds after the
	// tail write; Sync runs it inside the write (benchmarks).
	Sched sim.SchedConfig
}

// Counters are the model's own totals (never cleared by register reads).
type Counters struct {
	RxFrames     uint64 // frames written to an RX ring
	RxBytes      uint64 // their bytes as written (FCS included unless stripped)
	RxFiltered   uint64 // dropped by the address filter
	RxNoDesc     uint64 // dropped: no descriptor owned by the DMA (RBU)
	RxOverflow   uint64 // dropped: RX queue not enabled, channel stopped, DMA refused
	RxNoLink     uint64 // arrived while link down, RE clear, in reset or speed mismatch
	RxErrors     uint64 // runt, oversize, or a checksum error the MTL drops (rxcoe.go)
	TxFrames     uint64 // frames put on the wire
	TxBytes      uint64
	TxDropped    uint64 // refused descriptors, speed mismatch or link down
	TxDescErrors uint64 // frames written back with DE (descriptor faults)
	// TxPadding is the zero bytes the MAC added to frames (and TSO
	// segments) shorter than 60 bytes, counted in TxBytes.
	TxPadding uint64
	// TSO (tso.go): frames segmented, the segments they made (counted in
	// TxFrames too), and the header bytes the engine replicated: TxFrames
	// and TxBytes as a driver counts frames it was given are TxFrames -
	// TxTSOSegments + TxTSOFrames and TxBytes - TxTSOAdded - TxPadding.
	TxTSOFrames   uint64
	TxTSOSegments uint64
	TxTSOAdded    uint64
	IRQs          uint64 // interrupt messages sent
}

// ErrConfig is wrapped by New for a configuration the model cannot build.
var ErrConfig = errors.New("dwmacsim: bad configuration")

// Model is a DWC Ethernet QoS 4.x/5.x as a driver sees it through its register
// window. Register state is guarded by mu. Transmission is serialised by txMu,
// taken before mu and held while frames go out with mu released, so a wire
// that delivers synchronously into another model (or back into this one)
// cannot deadlock.
type Model struct {
	sim.ModelBase // the accessors every model shares, over the parts below (sim/modelbase.go)

	cfg    Config      // immutable after New
	mac    [6]byte     // immutable factory address
	dev    nic.Device  // immutable: base, or base as a platform device
	base   *sim.Device // immutable
	mem    *sim.Memory // immutable
	faults *sim.Faults // immutable
	phy    *sim.PHY    // immutable
	nch    int         // immutable: DMA channels (register blocks): max(nrx, ntx)
	nrx    int         // immutable: RX DMA channels and MTL RX queues
	ntx    int         // immutable: TX DMA channels and MTL TX queues
	ieNIE  uint32      // immutable: NIE bit for this SNPSVER
	ieAIE  uint32      // immutable

	sched *sim.Sched // immutable: the device side's clock
	txT   *sim.Timer // immutable: the TX DMA's next step
	tbsT  *sim.Timer // immutable: looks again at channels holding a frame for its launch time

	txMu    sync.Mutex
	txBatch []txFrame // guarded by txMu
	txArena []byte    // guarded by txMu: gathered multi-descriptor frames
	txSegs  [][]byte  // guarded by txMu: the batch's TSO segments (views of txArena)

	mu   sync.Mutex
	gen  uint64   // bumps at every reset; guarded by mu
	wire sim.Wire // guarded by mu: where transmitted frames go

	closed     bool
	txPend     uint32    // TX channels the DMA has to look at
	tbsWait    uint32    // TX channels holding a frame until its launch time (tbs.go)
	swr        bool      // a DMA software reset is in progress
	swrUntil   time.Time // earliest end of the reset
	macConfig  uint32
	pktFilter  uint32
	hash       [hashTableRegs]uint32
	addrHi     [nMACAddr]uint32 // as written
	addrLo     [nMACAddr]uint32
	addrEffHi  [nMACAddr]uint32 // latched on the low-word write
	addrEffLo  [nMACAddr]uint32
	rxqCtrl0   uint32
	gpo        uint32 // MAC_GPIO_Status GPO 31:16 (Intel mGbE)
	mdioAddr   uint32
	mdioData   uint32
	mdioBusy   int // reads of MAC_MDIO_Address left that still show GB
	busMode    uint32
	sysBusMode uint32
	mtlRxqMap  [2]uint32
	mtlq       [maxChannels]mtlQueue
	rxFIFO     [maxChannels]*sim.RxFIFO // MTL RX queue FIFOs (rxfifo.go), made when first used
	inj        *sim.Injector            // immutable: injected faults (fault.go)
	ch         [maxChannels]channel
	plain      map[reg]uint32
	mmcCntrl   uint32
	mmcMasks   [3]uint32
	mmc        [mmcRegs]uint32
	xpcs       map[uint32]uint16
	serdes     serdes // Intel SGMII SerDes at MDIO 0x15 (serdes.go)
	phyHeld    bool   // the board held the PHY in reset at the last look (soc.go)
	sgmiiOK    bool   // the SerDes and xPCS carry frames (soc.go refreshSGMIILocked)
	cnt        Counters
	ptp        ptpState
	vlanBuf    []byte // RX scratch for frames whose tag is stripped
}

// mtlQueue is one MTL TX/RX queue pair's registers.
type mtlQueue struct {
	txOp, rxOp, intCtrl uint32
	rxMissed, rxOvf     uint32 // MTL_RxQ_Missed_Packet_Overflow_Cnt counters
	regs                [16]uint32
}

// New builds a model in its power-on state: firmware's MAC in MAC_Address0, no
// reset in progress, link down (the PHY negotiates only after software restarts
// autonegotiation), bus mastering off on the PCI variant. The steps: the
// variant's strapping (applyVariant), the configuration checked (check), the
// board, then memory, bus device, PHY and timers, then the power-on reset.
func New(cfg Config) (*Model, error) {
	if err := cfg.applyVariant(); err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m := &Model{}
	mac, err := sim.FactoryMAC(cfg.MAC) // what firmware leaves in MAC_Address0
	if err != nil {
		return nil, fmt.Errorf("dwmacsim: %w: %w", err, ErrConfig)
	}
	m.mac = mac
	if cfg.PHYAddr == 0 {
		cfg.PHYAddr = 1
	}
	if cfg.PHYAddr < 0 || cfg.PHYAddr > 31 || (!cfg.NoXPCS && (cfg.PHYAddr == xpcsAddr || cfg.PHYAddr == serdesAddr)) {
		return nil, fmt.Errorf("dwmacsim: PHY address %d: want 1-31, not the xPCS's 0x16 or the SerDes's 0x15: %w", cfg.PHYAddr, ErrConfig)
	}
	if cfg.ResetDelay == 0 {
		cfg.ResetDelay = 200 * time.Microsecond
	}
	if cfg.Name == "" {
		cfg.Name = "dwmacsim"
	}
	m.cfg = cfg
	if err := m.setupBoard(); err != nil {
		return nil, err
	}
	m.nch, m.nrx, m.ntx = cfg.Channels, cfg.RxChannels, cfg.TxChannels
	if cfg.SNPSVER >= 0x41 {
		m.ieNIE, m.ieAIE = ieNIE410, ieAIE410
	} else {
		m.ieNIE, m.ieAIE = ieNIE400, ieAIE400
	}
	m.faults = &sim.Faults{}
	if cfg.Cache != nil {
		if err := cfg.Cache.Validate(); err != nil {
			return nil, fmt.Errorf("dwmacsim: %w: %w", err, ErrConfig)
		}
	}
	m.newMemory()
	m.newBusDevice()
	m.newPHYs()
	m.newTimers()
	m.InitBase(sim.ModelParts{Lock: &m.mu, Wire: &m.wire, Inject: m.Inject, Reset: m.resetFLR, MAC: m.mac, Device: m.base,
		Memory: m.mem, PHY: m.phy, Faults: m.faults, Injector: m.inj, Sched: m.sched, RegName: regName})
	m.mu.Lock()
	m.resetLocked(false)
	m.applyLeftLocked()
	m.mu.Unlock()
	return m, nil
}

// applyVariant fills what the variant straps and the caller left zero:
// the core version, the PCI device, the channel counts, the PHY's ID and the
// PTP reference clock.
func (cfg *Config) applyVariant() error {
	switch cfg.Variant {
	case IntelMGbE:
		if cfg.SNPSVER == 0 {
			cfg.SNPSVER = 0x52
		}
		if cfg.PCIDevice == 0 {
			cfg.PCIDevice = 0x7AAC
		}
		part, ok := LookupIntel(cfg.PCIDevice)
		if !ok {
			return fmt.Errorf("dwmacsim: PCI device 8086:%04x is not an Intel mGbE dwmac-intel binds: %w", cfg.PCIDevice, ErrConfig)
		}
		switch cfg.PCIDevice {
		case 0x4b30, 0x4ba0, 0x4bb0: // the RGMII parts: no SerDes, no xPCS (dwmac-intel.c)
			cfg.NoXPCS = true
		}
		if cfg.Channels == 0 && cfg.RxChannels == 0 && cfg.TxChannels == 0 {
			cfg.RxChannels, cfg.TxChannels = part.RxQueues, part.TxQueues
		}
		if cfg.PHYID == 0 {
			cfg.PHYID = 0x01410DD0
		}
		if cfg.PTPClockHz == 0 {
			cfg.PTPClockHz = part.PTPClockHz // intel.go: dwmac-intel's clk_ptp_rate
		}
	case IMX8MP:
		if cfg.SNPSVER == 0 {
			cfg.SNPSVER = 0x51
		}
		if cfg.Channels == 0 && cfg.RxChannels == 0 && cfg.TxChannels == 0 {
			cfg.Channels = 5
		}
		if cfg.PHYID == 0 {
			cfg.PHYID = 0x001CC916
		}
		if cfg.PTPClockHz == 0 {
			cfg.PTPClockHz = 100_000_000
		}
		cfg.NoXPCS = true
	default:
		return fmt.Errorf("dwmacsim: variant %d: want IntelMGbE or IMX8MP: %w", cfg.Variant, ErrConfig)
	}
	return nil
}

// check refuses a core version, clock or channel count the IP cannot be
// synthesised with, and settles the channel counts.
func (cfg *Config) check() error {
	if cfg.SNPSVER < 0x40 || cfg.SNPSVER > 0x5f {
		return fmt.Errorf("dwmacsim: SNPSVER 0x%02x is not a 4.x or 5.x core: %w", cfg.SNPSVER, ErrConfig)
	}
	if cfg.SystemClockHz == 0 {
		cfg.SystemClockHz = defaultSystemClock(cfg.Variant)
	}
	if cfg.SystemClockHz < 0 {
		return fmt.Errorf("dwmacsim: system clock of %d Hz: %w", cfg.SystemClockHz, ErrConfig)
	}
	if cfg.PTPClockHz < 0 {
		return fmt.Errorf("dwmacsim: PTP clock of %d Hz: %w", cfg.PTPClockHz, ErrConfig)
	}
	if cfg.Channels != 0 {
		if cfg.RxChannels != 0 || cfg.TxChannels != 0 {
			return fmt.Errorf("dwmacsim: Channels with RxChannels/TxChannels: set one or the other: %w", ErrConfig)
		}
		cfg.RxChannels, cfg.TxChannels = cfg.Channels, cfg.Channels
	}
	for _, n := range []int{cfg.RxChannels, cfg.TxChannels} {
		if n < 1 || n > maxChannels {
			return fmt.Errorf("dwmacsim: %d channels: want 1 to %d each way: %w", n, maxChannels, ErrConfig)
		}
	}
	cfg.Channels = max(cfg.RxChannels, cfg.TxChannels)
	return nil
}

// newMemory builds the DMA memory with the variant's address width.
func (m *Model) newMemory() {
	cfg := &m.cfg
	mcfg := sim.MemoryConfig{NonCoherent: cfg.NonCoherent, Below4G: cfg.Below4G, Cache: cfg.Cache}
	switch {
	case cfg.Below4G:
	case cfg.Variant == IMX8MP:
		mcfg.Limit = 1 << 34 // the SoC wires 34 address bits (imx8mp_dwmac_data.addr_width)
	default:
		mcfg.Limit = 1 << 40 // HW_FEATURE1.ADDR64 = 40 bits
	}
	m.mem = sim.NewMemory(mcfg, m.faults)
	m.mem.SetDeviceLock(&m.mu) // every device-side write happens under mu
}

// newBusDevice puts the model on its bus. The Intel mGbE is a PCI function
// (configuration space, bus mastering off until enabled); the i.MX8MP EQOS a
// platform device (no configuration space, DMA never gated).
func (m *Model) newBusDevice() {
	cfg := &m.cfg
	dc := sim.DeviceConfig{Name: cfg.Name, BARSize: 64 << 10, MSIXVectors: 1}
	if cfg.Board != nil {
		dc.Gate = m.gate
	}
	if cfg.Variant == IntelMGbE {
		dc.Bus, dc.Vendor, dc.Device, dc.SubVendor, dc.Revision = "pci", 0x8086, cfg.PCIDevice, 0x8086, 0x11
		dc.MSIXVectors = 32
	}
	m.base = sim.NewDevice(dc, m.mem, m)
	m.dev = m.base
	if cfg.Variant == IMX8MP {
		m.dev = m.socDevice(sim.NewPlatformDevice(m.base, "nxp,imx8mp-dwmac-eqos"))
	}
}

// newPHYs builds what sits on MDIO: the Intel SGMII SerDes, the xPCS (its
// own MDIO device: DMA_Mode.SWR leaves it) and the external PHY.
func (m *Model) newPHYs() {
	cfg := &m.cfg
	m.serdes = poweredSerdes()
	m.xpcs = firmwareXPCS()
	m.phy = sim.NewPHY(sim.PHYConfig{
		Addr: cfg.PHYAddr, ID1: uint16(cfg.PHYID >> 16), ID2: uint16(cfg.PHYID),
		AutonegDelay: cfg.AutonegDelay, BreakLink: cfg.BreakLink, PartnerNo1000: cfg.PartnerNo1000, Unplugged: cfg.Unplugged,
		Faults: m.faults,
	})
	m.inj = new(sim.Injector)
	m.base.SetInjector(m.inj, m.phy)               // fault.go
	m.wire.SetLineRate(m.phy.Link)                 // sim/linerate.go: frames at the negotiated speed
	m.wire.SetTxFIFO(128 << fifoBits(cfg.Variant)) // HW_FEATURE1.TXFIFOSIZE
}

// newTimers builds the scheduler, the TX and launch-time timers, the TX
// batch buffers and each channel's (stopped) RX watchdog.
func (m *Model) newTimers() {
	m.sched = sim.NewSched(m.cfg.Sched)
	m.txT = m.sched.NewTimer(m.txRun)
	m.tbsT = m.sched.NewTimer(m.launchDue)
	m.txBatch = make([]txFrame, 0, txBatchMax)
	m.txArena = make([]byte, 0, 64<<10)
	for i := range m.ch {
		c := i
		m.ch[i].wdt = time.AfterFunc(time.Hour, func() { m.watchdogExpired(c) })
		m.ch[i].wdt.Stop()
	}
}

// Device is the model as a nic.Device, for a driver.
func (m *Model) Device() nic.Device { return m.dev }

// Channels is the number of DMA channels: the larger of RxChannels and
// TxChannels.
func (m *Model) Channels() int { return m.nch }

// RxChannels and TxChannels are the DMA channels (and MTL queues) each way.
func (m *Model) RxChannels() int { return m.nrx }
func (m *Model) TxChannels() int { return m.ntx }

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
		for i := range m.ch {
			m.ch[i].wdt.Stop()
		}
		m.mu.Unlock()
	})
}

// resetFLR is the function-level reset (sim.Model's Reset, through
// sim.ModelBase): every register returns to its reset value and MAC_Address0
// to the firmware's address, and the reset is over at once.
func (m *Model) resetFLR() { m.resetLocked(false) }

// resetLocked puts every MAC, MTL, DMA and MMC register at its reset value.
// swr: a DMA software reset (MAC_Address0 becomes all ones, and the reset lasts
// until ResetDelay has passed with the RX clock running); otherwise power-on or
// FLR (MAC_Address0 holds the firmware's address).
func (m *Model) resetLocked(swr bool) {
	m.gen++
	m.wire.TxIdle()
	m.ptp.reset(m.cfg.PTPClockHz)
	m.macConfig, m.pktFilter = 0, 0
	m.hash = [hashTableRegs]uint32{}
	for i := range m.addrHi {
		m.addrHi[i], m.addrLo[i] = 0x0000ffff, 0xffffffff
	}
	m.addrHi[0] |= addrAE
	if !swr {
		m.addrHi[0] = addrAE | uint32(m.mac[5])<<8 | uint32(m.mac[4])
		m.addrLo[0] = uint32(m.mac[3])<<24 | uint32(m.mac[2])<<16 | uint32(m.mac[1])<<8 | uint32(m.mac[0])
	}
	m.addrEffHi, m.addrEffLo = m.addrHi, m.addrLo
	m.rxqCtrl0 = 0
	m.mdioAddr, m.mdioData, m.mdioBusy = 0, 0, 0
	m.busMode, m.sysBusMode = 0, 0
	m.mtlRxqMap = [2]uint32{}
	m.inj.DeviceReset() // a reset ends a hang, a stall, a dead PHY (fault.go)
	m.mtlq = [maxChannels]mtlQueue{}
	for _, f := range m.rxFIFO {
		if f != nil {
			f.Flush() // a reset empties the MTL FIFOs
		}
	}
	for i := range m.ch {
		w := m.ch[i].wdt
		w.Stop()
		m.ch[i] = channel{wdt: w}
		m.ch[i].tx.tailRaw, m.ch[i].rx.tailRaw = noTail, noTail
	}
	m.plain = map[reg]uint32{}
	m.mmcCntrl, m.mmcMasks = 0, [3]uint32{}
	m.mmc = [mmcRegs]uint32{}
	m.swr = false
	m.tbsWait = 0
	if swr {
		m.swr = true
		m.swrUntil = time.Now().Add(max(m.cfg.ResetDelay, 0))
	}
}

// rxClockLocked reports whether the PHY drives the RX clock: not with
// Config.NoRxClock, and not while the PHY is powered down (BMCR.PDOWN).
func (m *Model) rxClockLocked() bool {
	if m.cfg.NoRxClock || !m.socRxClockLocked() {
		return false
	}
	return m.phy.Read(sim.MIIBMCR)&sim.BMCRPowerDown == 0
}

// inResetLocked reports whether a DMA software reset is in progress, ending it
// once its time has passed and the RX clock runs.
func (m *Model) inResetLocked() bool {
	if !m.swr {
		return false
	}
	if time.Now().Before(m.swrUntil) || !m.rxClockLocked() {
		return true
	}
	m.swr = false
	return false
}

// Read32 implements sim.Model.
func (m *Model) Read32(off uint32) uint32 {
	return m.ReadReg(func() uint32 {
		if m.inResetLocked() {
			if off == regDMABusMode {
				return m.busMode | busSWR
			}
			m.faults.Add("read32", regName(off), uint64(off), "register read while DMA_Mode.SWR is in progress (poll DMA_Mode until SWR clears)")
			return 0
		}
		return m.readLocked(off)
	})
}

// Write32 implements sim.Model.
func (m *Model) Write32(off, val uint32) {
	m.WriteRegOutOfReset(&m.txPend, m.txT, off, val, m.inResetLocked, "DMA_Mode.SWR is in progress (poll DMA_Mode until SWR clears)",
		func() uint32 { return m.writeLocked(off, val) })
}

func (m *Model) readOnly(off, val uint32) {
	m.faults.Add("write32", regName(off), uint64(off), "write of 0x%08x to a read-only register", val)
}

// plainRegs are registers the model stores without side effects.
var plainRegs = map[reg]string{
	regMACRxqCtrl4:  "MAC_RxQ_Ctrl4", // written through writeRxqCtrl4Locked
	regMACExtConfig: "MAC_Ext_Configuration", regMACWdtTo: "MAC_Watchdog_Timeout",
	regMACVLANTag: "MAC_VLAN_Tag", regMACVLANHash: "MAC_VLAN_Hash_Table", regMACVLANIncl: "MAC_VLAN_Incl",
	regMACRxFlow: "MAC_Rx_Flow_Ctrl", regMACTxqPrty0: "MAC_TxQ_Prty_Map0", regMACTxqPrty1: "MAC_TxQ_Prty_Map1",
	regMACRxqCtrl1: "MAC_RxQ_Ctrl1", regMACRxqCtrl2: "MAC_RxQ_Ctrl2", regMACRxqCtrl3: "MAC_RxQ_Ctrl3",
	regMACIntEn: "MAC_Interrupt_Enable", regMACPMT: "MAC_PMT_Control_Status",
	regMACLPICtrl: "MAC_LPI_Control_Status", regMACLPITimer: "MAC_LPI_Timers_Control",
	regMAC1USTic: "MAC_1US_Tic_Counter", regMACPHYIFCtrl: "MAC_PHYIF_Control_Status",
	regMTLOpMode: "MTL_Operation_Mode", regDMAAXILPI: "DMA_AXI_LPI_Entry_Interval", regDMATBSCtrl: "DMA_TBS_CTRL",
}

// readLocked returns register off with the side effects reads have.
func (m *Model) readLocked(off uint32) uint32 {
	if v, ok := m.readPTPLocked(off); ok {
		return v
	}
	switch {
	case off >= regDMAChBase && off < regDMAChBase+maxChannels*dmaChStride:
		return m.readChanLocked(int(off-regDMAChBase)/dmaChStride, (off-regDMAChBase)%dmaChStride, off)
	case off >= regMTLQBase && off < regMTLQBase+maxChannels*mtlQStride:
		return m.readMTLQLocked(int(off-regMTLQBase)/mtlQStride, (off-regMTLQBase)%mtlQStride, off)
	case off >= regMMCBase && off < regMMCBase+mmcEnd:
		return m.readMMCLocked(off - regMMCBase)
	case off >= regMACHashTab0 && off < regMACHashTab0+4*hashTableRegs:
		return m.hash[(off-regMACHashTab0)/4]
	case off >= regMACQ0TxFlow && off < regMACQ0TxFlow+4*uint32(m.ntx):
		return m.plain[off]
	case off >= regMACAddrHigh0 && off < regMACAddrHigh0+8*nMACAddr:
		n := (off - regMACAddrHigh0) / 8
		if off&4 == 0 {
			return m.addrHi[n]
		}
		return m.addrLo[n]
	}
	switch off {
	case regMACConfig:
		return m.macConfig
	case regMACPktFilter:
		return m.pktFilter
	case regMACRxqCtrl0:
		return m.rxqCtrl0
	case regMACIntStatus, regMACRxTxStat, regMACDebug, regMTLIntStatus:
		return 0
	case regMACVersion:
		return versionUSERVER | uint32(m.cfg.SNPSVER)
	case regMACHWFeat0:
		v := hw0MIISEL | hw0GMIISEL | hw0SMASEL | hw0MMCSEL | hw0TSSEL | (nMACAddr-1)<<hw0ADDMACShift
		if !m.cfg.NoTxCOE {
			v |= hw0TXCOESEL
		}
		if !m.cfg.NoRxCOE {
			v |= hw0RXCOESEL
		}
		return v
	case regMACHWFeat1:
		v := fifoBits(m.cfg.Variant)<<hw1RXFIFOShift | fifoBits(m.cfg.Variant)<<hw1TXFIFOShift |
			addr64Bits40<<hw1ADDR64Shift | hashTblSz64<<hw1HashShift
		if m.hasTSO() {
			v |= hw1TSOEN // tso.go
		}
		return v
	case regMACHWFeat2:
		rx, tx := uint32(m.nrx-1), uint32(m.ntx-1)
		return rx<<hw2RXQShift | tx<<hw2TXQShift | rx<<hw2RXCHShift | tx<<hw2TXCHShift
	case regMACHWFeat3:
		if m.hasTBS() {
			return hw3TBSSEL
		}
		return 0
	case regMACMDIOAddr:
		return m.readMDIOAddrLocked()
	case regMACMDIOData:
		if m.mdioAddr&mdioGB != 0 {
			m.faults.Add("read32", "MAC_MDIO_Data", uint64(off), "MDIO data read while MAC_MDIO_Address.GB is still set (poll GB first)")
		}
		return m.mdioData
	case regMTLRxqDMAMap, regMTLRxqDMAMap + 4:
		return m.mtlRxqMap[(off-regMTLRxqDMAMap)/4]
	case regDMABusMode:
		return m.busMode
	case regDMASysBusMode:
		return m.sysBusMode
	case regDMAIntStatus:
		var v uint32
		for c := 0; c < m.nch; c++ {
			if m.ch[c].pendingLocked(m.ieNIE, m.ieAIE) != 0 {
				v |= 1 << c
			}
		}
		return v
	case regDMADebug0, regDMADebug1:
		return m.debugStatusLocked(off)
	}
	if _, ok := plainRegs[off]; ok {
		return m.plain[off]
	}
	if m.estRSSLocked("read32", off, 0) {
		return 0
	}
	if m.reservedLocked("read32", off, 0) {
		if off == regMACGPIOStatus {
			return m.gpo
		}
		return 0
	}
	m.Unimplemented("read32", off)
	return 0
}

// fifoBits is the HW_FEATURE1 FIFO size code: 128 << n bytes (Intel: 32 KiB,
// i.MX8MP: 8 KiB each way).
func fifoBits(v Variant) uint32 {
	if v == IMX8MP {
		return 6
	}
	return 8
}

// writeLocked applies a register write. It returns a bit mask of TX channels to
// run (outside mu).
func (m *Model) writeLocked(off, val uint32) (kick uint32) {
	if m.writePTPLocked(off, val) {
		return 0
	}
	if off == regMACVLANTag {
		m.writeVLANTagLocked(val)
		return 0
	}
	switch {
	case off >= regDMAChBase && off < regDMAChBase+maxChannels*dmaChStride:
		return m.writeChanLocked(int(off-regDMAChBase)/dmaChStride, (off-regDMAChBase)%dmaChStride, off, val)
	case off >= regMTLQBase && off < regMTLQBase+maxChannels*mtlQStride:
		return m.writeMTLQLocked(int(off-regMTLQBase)/mtlQStride, (off-regMTLQBase)%mtlQStride, off, val)
	case off >= regMMCBase && off < regMMCBase+mmcEnd:
		m.writeMMCLocked(off-regMMCBase, val)
		return 0
	case off >= regMACHashTab0 && off < regMACHashTab0+4*hashTableRegs:
		m.hash[(off-regMACHashTab0)/4] = val
		return 0
	case off >= regMACQ0TxFlow && off < regMACQ0TxFlow+4*uint32(m.ntx):
		m.plain[off] = val
		return 0
	case off >= regMACAddrHigh0 && off < regMACAddrHigh0+8*nMACAddr:
		n := (off - regMACAddrHigh0) / 8
		if off&4 == 0 {
			if n == 0 {
				val |= addrAE // address 0 is always enabled
			} else if val&(addrSA|addrMBCMask) != 0 {
				m.faults.Add("write32", regName(off), uint64(off), "MAC_Address%d_High 0x%08x uses SA or MBC (source address / byte masking), which the model does not implement", n, val)
				return 0
			}
			m.addrHi[n] = val
		} else {
			// The pair takes effect when the low word is written (the databook's
			// synchronisation rule: write high, then low).
			m.addrLo[n] = val
			m.addrEffHi[n], m.addrEffLo[n] = m.addrHi[n], val
		}
		return 0
	}
	switch off {
	case regMACConfig:
		return m.writeMACConfigLocked(val)
	case regMACPktFilter:
		if val&pfUnmodelled != 0 {
			m.faults.Add("write32", "MAC_Packet_Filter", uint64(off), "filter mode 0x%08x uses HUC, DAIF, VTFE or IPFE, which the model does not implement", val&pfUnmodelled)
			return 0
		}
		m.pktFilter = val
		return 0
	case regMACRxqCtrl0:
		m.rxqCtrl0 = val
		return 0
	case regMACRxqCtrl4:
		m.writeRxqCtrl4Locked(val)
		return 0
	case regMACMDIOAddr:
		m.writeMDIOAddrLocked(val)
		return 0
	case regMACMDIOData:
		if m.mdioAddr&mdioGB != 0 {
			m.faults.Add("write32", "MAC_MDIO_Data", uint64(off), "MDIO data written while a frame is in progress (GB set)")
			return 0
		}
		m.mdioData = val
		return 0
	case regMTLRxqDMAMap, regMTLRxqDMAMap + 4:
		m.mtlRxqMap[(off-regMTLRxqDMAMap)/4] = val
		return 0
	case regDMABusMode:
		return m.writeBusModeLocked(val)
	case regDMASysBusMode:
		return m.writeSysBusModeLocked(val)
	case regMACVersion, regMACHWFeat0, regMACHWFeat1, regMACHWFeat2, regMACHWFeat3, regMACDebug,
		regMACIntStatus, regMACRxTxStat, regMTLIntStatus, regDMAIntStatus, regDMADebug0, regDMADebug1:
		m.readOnly(off, val)
		return 0
	}
	if _, ok := plainRegs[off]; ok {
		m.plain[off] = val
		return 0
	}
	if m.estRSSLocked("write32", off, val) || m.reservedLocked("write32", off, val) {
		return 0
	}
	m.Unimplemented("write32", off)
	return 0
}

// Reserved locations the model knows drivers touch (databook: reserved bits and
// registers read 0 and ignore writes).
const (
	// macAddrEnd ends the MAC_Address0..127 block (0x300 + 8n). A core has
	// HW_FEATURE0.ADDMACADRSEL + 1 of them; the rest are reserved. stmmac's
	// dwmac4_set_filter clears all 128 (GMAC_MAX_PERFECT_ADDRESSES) whatever
	// the core has.
	macAddrEnd = regMACAddrHigh0 + 8*128
)

// reservedLocked handles an access to a reserved location that is not an
// error: MAC address entries beyond the core's (a write must not enable one,
// as that address would then silently never match), and MAC_GPIO_Status on
// the Intel mGbE. It reports whether off was such a location.
func (m *Model) reservedLocked(op string, off, val uint32) bool {
	switch {
	case off >= regMACAddrHigh0+8*nMACAddr && off < macAddrEnd:
		if op == "write32" && off&4 == 0 && val&addrAE != 0 {
			m.faults.Add(op, regName(off), uint64(off), "AE set in MAC address entry %d, but the core has %d entries (HW_FEATURE0.ADDMACADRSEL): the address would never match",
				(off-regMACAddrHigh0)/8, nMACAddr)
		}
		return true
	case off == regMACGPIOStatus && m.cfg.Variant == IntelMGbE:
		// GPIS 15:0 (inputs, none wired) read 0; GPO 31:16 hold what is
		// written: dwmac-intel's intel_mgbe_ptp_clk_freq_config selects the
		// PTP clock with them.
		if op == "write32" {
			m.gpo = val &^ 0xffff
		}
		return true
	}
	return false
}

func (m *Model) writeMACConfigLocked(val uint32) (kick uint32) {
	if m.cfg.NoRxCOE {
		val &^= cfgIPC // RO 0: HW_FEATURE0.RXCOESEL is not advertised
	}
	was := m.macConfig
	m.macConfig = val
	if was&cfgTE == 0 && val&cfgTE != 0 {
		return m.pendingTxLocked()
	}
	return 0
}

func (m *Model) writeBusModeLocked(val uint32) (kick uint32) {
	if val&busSWR != 0 {
		m.resetLocked(true)
		return 0
	}
	if val&busINTMMask == busINTMPerCh && m.cfg.Variant == IMX8MP {
		m.faults.Add("write32", "DMA_Mode", uint64(regDMABusMode), "INTM=1 (per-channel interrupt lines) on the i.MX8MP, whose EQOS has only macirq wired: every DMA interrupt would be lost")
		return 0
	}
	if v := val & busINTMMask; v > busINTMPerCh {
		m.faults.Add("write32", "DMA_Mode", uint64(regDMABusMode), "INTM=%d is not modelled: use 0 (one line) or 1 (per channel)", v>>busINTMShift)
		return 0
	}
	m.busMode = val
	return 0
}

func (m *Model) writeSysBusModeLocked(val uint32) (kick uint32) {
	if (m.sysBusMode^val)&sysEAME != 0 {
		for c := 0; c < m.nch; c++ {
			if m.ch[c].tx.run || m.ch[c].rx.run {
				m.faults.Add("write32", "DMA_SysBus_Mode", uint64(regDMASysBusMode), "EAME changed while DMA channel %d runs", c)
				return 0
			}
		}
	}
	m.sysBusMode = val
	return 0
}

func (m *Model) eame() bool { return m.sysBusMode&sysEAME != 0 }

// hasTBS reports whether the core has time-based scheduling (HW_FEATURE3.TBSSEL)
// and with it the enhanced TX descriptor format: the Intel mGbE does (its
// glue, dwmac-intel's intel_mgbe_common_data, sets tbs_en on TX queues 1 and
// up, and stmmac then uses enhanced descriptors there); the i.MX8MP EQOS is
// modelled without.
func (m *Model) hasTBS() bool { return m.cfg.Variant == IntelMGbE }

// debugStatusLocked builds DMA_Debug_Status0/1 from the channels' process
// states (databook encodings: RX 0 stopped, 3 running waiting for a packet,
// 4 suspended; TX 0 stopped, 1 running fetching, 6 suspended).
func (m *Model) debugStatusLocked(off uint32) uint32 {
	first, shift := 0, 8
	if off == regDMADebug1 {
		first, shift = 3, 0
	}
	var v uint32
	for c := first; c < m.nch && shift < 32; c++ {
		var rps, tps uint32
		if r := &m.ch[c].rx; r.run {
			rps = 3
			if r.susp != suspNone {
				rps = 4
			}
		}
		if t := &m.ch[c].tx; t.run {
			tps = 1
			if t.susp != suspNone {
				tps = 6
			}
		}
		v |= rps<<shift | tps<<(shift+4)
		shift += 8
	}
	return v
}

// mtlQueue registers.
func (m *Model) readMTLQLocked(q int, r, off uint32) uint32 {
	if q >= m.nch {
		m.Unimplemented("read32", off)
		return 0
	}
	if !m.hasDirLocked("read32", "MTL queue", q, mtlDir(r), off) {
		return 0
	}
	x := &m.mtlq[q]
	switch r {
	case mtlTxOpMode:
		return x.txOp
	case mtlRxOpMode:
		return x.rxOp
	case mtlIntCtrl:
		return x.intCtrl
	case mtlRxMissed:
		// OVFPKTCNT 10:0 and MISPKTCNT 26:16 saturate and flag the overflow.
		v := min(x.rxOvf, mtlCntMax) | min(x.rxMissed, mtlCntMax)<<mtlMissShift
		if x.rxOvf > mtlCntMax {
			v |= mtlOvfOvf
		}
		if x.rxMissed > mtlCntMax {
			v |= mtlMissOvf
		}
		x.rxOvf, x.rxMissed = 0, 0
		return v
	case mtlTxUnderfl, mtlTxDebug, mtlRxDebug:
		return 0
	case mtlTxETSCtrl, mtlTxETSStat, mtlTxQuantum, mtlTxSSCred, mtlTxHiCred, mtlTxLoCred, mtlRxCtrl:
		return x.regs[r/4]
	}
	m.Unimplemented("read32", off)
	return 0
}

func (m *Model) writeMTLQLocked(q int, r, off, val uint32) (kick uint32) {
	if q >= m.nch {
		m.Unimplemented("write32", off)
		return 0
	}
	if !m.hasDirLocked("write32", "MTL queue", q, mtlDir(r), off) {
		return 0
	}
	x := &m.mtlq[q]
	switch r {
	case mtlTxOpMode:
		val &^= mtlFTQ // the flush completes at once: nothing is queued in the model's FIFO
		if en := val & mtlTXQENMask; en != 0 && en != mtlTXQENOn {
			m.faults.Add("write32", regName(off), uint64(off), "TXQEN=%d for TX queue %d: only 2 (enabled, non-AV) is modelled", en>>mtlTXQENShift, q)
			val &^= mtlTXQENMask
		}
		was := x.txOp
		x.txOp = val
		if was&mtlTXQENMask != mtlTXQENOn && val&mtlTXQENMask == mtlTXQENOn && m.ch[q].tx.run {
			return 1 << q
		}
	case mtlRxOpMode:
		x.rxOp = val
	case mtlIntCtrl:
		status := x.intCtrl & (mtlRXOVFIS | mtlTXUNFIS) &^ val // status bits are W1C
		x.intCtrl = status | val&(mtlRXOIE|mtlTXUIE)
	case mtlTxETSCtrl, mtlTxETSStat, mtlTxQuantum, mtlTxSSCred, mtlTxHiCred, mtlTxLoCred, mtlRxCtrl:
		x.regs[r/4] = val
	case mtlTxUnderfl, mtlTxDebug, mtlRxDebug, mtlRxMissed:
		m.readOnly(off, val)
	default:
		m.Unimplemented("write32", off)
	}
	return 0
}
