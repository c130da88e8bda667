package dwmac

import (
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"net"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Config chooses how Open brings a port up. The zero value is usable.
type Config struct {
	// Queues is the number of RX/TX queue pairs (DMA channels), from 1 to what
	// the integration and HW_FEATURE2 allow. Default 1. The EQoS core has no
	// RSS (only the DWC XGMAC does: Linux implements rss_configure for
	// dwxgmac2 alone, and dwmac4's feature registers have no RSSEN), so the
	// MAC steers untagged traffic to RX queue 0; the others see VLAN-priority
	// traffic only (VLANPriorityQueues).
	Queues int
	// VLANPriorityQueues steers C-VLAN tagged frames by priority (PCP): p to
	// RX queue p mod Queues, through MAC_RxQ_Ctrl2/3's PSRQ bytes (databook
	// "MAC_RxQ_Ctrl2"; stmmac's dwmac4_rx_queue_priority with the queues'
	// snps,priority masks). Untagged frames stay on queue 0.
	VLANPriorityQueues bool
	// RxRingSize and TxRingSize are descriptors per ring, 4 to 1024 (the ring
	// length registers hold 10 bits). Default 512 each.
	RxRingSize, TxRingSize int
	// PoolSize is the number of buffers in each RX queue's pool; at least
	// RxRingSize (the ring holds RxRingSize-1). Default 2*RxRingSize.
	PoolSize int
	// FrameSize is the size of one pool buffer: dma.Headroom in front, then at
	// least 1536 bytes for the DMA (a 1522-byte frame and its FCS). Default
	// dma.DefaultFrameSize.
	FrameSize int
	// Interrupts sets up per-channel interrupts: on Intel one MSI/MSI-X vector
	// per DMA channel and direction (RX i on vector 2i, TX i on 2i+1); with a
	// single vector (i.MX8MP's macirq, or an MSI fallback) one queue only.
	// Without it the queues are polled.
	Interrupts bool
	// Promisc accepts every frame (MAC_Packet_Filter.PR).
	Promisc bool
	// MAC is the station address to program. Nil: the address already in
	// MAC_Address0 (left there by firmware), else a random locally
	// administered one (with a warning).
	MAC net.HardwareAddr
	// PHYAddr is the PHY's MDIO address (1-31). Zero: scan the bus.
	PHYAddr int
	// LinkTimeout is how long Open waits for autonegotiation before it programs
	// the MAC's speed. Open does not fail when the link stays down; Link and
	// WaitLink report it. Zero means 5 s; negative, no wait.
	LinkTimeout time.Duration
	// CSRClockMHz is the MAC's CSR clock (it sets the MDC divider and
	// MAC_1US_Tic). Zero: the integration's (Intel 250, i.MX8MP 266).
	CSRClockMHz int
	// AddrBits narrows the DMA address width below what the MAC and the
	// integration allow (for boards with fewer address lines). Zero: no change.
	AddrBits int
	// VLANStrip has the MAC strip the outer C-VLAN tag (0x8100) of received
	// frames into RDES0 (MAC_VLAN_Tag EVLS, EVLRXS), reported in
	// dma.Buf.VLANProto/VLANTCI with dma.FlagVLAN. Without it tags stay in
	// the frame and none is reported.
	VLANStrip bool
	// RxTimestamp timestamps every received frame with the port's clock
	// (MAC_Timestamp_Control.TSENALL; dma.Buf.Timestamp with
	// dma.FlagTimestamp). Each frame then takes a second descriptor (the
	// context descriptor with its timestamp).
	RxTimestamp bool
	// LaunchTimeQueues has bit q set for each TX queue q that honours
	// dma.Buf.LaunchTime (nic.TxMetaLaunchTime): time-based scheduling
	// through enhanced descriptors (DMA_CHx_Tx_Control.EDSE; stmmac's
	// per-queue "tbs", which dwmac-intel enables on queues 1 and up). Those
	// rings take 32-byte descriptors. The MAC must have TBS
	// (HW_FEATURE3.TBSSEL) and a running IEEE 1588 clock, the time base of
	// launch times.
	LaunchTimeQueues uint32
	// NoTxCOEQueues has bit q set for each TX queue q whose core was
	// synthesized without the checksum engine (the devicetree's
	// "snps,coe-unsupported"; no register says so): those queues do not
	// offer nic.TxMetaChecksum. The Intel mGbE has it on every queue.
	NoTxCOEQueues uint32
	// PTPClockHz is the PTP reference clock. Zero: the integration's (Intel
	// 200 MHz, i.MX8MP 100 MHz).
	PTPClockHz int
	// RxCoalesce holds each channel's RX interrupt for up to this long with
	// the RX watchdog (RIWT), or until RxCoalesceFrames frames have arrived
	// (coalesce.go). Zero: an interrupt per frame, the watchdog unused.
	RxCoalesce time.Duration
	// RxCoalesceFrames is the frame count between interrupts with RxCoalesce:
	// 1 to the frames the RX ring holds; 0: DefaultCoalesceFrames (at most
	// half the ring).
	RxCoalesceFrames int
	// SystemClockHz is the clock the RX watchdog counts. Zero: the
	// integration's (IntelSystemClockHz, IMX8MPSystemClockHz).
	SystemClockHz uint64

	// cachedRings lets rings live in cached memory on a non-coherent
	// allocator without uncached memory: the broken layout ringmem.go
	// explains, for the test that shows the cache model catches it.
	cachedRings bool
	// uncheckedTxMeta has CheckTxMeta skip the hardware's own limits (only
	// nic.CheckTxRequest remains), and noEDSE has a launch-time queue lay out
	// enhanced descriptors without setting EDSE: wrong drivers, for the tests
	// that show the model catches them.
	uncheckedTxMeta, noEDSE bool
}

const (
	defaultRingSize    = 512
	minRingSize        = 4
	maxRingSize        = 1024
	defaultLinkTimeout = 5 * time.Second
	minRxBuf           = 1536
	maxRxBuf           = 0x3ff0 // RBSZ is 14 bits; kept a multiple of 16
	swrPollStep        = 10 * time.Millisecond
	swrTimeout         = time.Second
	linkPollStep       = 10 * time.Millisecond
	intelPBL           = 32 // dwmac-intel.c: PBL 32 with PBLx8
	defaultPBL         = 8
)

func (c Config) withDefaults() (Config, error) {
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.Queues < 1 {
		return c, fmt.Errorf("dwmac: %d queues: want at least 1: %w", c.Queues, nic.ErrConfig)
	}
	for _, r := range []*int{&c.RxRingSize, &c.TxRingSize} {
		if *r == 0 {
			*r = defaultRingSize
		}
		if *r < minRingSize || *r > maxRingSize {
			return c, fmt.Errorf("dwmac: ring of %d descriptors: want %d to %d: %w", *r, minRingSize, maxRingSize, nic.ErrConfig)
		}
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2 * c.RxRingSize
	}
	if c.PoolSize < c.RxRingSize {
		return c, fmt.Errorf("dwmac: pool of %d buffers for a ring of %d: want at least the ring size", c.PoolSize, c.RxRingSize)
	}
	if c.FrameSize == 0 {
		c.FrameSize = dma.DefaultFrameSize
	}
	if c.FrameSize < dma.Headroom+minRxBuf || c.FrameSize%64 != 0 {
		return c, fmt.Errorf("dwmac: frame size %d: want a multiple of 64 of at least %d (headroom %d + %d for the DMA)",
			c.FrameSize, dma.Headroom+minRxBuf, dma.Headroom, minRxBuf)
	}
	if c.MAC != nil && (len(c.MAC) != 6 || c.MAC[0]&1 != 0 || isZero(c.MAC)) {
		return c, fmt.Errorf("dwmac: %q is not a unicast MAC address", c.MAC)
	}
	if c.PHYAddr < 0 || c.PHYAddr > 31 {
		return c, fmt.Errorf("dwmac: PHY address %d: want 1-31, or 0 to scan", c.PHYAddr)
	}
	if c.LinkTimeout == 0 {
		c.LinkTimeout = defaultLinkTimeout
	}
	if c.CSRClockMHz < 0 || c.CSRClockMHz > 800 {
		return c, fmt.Errorf("dwmac: CSR clock %d MHz: want up to 800", c.CSRClockMHz)
	}
	if c.AddrBits != 0 && (c.AddrBits < 32 || c.AddrBits > 64) {
		return c, fmt.Errorf("dwmac: %d address bits: want 32 to 64", c.AddrBits)
	}
	if c.LaunchTimeQueues>>uint(c.Queues) != 0 {
		return c, fmt.Errorf("dwmac: launch time queues %#x name queues beyond the %d configured", c.LaunchTimeQueues, c.Queues)
	}
	return c, nil
}

// HWInfo is what the MAC says about itself (MAC_Version, MAC_HW_Feature0-3),
// decoded, and what the driver chose from it.
type HWInfo struct {
	Version            uint8 // SNPSVER: 0x40 = 4.00 ... 0x52 = 5.20
	UserVersion        uint8 // USERVER
	Features           [4]uint32
	RxFIFO, TxFIFO     int // bytes
	RxQueues, TxQueues int // MTL queues
	RxChans, TxChans   int // DMA channels
	AddrBits           int // HW_FEATURE1.ADDR64: 32, 40 or 48
	HashBins           int // multicast hash table bins (0: none)
	MMC                bool
}

// VersionString renders SNPSVER as the databook does ("5.10").
func (h HWInfo) VersionString() string {
	return fmt.Sprintf("%d.%d0", h.Version>>4, h.Version&0xf)
}

func decodeHW(ver uint32, f [4]uint32) HWInfo {
	h := HWInfo{Version: uint8(ver), UserVersion: uint8(ver >> 8), Features: f}
	h.RxFIFO = 128 << (f[1] >> hwf1RxFIFOShift & hwf1FIFOMask)
	h.TxFIFO = 128 << (f[1] >> hwf1TxFIFOShift & hwf1FIFOMask)
	h.RxQueues = int(f[2]>>hwf2RxQShift&hwf2CntMask) + 1
	h.TxQueues = int(f[2]>>hwf2TxQShift&hwf2CntMask) + 1
	h.RxChans = int(f[2]>>hwf2RxChShift&hwf2CntMask) + 1
	h.TxChans = int(f[2]>>hwf2TxChShift&hwf2CntMask) + 1
	switch f[1] >> hwf1ADDR64Shift & hwf1ADDR64Mask {
	case 0:
		h.AddrBits = 32
	case 1:
		h.AddrBits = 40
	default:
		h.AddrBits = 48
	}
	if n := f[1] >> hwf1HashSizeShift & hwf1HashSizeMask; n != 0 {
		h.HashBins = 32 << n
	}
	h.MMC = f[0]&hwf0MMC != 0
	return h
}

// Port is a DWC Ethernet QoS port brought up by Open. It implements nic.Port.
//
// Control methods may be called from any goroutine; they serialise on ctl. Each
// queue belongs to one goroutine (see rxQueue, txQueue). Close must not run
// while a queue is being polled.
type Port struct {
	// fatal is each channel's fatal-error generation (fatal.go); atomic. 16
	// covers HW_FEATURE2's 4-bit channel counts.
	fatal [16]chanFatal

	dev   nic.Device    // immutable
	regs  nic.Regs      // immutable
	alloc dma.Allocator // immutable
	model Model         // immutable
	cfg   Config        // immutable after Open
	name  string        // immutable
	hw    HWInfo        // immutable after Open

	uncachedRings bool // rings from AllocUncached (see ringmem.go); immutable

	mac net.HardwareAddr // immutable after Open
	// fwAddrHi/Lo are MAC_Address0 as found before the reset; immutable after Open.
	fwAddrHi, fwAddrLo uint32
	phyAddr            int    // immutable after Open
	phyID              uint32 // immutable after Open
	mdioCR             uint32 // immutable after Open
	addrBits           int    // DMA address width in use; immutable after Open
	// dmaLimit is 1 << addrBits; dmaBounded is true when the allocator's Limit
	// already keeps every region below it. Immutable after Open.
	dmaLimit   uint64
	dmaBounded bool
	resetDone  bool       // the DMA software reset completed; immutable after Open
	stripFCS   bool       // MAC_Configuration kept ACS|CST: PL excludes the FCS; immutable after Open
	ieNIE      chStatBits // NIE bit of this core version; immutable
	rxFIFOq    int        // MTL FIFO bytes per RX queue; immutable after Open
	txFIFOq    int

	rx        []*rxQueue // immutable after Open
	tx        []*txQueue // immutable after Open
	irqs      []nic.IRQ  // immutable after Open; nil without interrupts
	perChanIR bool       // INTM = 1: one vector per channel and direction

	ctl       nic.PortCtl   // serialises MDIO, MAC_Configuration and the filter; Closed
	phc       phcState      // set once by Open
	release   func()        // ends Open's claim on dev (nic.Claim); set once by Open
	link      nic.LinkState // last link programmed into MAC_Configuration; guarded by ctl
	lastBMSR  uint16        // guarded by ctl
	lastLinkE error         // last MDIO error seen by Link; guarded by ctl
	filter    pktFilterBits // MAC_Packet_Filter as written; guarded by ctl

	stats nic.CounterTotals // MMC totals, per hwCounters entry; has its own lock

	txc txClock // the i.MX EQOS TX clock (txclock.go says what guards each field)

	warnings []string // non-fatal oddities of the bring-up; immutable after Open

	coal coalesceState // RX coalescing, chosen by Open (coalesce.go says what guards each field)
}

var _ nic.Port = (*Port)(nil)

func (p *Port) r32(r reg) uint32    { return p.regs.Read32(uint32(r)) }
func (p *Port) w32(r reg, v uint32) { p.regs.Write32(uint32(r), v) }

// Open brings up a DWC Ethernet QoS MAC: an Intel mGbE PCI function or the
// i.MX8M Plus EQOS platform device. The Device stays the caller's: Close does not
// close it.
func Open(dev nic.Device, cfg Config) (*Port, error) {
	return nic.OpenClaimed(dev, "dwmac", func() (*Port, error) { return open(dev, cfg) },
		func(p *Port, release func()) { p.release = release })
}

// open brings the port up on a device Open has claimed.
func open(dev nic.Device, cfg Config) (*Port, error) {
	info := dev.Info()
	var model Model
	var ok bool
	if info.Bus == "platform" || info.Compatible != "" {
		model, ok = LookupCompatible(info.Compatible)
		if !ok {
			return nil, fmt.Errorf("dwmac: %s: platform device %q is not one this driver knows (want %q): %w",
				info.Name, info.Compatible, CompatibleIMX8MP, nic.ErrNotSupported)
		}
	} else {
		model, ok = Lookup(info.Vendor, info.Device)
		if !ok {
			return nil, fmt.Errorf("dwmac: %s: PCI device %04x:%04x is not an Intel mGbE: %w", info.Name, info.Vendor, info.Device, nic.ErrNotSupported)
		}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	regs, err := dev.Regs(0)
	if err != nil {
		return nil, fmt.Errorf("dwmac: %s: mapping register window 0: %w", info.Name, err)
	}
	p := &Port{dev: dev, regs: regs, alloc: dev.DMA(), model: model, cfg: cfg, name: info.Name}
	p.ctl.Prefix = "dwmac: " + info.Name
	if err := p.chooseRingMemory(); err != nil {
		return nil, fmt.Errorf("dwmac: %s: %w", info.Name, err)
	}
	if err := p.bringUp(); err != nil {
		p.teardown()
		return nil, fmt.Errorf("dwmac: %s: %w", info.Name, err)
	}
	return p, nil
}

// bringUp follows stmmac's order (stmmac_hw_setup and the dwmac4 callbacks):
// identify, reset the DMA, bus mode, channels, MTL, MAC address, PHY and MAC
// speed, filter, start RX then TX. Each step is one method below, in this
// order.
func (p *Port) bringUp() error {
	// 1. Identify: MAC_Version and the feature registers.
	if err := p.identify(); err != nil {
		return err
	}

	// 2. Bus mastering (PCI only: a platform device masters the bus as is).
	if p.model.Integration == IntegrationIntel {
		if err := p.dev.EnableBusMaster(); err != nil {
			return fmt.Errorf("enabling bus mastering: %w", err)
		}
	}

	// The SGMII SerDes and the PHY first: the MAC's RX clock comes from the
	// PHY through them, and the DMA reset needs it. Linux's stmmac_open
	// resumes the PHY (stmmac_init_phy -> phy_attach -> phy_resume) and
	// __stmmac_open powers the SerDes (serdes_powerup) before
	// stmmac_hw_setup resets the DMA (serdes.go, phy.go).
	if err := p.serdesPowerUp(); err != nil {
		return err
	}
	if err := p.phyPowerUp(); err != nil {
		return err
	}

	// The i.MX EQOS's TX clock: the speeds it serves decide what the PHY
	// advertises (txclock.go).
	if err := p.learnTxClock(); err != nil {
		return err
	}

	// 3. DMA software reset (dwmac4_dma_reset): SWR self-clears once the reset
	// has gone through every clock domain, the PHY's RX clock included.
	if err := p.dmaReset(); err != nil {
		return err
	}
	p.resetDone = true

	// 4. Interrupt vectors, before the channels that use them.
	if p.cfg.Interrupts {
		if err := p.setupIRQs(); err != nil {
			return err
		}
	}

	// 5. DMA bus mode (dwmac4_dma_init, dwmac4_dma_axi).
	p.setupDMABusMode()

	// 6. Per-channel set-up: rings, buffer size, tails.
	if err := p.setupChannels(); err != nil {
		return err
	}

	// 7. MTL queues (dwmac4_dma_rx_chan_op_mode / _tx_chan_op_mode).
	p.setupMTL()

	// 8. Station address.
	if err := p.setupMAC(); err != nil {
		return err
	}

	// 9. Counters and MAC interrupts.
	p.setupMMC()

	// 10. PHY: find it, restart autonegotiation, wait for it (bounded).
	p.ctl.Lock()
	err := p.setupPHY()
	p.ctl.Unlock()
	if err != nil {
		return err
	}

	// 11. MAC_Configuration with the resolved speed and duplex, receiver and
	// transmitter on.
	p.startMAC()

	// 12. Packet filter.
	p.filter = 0
	if p.cfg.Promisc {
		p.filter = pfPR
	}
	p.w32(regMACPktFilter, uint32(p.filter))

	// 13. VLAN tags and the IEEE 1588 clock.
	p.setupVLAN()
	if err := p.setupClock(); err != nil {
		return err
	}

	// 14. Start every RX channel, then every TX channel (stmmac_start_all_dma).
	for _, q := range p.rx {
		q.start()
	}
	for _, q := range p.tx {
		q.start()
	}
	return nil
}

// identify is bring-up step 1: it reads MAC_Version and MAC_HW_Feature0-3,
// refuses a core or a configuration this driver cannot run, and derives what
// the later steps need: the interrupt-enable layout, the MTL FIFO split, the
// DMA address width, the address firmware left and the MDIO clock range.
func (p *Port) identify() error {
	ver := p.r32(regMACVersion)
	if ver == 0xFFFFFFFF {
		return fmt.Errorf("MAC_Version reads 0xFFFFFFFF (is the device powered and clocked, bound to vfio-pci or mapped at the right address?): %w", nic.ErrNoDevice)
	}
	var f [4]uint32
	for i := range f {
		f[i] = p.r32(regMACHWFeature0 + reg(4*i))
	}
	p.hw = decodeHW(ver, f)
	if v := p.hw.Version; v < coreVersion400 || v >= 0x60 {
		return fmt.Errorf("MAC_Version SNPSVER 0x%02x: not a DWC Ethernet QoS 4.x/5.x core (this driver wants 0x40-0x5f): %w", v, nic.ErrNotSupported)
	}
	if p.hw.Version >= coreVersion410 {
		p.ieNIE = ieNIE410
	} else {
		p.ieNIE = ieNIE400
	}
	if p.cfg.LaunchTimeQueues != 0 && p.hw.Features[3]&hwf3TBSSEL == 0 {
		return fmt.Errorf("launch time queues %#x: the MAC has no time-based scheduling (HW_FEATURE3.TBSSEL clear): %w", p.cfg.LaunchTimeQueues, nic.ErrNotSupported)
	}
	maxQ := min(p.model.RxQueues, p.model.TxQueues, p.hw.RxQueues, p.hw.TxQueues, p.hw.RxChans, p.hw.TxChans)
	if p.cfg.Queues > maxQ {
		return fmt.Errorf("%d queues: the %s has %d (MTL %d RX / %d TX, DMA %d RX / %d TX channels): %w",
			p.cfg.Queues, p.model.Name, maxQ, p.hw.RxQueues, p.hw.TxQueues, p.hw.RxChans, p.hw.TxChans, nic.ErrConfig)
	}
	if err := p.chooseCoalesce(); err != nil {
		return err
	}
	p.rxFIFOq = fifoPerQueue(p.hw.RxFIFO, p.cfg.Queues, p.model.FIFOPerQueue)
	p.txFIFOq = fifoPerQueue(p.hw.TxFIFO, p.cfg.Queues, p.model.FIFOPerQueue)
	if p.rxFIFOq < 256 || p.txFIFOq < 256 {
		return fmt.Errorf("MTL FIFOs of %d RX / %d TX bytes cannot be split into %d queues of at least 256 bytes", p.hw.RxFIFO, p.hw.TxFIFO, p.cfg.Queues)
	}
	p.addrBits = p.hw.AddrBits
	if p.model.AddrBits != 0 && p.model.AddrBits < p.addrBits {
		p.addrBits = p.model.AddrBits
	}
	if p.cfg.AddrBits != 0 && p.cfg.AddrBits < p.addrBits {
		p.addrBits = p.cfg.AddrBits
	}
	p.dmaLimit = uint64(1) << p.addrBits
	if l := p.alloc.Limit(); l != 0 && l <= p.dmaLimit {
		p.dmaBounded = true
	}
	// The address firmware left in MAC_Address0: a DMA software reset sets the
	// address registers to their reset value (all ones), so read it now.
	p.fwAddrHi, p.fwAddrLo = p.r32(regMACAddrHigh0), p.r32(regMACAddrLow0)
	p.mdioCR = mdioCR(p.csrClockMHz())
	return nil
}

// csrClockMHz is the CSR clock in MHz: the configured one, else the
// integration's.
func (p *Port) csrClockMHz() int {
	if p.cfg.CSRClockMHz != 0 {
		return p.cfg.CSRClockMHz
	}
	return p.model.CSRClockMHz
}

// setupDMABusMode is bring-up step 5 (dwmac4_dma_init, dwmac4_dma_axi): AXI
// bursts of 4, 8 and 16 beats, extended addressing past 32 bits, the
// interrupt mode and, on Intel's 5.20 cores, descriptor cache handling.
func (p *Port) setupDMABusMode() {
	sys := sysBusBLEN4 | sysBusBLEN8 | sysBusBLEN16
	if p.addrBits > 32 {
		sys |= sysBusEAME
	}
	p.w32(regDMASysBusMode, uint32(sys))
	bm := busModeBits(p.r32(regDMABusMode)) &^ (busModeINTMMask | busModeSWR)
	if p.perChanIR {
		bm |= busModeINTMPerCh
	}
	if p.model.Integration == IntegrationIntel && p.hw.Version >= coreVersion520 {
		bm |= busModeDCHE
	}
	p.w32(regDMABusMode, uint32(bm))
}

// setupChannels is bring-up step 6: for each queue the RX and TX DMA channel
// (rings, buffer size, tails), each TX queue trusting its RX pool's buffers,
// and the interrupt vectors wired to the channels.
func (p *Port) setupChannels() error {
	for i := 0; i < p.cfg.Queues; i++ {
		rq, err := p.setupRx(i)
		if err != nil {
			return fmt.Errorf("RX channel %d: %w", i, err)
		}
		p.rx = append(p.rx, rq)
		tq, err := p.setupTx(i)
		if err != nil {
			return fmt.Errorf("TX channel %d: %w", i, err)
		}
		p.tx = append(p.tx, tq)
	}
	for _, rq := range p.rx {
		p.tx[rq.idx].guard.Trust(rq.Pool())
	}
	if p.irqs != nil {
		p.wireIRQs()
	}
	return nil
}

// setupMTL is bring-up step 7 (dwmac4_dma_rx_chan_op_mode /
// _tx_chan_op_mode): store and forward both ways, TX queues enabled, FIFO
// split evenly; RX queue q to DMA channel q, every RX queue enabled for
// generic traffic, and VLAN priorities spread over the queues when asked.
func (p *Port) setupMTL() {
	var map0, map1 uint32
	for q := 0; q < p.cfg.Queues; q++ {
		tqs := uint32(min(p.txFIFOq/mtlTxTQSUnit-1, mtlTxTQSMaxVal))
		p.w32(mtlQ(q, mtlQTxOpMode), uint32(mtlTxTSF|mtlTxQEnabled)|tqs<<mtlTxTQSShift)
		rqs := uint32(min(p.rxFIFOq/mtlRxRQSUnit-1, mtlRxRQSMax))
		p.w32(mtlQ(q, mtlQRxOpMode), uint32(mtlRxRSF)|rqs<<mtlRxRQSShift)
		if q < 4 {
			map0 |= uint32(q) << (8 * q)
		} else {
			map1 |= uint32(q) << (8 * (q - 4))
		}
	}
	p.w32(regMTLRxQDMAMap0, map0)
	if p.cfg.Queues > 4 {
		p.w32(regMTLRxQDMAMap1, map1)
	}
	var rxq uint32
	for q := 0; q < p.cfg.Queues; q++ {
		rxq |= rxqGeneric << (2 * q)
	}
	p.w32(regMACRxQCtrl0, rxq)
	if p.cfg.VLANPriorityQueues {
		ctrl2, ctrl3 := vlanPriorityMasks(p.cfg.Queues)
		p.w32(regMACRxQCtrl2, ctrl2)
		p.w32(regMACRxQCtrl3, ctrl3)
	}
}

// setupMMC is bring-up step 9: counters reset, reset-on-read, their
// interrupts masked (dwmac_mmc_ctrl, dwmac_mmc_intr_all_mask); MAC interrupts
// off (the link comes from the PHY); the 1 us tick from the CSR clock.
func (p *Port) setupMMC() {
	if p.hw.MMC {
		p.w32(regMMCRxIntrMask, 0xFFFFFFFF)
		p.w32(regMMCTxIntrMask, 0xFFFFFFFF)
		p.w32(regMMCIPCIntrMask, 0xFFFFFFFF)
		p.w32(regMMCControl, uint32(mmcCtrlReset|mmcCtrlResetOnRead))
	}
	p.w32(regMACIntEnable, 0)
	p.w32(regMAC1usTic, uint32(p.csrClockMHz()-1))
}

// startMAC is bring-up step 11: MAC_Configuration with the resolved speed and
// duplex, receiver and transmitter on. The read-back says whether the MAC kept
// ACS|CST, that is whether it strips the FCS; decided once, before any queue
// runs.
func (p *Port) startMAC() {
	p.ctl.Lock()
	p.programMAC(p.link)
	p.ctl.Unlock()
	back := macCfgBits(p.r32(regMACConfig))
	p.stripFCS = back&(macCfgACS|macCfgCST) == macCfgACS|macCfgCST
	for _, q := range p.rx {
		q.stripFCS = p.stripFCS
	}
}

// setupClock is the second half of bring-up step 13: the IEEE 1588 clock,
// optional unless timestamps or launch time were asked for, then each TX
// queue's offloads and FIFO share.
func (p *Port) setupClock() error {
	if err := p.setupPTP(); err != nil {
		if p.cfg.RxTimestamp || p.cfg.LaunchTimeQueues != 0 {
			return err
		}
		// The clock is an extra: a port that did not ask for timestamps
		// opens without it (no PHC).
		p.phc = phcState{}
		p.w32(regPTPTCR, 0)
		p.warnings = append(p.warnings, fmt.Sprintf("IEEE 1588 clock not started (%v): no PHC", err))
	}
	if p.cfg.LaunchTimeQueues != 0 && !p.phc.on {
		return fmt.Errorf("launch time queues %#x: no IEEE 1588 clock to time them (HW_FEATURE0.TSSEL clear or PTP reference clock unknown): %w", p.cfg.LaunchTimeQueues, nic.ErrNotSupported)
	}
	for _, q := range p.tx {
		q.caps, q.fifo, q.unchecked = p.txCaps(q), p.txFIFOq, p.cfg.uncheckedTxMeta
	}
	return nil
}

// fifoPerQueue splits a FIFO of total bytes over n queues, no larger than the
// integration's per-queue size (0: no cap), rounded down to 256 bytes.
func fifoPerQueue(total, n, perQueue int) int {
	v := total / n
	if perQueue > 0 && perQueue < v {
		v = perQueue
	}
	return v &^ 255
}

// dmaReset sets DMA_Mode.SWR and polls it in 10 ms steps for up to 1 s.
func (p *Port) dmaReset() error {
	p.w32(regDMABusMode, p.r32(regDMABusMode)|uint32(busModeSWR))
	time.Sleep(swrPollStep) // the first read comes one step after the write
	_, err := nic.PollReg(p.regs, uint32(regDMABusMode), swrTimeout, swrPollStep, func(v uint32) bool {
		return busModeBits(v)&busModeSWR == 0
	})
	switch {
	case errors.Is(err, nic.ErrNoDevice):
		return fmt.Errorf("DMA software reset: DMA_Mode reads all ones: %w", err)
	case err != nil:
		return fmt.Errorf("DMA software reset: DMA_Mode.SWR still set after %v: the PHY's RX clock is missing "+
			"(the DMA reset completes only with the receive clock running: check that the PHY is powered and out of reset, "+
			"that its reference clock runs, and that the interface mode (RGMII/RMII/SGMII) matches the board): %w", swrTimeout, err)
	}
	return nil
}

// setupIRQs asks for the vectors: on Intel two per channel (RX i on 2i, TX i on
// 2i+1, dwmac-intel.c) with per-channel interrupt mode; otherwise, or when the
// device gives a single vector, one shared vector for a single queue.
func (p *Port) setupIRQs() error {
	want := 1
	if p.model.Integration == IntegrationIntel {
		want = 2 * p.cfg.Queues
	}
	irqs, err := p.dev.EnableMSIX(want)
	if err != nil {
		return fmt.Errorf("enabling %d interrupt vectors: %w", want, err)
	}
	p.irqs = irqs
	switch {
	case p.model.Integration == IntegrationIntel && len(irqs) >= want:
		p.perChanIR = true
	case len(irqs) >= 1 && p.cfg.Queues == 1:
		p.perChanIR = false
	default:
		return fmt.Errorf("the device gave %d interrupt vectors; %d queues with interrupts need %d (use one queue, or polling): %w",
			len(irqs), p.cfg.Queues, want, nic.ErrNotSupported)
	}
	return nil
}

// wireIRQs hands each RX queue its vector and enables its receive interrupt.
func (p *Port) wireIRQs() {
	for i, q := range p.rx {
		if p.perChanIR {
			q.irq = p.irqs[2*i]
		} else {
			q.irq = p.irqs[0]
		}
		q.ie = p.ieNIE | chStatRI
		p.w32(chReg(i, chIntrEnable), uint32(q.ie))
	}
}

// setupMAC programs MAC_Address0: cfg.MAC, else what firmware left there
// (read before the DMA reset), else a random locally administered address.
func (p *Port) setupMAC() error {
	switch {
	case p.cfg.MAC != nil:
		p.mac = append(net.HardwareAddr(nil), p.cfg.MAC...)
	default:
		hi, lo := p.fwAddrHi, p.fwAddrLo
		m := macFromRegs(hi, lo)
		if isZero(m) || m[0]&1 != 0 || (hi&0xFFFF == 0xFFFF && lo == 0xFFFFFFFF) {
			m = make(net.HardwareAddr, 6)
			if _, err := rand.Read(m); err != nil {
				return fmt.Errorf("random MAC address: %w", err)
			}
			m[0] = m[0]&^1 | 2 // unicast, locally administered
			p.warnings = append(p.warnings, fmt.Sprintf("no valid MAC address in MAC_Address0 (firmware left none): using random %s; set Config.MAC", m))
		}
		p.mac = m
	}
	hi, lo := macToRegs(p.mac)
	p.w32(regMACAddrHigh0, hi|addrHighAE)
	p.w32(regMACAddrLow0, lo)
	return nil
}

func macFromRegs(hi, lo uint32) net.HardwareAddr {
	return net.HardwareAddr{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
}

func macToRegs(m net.HardwareAddr) (hi, lo uint32) {
	lo = uint32(m[0]) | uint32(m[1])<<8 | uint32(m[2])<<16 | uint32(m[3])<<24
	hi = uint32(m[4]) | uint32(m[5])<<8
	return hi, lo
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// setupPHY finds the PHY, restarts autonegotiation and waits up to
// cfg.LinkTimeout for the link. Caller holds ctl.
func (p *Port) setupPHY() error {
	if err := p.setupXPCS(); err != nil {
		return err
	}
	if p.phyID == 0 { // found by phyPowerUp before the DMA reset otherwise
		a, id, err := p.findPHY()
		if err != nil {
			return err
		}
		p.phyAddr, p.phyID = a, id
	}
	if err := p.restartAutoneg(); err != nil {
		return err
	}
	if p.cfg.LinkTimeout < 0 {
		return nil
	}
	var (
		l    nic.LinkState
		bmsr uint16
		err  error
	)
	nic.Poll(p.cfg.LinkTimeout, linkPollStep, func() bool {
		l, bmsr, err = p.phyLink()
		p.lastBMSR = bmsr
		if err == nil {
			l = p.admitLocked(l, bmsr)
		}
		return err != nil || l.Up || p.txClockProblem() != nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("reading the link from PHY %d: %w", p.phyAddr, err)
	case l.Up:
		p.link = l
		if n := p.txClockNote(); n != "" {
			p.warnings = append(p.warnings, n)
		}
	case p.txClockProblem() != nil:
		p.warnings = append(p.warnings, p.txClockProblem().Error())
	default:
		p.warnings = append(p.warnings, fmt.Sprintf("link down after %v of autonegotiation (PHY %d BMSR 0x%04x); the MAC starts at 1000/full and follows the PHY when Link sees it up",
			p.cfg.LinkTimeout, p.phyAddr, bmsr))
	}
	return nil
}

// macSpeedBits encodes a link's speed and duplex for MAC_Configuration (stmmac
// dwmac4.h GMAC_CONFIG_PS/FES and dwmac4_core.c: 10M PS, 100M PS|FES, 1G neither, 2.5G FES). A link that is down programs
// 1000/full.
func macSpeedBits(l nic.LinkState) macCfgBits {
	var v macCfgBits
	switch l.SpeedMbps {
	case 10:
		v = macCfgPS
	case 100:
		v = macCfgPS | macCfgFES
	case 2500:
		v = macCfgFES
	}
	if l.FullDuplex || !l.Up {
		v |= macCfgDM
	}
	return v
}

// programMAC writes MAC_Configuration for link l with the receiver and
// transmitter on. Caller holds ctl.
func (p *Port) programMAC(l nic.LinkState) {
	v := macCfgRE | macCfgTE | macCfgBE | macCfgDCRS | macCfgACS | macCfgCST | macSpeedBits(l)
	if p.txParked() {
		v &^= macCfgTE // a link the TX clock cannot serve: send nothing (txclock.go)
	}
	p.w32(regMACConfig, uint32(v))
}

// Name is the device's name (PCI address, platform name, or model name).
func (p *Port) Name() string { return p.name }

// MAC is the port's station address.
func (p *Port) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), p.mac...) }

// Model is the device's entry in the ID tables.
func (p *Port) Model() Model { return p.model }

// HW is what the MAC reported about itself at bring-up.
func (p *Port) HW() HWInfo { return p.hw }

// AddrBits is the DMA address width in use (EAME is set above 32).
func (p *Port) AddrBits() int { return p.addrBits }

// StripsFCS reports whether the MAC strips the FCS of received frames (the
// driver then takes PL as the frame length; otherwise it subtracts 4).
func (p *Port) StripsFCS() bool { return p.stripFCS }

// Warnings lists non-fatal oddities seen during bring-up.
func (p *Port) Warnings() []string { return append([]string(nil), p.warnings...) }

// Link reads the link from the PHY over MDIO and, when it changed, programs the
// MAC's speed and duplex to match (what phylink's mac_link_up does in Linux).
func (p *Port) Link() nic.LinkState {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.ctl.Closed {
		return nic.LinkState{}
	}
	l, bmsr, err := p.phyLink()
	p.lastBMSR, p.lastLinkE = bmsr, err
	if err != nil {
		return nic.LinkState{}
	}
	l = p.admitLocked(l, bmsr)
	if l.Up && l != p.link {
		p.programMAC(l)
	}
	if l.Up || p.link.Up {
		p.link = l
	}
	return l
}

// WaitLink polls the PHY until the link is up or timeout passes.
func (p *Port) WaitLink(timeout time.Duration) (nic.LinkState, error) {
	l, up := nic.WaitLinkUp(timeout, linkPollStep, p.Link)
	if up {
		return l, nil
	}
	p.ctl.Lock()
	bmsr, lerr, closed, refused := p.lastBMSR, p.lastLinkE, p.ctl.Closed, p.txClockProblem()
	p.ctl.Unlock()
	if closed { // Link answers "down" on a closed port
		return l, fmt.Errorf("dwmac: %s: %w", p.name, nic.ErrClosed)
	}
	if refused != nil {
		return l, fmt.Errorf("no link after %v: %w (%w)", timeout, refused, nic.ErrLinkDown)
	}
	if lerr != nil {
		return l, fmt.Errorf("dwmac: %s: no link after %v: the PHY could not be read (%v): %w", p.name, timeout, lerr, nic.ErrLinkDown)
	}
	an := "not complete"
	if bmsr&bmsrANComplete != 0 {
		an = "complete"
	}
	return l, fmt.Errorf("dwmac: %s: no link after %v: PHY %d BMSR 0x%04x (link status %d, autonegotiation %s); check the cable and the link partner: %w",
		p.name, timeout, p.phyAddr, bmsr, bmsr&bmsrLinkStatus>>2, an, nic.ErrLinkDown)
}

// NumQueues is the number of RX/TX queue pairs.
func (p *Port) NumQueues() int { return len(p.rx) }

// RxQueue returns RX queue i, or nil when out of range.
func (p *Port) RxQueue(i int) nic.RxQueue { return nic.RxQueueAt(p.rx, i) }

// TxQueue returns TX queue i, or nil when out of range.
func (p *Port) TxQueue(i int) nic.TxQueue { return nic.TxQueueAt(p.tx, i) }

// SetPromisc turns promiscuous mode (MAC_Packet_Filter.PR) on or off.
func (p *Port) SetPromisc(on bool) error {
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	if on {
		p.filter |= pfPR
	} else {
		p.filter &^= pfPR
	}
	p.w32(regMACPktFilter, uint32(p.filter))
	return nil
}

// SetMulticast replaces the multicast filter with the given group addresses: a
// hash filter when the MAC has a hash table (other groups that hash alike pass
// too), otherwise pass-all-multicast. An empty list accepts no multicast.
func (p *Port) SetMulticast(addrs []net.HardwareAddr) error {
	for _, a := range addrs {
		if len(a) != 6 || a[0]&1 == 0 {
			return fmt.Errorf("dwmac: %q is not a multicast MAC address", a)
		}
	}
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	p.filter &^= pfHMC | pfPM
	bins := p.hw.HashBins
	switch {
	case len(addrs) == 0:
	case bins == 0:
		p.filter |= pfPM
	default:
		table := make([]uint32, bins/32)
		for _, a := range addrs {
			h := mcHash(a, bins)
			table[h>>5] |= 1 << (h & 31)
		}
		for i, w := range table {
			p.w32(regMACHashTable0+reg(4*i), w)
		}
		p.filter |= pfHMC
	}
	p.w32(regMACPktFilter, uint32(p.filter))
	return nil
}

// mcHash is the hash bin of a multicast address (dwmac4_set_filter): the top
// log2(bins) bits of bitrev32(~crc32_le(~0, addr)), where ~crc32_le(~0, addr) is
// the standard IEEE CRC-32 of the address.
func mcHash(a net.HardwareAddr, bins int) uint32 {
	return bits.Reverse32(crc32.ChecksumIEEE(a)) >> (32 - bits.Len(uint(bins)-1))
}

// Close stops the DMA channels and the MAC, returns every buffer on the rings
// to its pool and frees rings and pools. Buffers the caller still holds from
// this port's pools must not be used afterwards. The Device stays open, and a
// second Open on it works.
func (p *Port) Close() error {
	if !p.ctl.MarkClosed() {
		return nil
	}
	p.collectStats() // keep the totals: the next reset clears the counters
	p.stats.Stop()
	err := p.teardown()
	p.release() // the device may be opened again
	return err
}

// teardown undoes whatever part of bring-up happened (stmmac_stop_all_dma, then
// the MAC off).
func (p *Port) teardown() error {
	var errs []error
	// A device whose reset never finished takes no register access but reads of
	// DMA_Mode; one that reads all ones is gone. Either way there is nothing to
	// stop, only memory to free.
	present := p.resetDone && p.r32(regMACVersion) != 0xFFFFFFFF
	if present {
		for _, q := range p.tx {
			q.stop()
		}
		for _, q := range p.rx {
			q.stop()
		}
		p.w32(regMACConfig, p.r32(regMACConfig)&^uint32(macCfgRE|macCfgTE))
	}
	for _, q := range p.rx {
		q.stopped = true
	}
	for _, q := range p.tx {
		q.stopped = true
	}
	if p.irqs != nil {
		errs = append(errs, nic.DisableIRQs(p.dev))
		p.irqs = nil
	}
	return nic.FreeQueues("dwmac", p.name, errs, p.tx, (*txQueue).free, p.rx, (*rxQueue).free)
}

// reach refuses a region the device cannot address: above its DMA width, or
// crossing a 4 GiB boundary (the tail pointer registers hold the low 32 bits
// only, with the high bits from the ring base).
func (p *Port) reach(what string, iova uint64, n int) error {
	end := iova + uint64(n)
	if !p.dmaBounded && end > p.dmaLimit {
		return fmt.Errorf("%s at 0x%x-0x%x lies above the device's %d-bit DMA reach (0x%x): give the device memory below it: %w",
			what, iova, end, p.addrBits, p.dmaLimit, dma.ErrTooHigh)
	}
	return nil
}

// ErrDMAStopped is wrapped by CheckDMA when a channel stopped on a fatal error.
var ErrDMAStopped = errors.New("dwmac: DMA channel stopped")

// CheckDMA reads every channel's DMA_CHx_Status (reading does not clear it) and
// returns an error naming the channels a fatal condition stopped: FBE (a bus
// error, with the TEB/REB detail: usually a descriptor or buffer address the
// device could not reach) or TPS/RPS (the process stopped). stmmac restarts
// such a channel; this driver reports it, and a Close and Open recovers.
func (p *Port) CheckDMA() error {
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	var errs []error
	for i := range p.rx {
		v := chStatBits(p.r32(chReg(i, chStatus)))
		if uint32(v) == 0xFFFFFFFF {
			return fmt.Errorf("dwmac: %s: DMA_CH%d_Status reads all ones: %w", p.name, i, nic.ErrNoDevice)
		}
		if v&(chStatFBE|chStatTPS|chStatRPS) == 0 {
			continue
		}
		var what []string
		if v&chStatFBE != 0 {
			what = append(what, fmt.Sprintf("FBE (fatal bus error, TEB=%d REB=%d)", uint32(v)>>chStatTEBShift&7, uint32(v)>>chStatREBShift&7))
		}
		if v&chStatTPS != 0 {
			what = append(what, "TPS (transmit process stopped)")
		}
		if v&chStatRPS != 0 {
			what = append(what, "RPS (receive process stopped)")
		}
		errs = append(errs, fmt.Errorf("channel %d: %s: %w", i, strings.Join(what, ", "), ErrDMAStopped))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dwmac: %s: %w", p.name, err)
	}
	return nil
}

// vlanPriorityMasks returns MAC_RxQ_Ctrl2 and 3 routing VLAN priority p to RX
// queue p mod queues: byte n of the pair (PSRQn) has bit p set for each p the
// queue takes, and every priority is in exactly one byte.
func vlanPriorityMasks(queues int) (ctrl2, ctrl3 uint32) {
	var both uint64
	for prio := 0; prio < 8; prio++ {
		both |= 1 << (8*uint(prio%queues) + uint(prio))
	}
	return uint32(both), uint32(both >> 32)
}
