package igb

import (
	"crypto/rand"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Config chooses how Open brings a port up. The zero value is usable.
type Config struct {
	// Queues is the number of RX/TX queue pairs, 1-4 (and no more than the MAC
	// has). With more than one, RSS spreads flows over the RX queues. Default 1.
	Queues int
	// RxRingSize and TxRingSize are descriptors per ring: a multiple of 8 from 8
	// to 4096. Default 512 each.
	RxRingSize, TxRingSize int
	// PoolSize is the number of buffers in each RX queue's pool; it must exceed
	// RxRingSize (the ring holds RxRingSize-1). Default 2*RxRingSize.
	PoolSize int
	// FrameSize is the size of one pool buffer: dma.Headroom in front, then at
	// least 2 KiB for the device (SRRCTL.BSIZEPKT counts whole KiB). Default
	// 4096: one page per buffer, as the kernel's XDP page_pool (256 bytes of
	// headroom, 3 KiB for the device, room for adjust_tail to grow a frame), and
	// no buffer crosses a page, so a frame sent from it (XDP_TX) takes one TX
	// descriptor.
	FrameSize int
	// Interrupts sets up MSI-X: one vector per queue pair and one for link and
	// other causes. Without it the queues are polled.
	Interrupts bool
	// ITR is the minimum interval between two interrupts of one vector (EITR).
	// Zero: no moderation.
	ITR time.Duration
	// Promisc accepts every unicast and multicast frame (RCTL.UPE|MPE).
	Promisc bool
	// RSSKey is the 40-byte Toeplitz key; nil picks a random one.
	RSSKey []byte
	// LinkTimeout is how long Open waits for the link after restarting
	// autonegotiation. Open does not fail when the link stays down (WaitLink
	// does). Zero means 5 s; negative, no wait.
	LinkTimeout time.Duration
	// PHYAddr is the MDIO address of the PHY. Zero means 1, the internal PHY.
	PHYAddr int
	// VLANStrip has the MAC strip 802.1Q tags (CTRL.VME) and report them in
	// dma.Buf.VLANProto/VLANTCI with dma.FlagVLAN; without it tags stay in
	// the frame and none is reported.
	VLANStrip bool
	// RxTimestamp timestamps every received frame with the port's clock
	// (dma.Buf.Timestamp with dma.FlagTimestamp; see PHC). I210 and I211 only.
	RxTimestamp bool
	// LaunchTime sets up TX queue q for launch times (nic.TxMetaLaunchTime)
	// when bit q is set: the I210's Qav mode with the queue as a stream
	// reservation queue holding each frame until the clock reaches its
	// dma.Buf.LaunchTime (I210 datasheet 7.2.7.5; Linux igb_setup_tx_mode,
	// igb_config_tx_modes). I210 only, queues 0 and 1. Every frame on such a
	// queue takes a context descriptor, and a burst reads the clock once.
	LaunchTime uint8
}

const (
	defaultRingSize    = 512
	maxRingSize        = 4096
	defaultFrameSize   = 4096
	defaultLinkTimeout = 5 * time.Second
	maxQueues          = 4
	rssKeyLen          = 40
	retaEntries        = 128
)

func (c Config) withDefaults(m Model) (Config, error) {
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.Queues < 1 || c.Queues > maxQueues || c.Queues > m.Queues {
		return c, fmt.Errorf("igb: %d queues: want 1 to %d on the %s: %w", c.Queues, min(maxQueues, m.Queues), m.MAC, nic.ErrConfig)
	}
	for _, r := range []*int{&c.RxRingSize, &c.TxRingSize} {
		if *r == 0 {
			*r = defaultRingSize
		}
		if *r < 8 || *r > maxRingSize || *r%8 != 0 {
			return c, fmt.Errorf("igb: ring of %d descriptors: want a multiple of 8 from 8 to %d (the ring is a multiple of 128 bytes): %w", *r, maxRingSize, nic.ErrConfig)
		}
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2 * c.RxRingSize
	}
	if c.PoolSize < c.RxRingSize {
		return c, fmt.Errorf("igb: pool of %d buffers for a ring of %d: want at least the ring size", c.PoolSize, c.RxRingSize)
	}
	if c.FrameSize == 0 {
		c.FrameSize = defaultFrameSize
	}
	if c.FrameSize < dma.Headroom+2048 || c.FrameSize%64 != 0 {
		return c, fmt.Errorf("igb: frame size %d: want a multiple of 64 of at least %d (headroom %d + 2 KiB for the device)", c.FrameSize, dma.Headroom+2048, dma.Headroom)
	}
	if c.RSSKey != nil && len(c.RSSKey) != rssKeyLen {
		return c, fmt.Errorf("igb: RSS key of %d bytes: want %d", len(c.RSSKey), rssKeyLen)
	}
	if c.LinkTimeout == 0 {
		c.LinkTimeout = defaultLinkTimeout
	}
	if c.PHYAddr == 0 {
		c.PHYAddr = phyDefIdx
	}
	if c.RxTimestamp && !hasI210Clock(m.MAC) {
		return c, fmt.Errorf("igb: RX timestamps on the %s: supported on the I210 and I211 only", m.MAC)
	}
	if c.ITR < 0 {
		c.ITR = 0
	}
	if c.LaunchTime != 0 && m.MAC != MACI210 {
		return c, fmt.Errorf("igb: launch time on the %s: only the I210 has it (Qav mode)", m.MAC)
	}
	if c.LaunchTime&^3 != 0 || c.LaunchTime>>c.Queues != 0 {
		return c, fmt.Errorf("igb: launch time on TX queues %#b: only queues 0 and 1 (the I210's stream reservation queues) of the %d set up", c.LaunchTime, c.Queues)
	}
	return c, nil
}

// Port is an igb port brought up by Open. It implements nic.Port.
//
// Control methods may be called from any goroutine; they serialise on ctl. Each
// queue belongs to one goroutine (see rxQueue, txQueue). Close must not run while
// a queue is being polled.
type Port struct {
	dev   nic.Device // immutable
	regs  nic.Regs   // immutable
	alloc dma.Allocator
	model Model  // immutable
	cfg   Config // immutable after Open
	name  string // immutable

	mac     net.HardwareAddr // immutable after Open
	phyAddr int              // immutable
	phyID   uint32           // immutable after Open
	media   Media            // immutable after Open: CTRL_EXT.LINK_MODE (pcs.go)
	rssKey  [rssKeyLen]byte  // immutable after Open

	// linkModeKX and pcsAutoneg: a SerDes port's 1000BASE-KX mode and
	// clause-37 negotiation (pcs.go); immutable after Open.
	linkModeKX, pcsAutoneg bool

	rx   []*rxQueue // immutable after Open
	tx   []*txQueue // immutable after Open
	irqs []nic.IRQ  // immutable after Open; nil without interrupts

	ctl nic.PortCtl // serialises control register sequences (MDIC, RCTL, MTA); Closed

	release func() // ends Open's claim on dev (nic.Claim); set once by Open

	stats nic.CounterTotals // hwCounters totals; has its own lock
	// rqdpcSeen is each RX queue's RQDPC at the last read, on the parts
	// where reading does not clear it (collectStats, under stats' lock).
	rqdpcSeen []uint32

	// txStampBusy: a frame holding the port's one TX timestamp latch is in
	// flight (txmeta.go). Set by the queue that sends it, cleared by the queue
	// that completes it (the same one).
	txStampBusy atomic.Bool

	// warnings are non-fatal oddities of the bring-up; immutable after Open.
	warnings []string
}

var _ nic.Port = (*Port)(nil)

func (p *Port) r32(r reg) uint32    { return p.regs.Read32(uint32(r)) }
func (p *Port) w32(r reg, v uint32) { p.regs.Write32(uint32(r), v) }

// Open resets the device, brings the link up and sets up cfg.Queues RX/TX queue
// pairs. The Device stays the caller's: Close does not close it.
func Open(dev nic.Device, cfg Config) (*Port, error) {
	return nic.OpenClaimed(dev, "igb", func() (*Port, error) { return open(dev, cfg) },
		func(p *Port, release func()) { p.release = release })
}

// open brings the port up on a device Open has claimed.
func open(dev nic.Device, cfg Config) (*Port, error) {
	info := dev.Info()
	model, ok := Lookup(info.Vendor, info.Device)
	if !ok {
		return nil, fmt.Errorf("igb: %s: device %04x:%04x is not an 82576, I350, I210 or I211: %w", info.Name, info.Vendor, info.Device, nic.ErrNotSupported)
	}
	cfg, err := cfg.withDefaults(model)
	if err != nil {
		return nil, err
	}
	regs, err := dev.Regs(0)
	if err != nil {
		return nil, fmt.Errorf("igb: %s: mapping BAR 0: %w", info.Name, err)
	}
	p := &Port{dev: dev, regs: regs, alloc: dev.DMA(), model: model, cfg: cfg, name: info.Name, phyAddr: cfg.PHYAddr}
	p.ctl.Prefix = "igb: " + info.Name
	if err := p.bringUp(); err != nil {
		p.teardown()
		return nil, fmt.Errorf("igb: %s: %w", info.Name, err)
	}
	return p, nil
}

func (p *Port) bringUp() error {
	if v := p.r32(regSTATUS); v == 0xFFFFFFFF {
		return fmt.Errorf("STATUS reads 0xFFFFFFFF (is the device powered, bound to vfio-pci, and its BAR enabled?): %w", nic.ErrNoDevice)
	}
	if err := p.dev.EnableBusMaster(); err != nil {
		return fmt.Errorf("enabling bus mastering: %w", err)
	}
	if err := p.reset(); err != nil {
		return err
	}
	if err := p.detectMedia(); err != nil {
		return err
	}
	if err := p.readMAC(); err != nil {
		return err
	}
	if err := p.setupLink(); err != nil {
		return err
	}
	p.setupFilters()
	p.setupPTP()
	p.setupQav()
	for i := 0; i < p.cfg.Queues; i++ {
		rq, err := p.setupRx(i)
		if err != nil {
			return fmt.Errorf("RX queue %d: %w", i, err)
		}
		p.rx = append(p.rx, rq)
		tq, err := p.setupTx(i)
		if err != nil {
			return fmt.Errorf("TX queue %d: %w", i, err)
		}
		p.tx = append(p.tx, tq)
	}
	for _, rq := range p.rx {
		tq := p.tx[rq.idx]
		tq.guard.Trust(rq.Pool())
	}
	if err := p.setupRSS(); err != nil {
		return err
	}
	if p.cfg.Interrupts {
		if err := p.setupIRQs(); err != nil {
			return err
		}
	}
	// Receiver and transmitter on (8.10.1, 8.12.1). The queues run already; the
	// RX tails were written after their RXDCTL.ENABLE read back set.
	rctl := rctlEN | rctlBAM | rctlSECRC | rctlRDMTSHalf
	if p.cfg.Promisc {
		rctl |= rctlUPE | rctlMPE
	}
	p.w32(regRCTL, uint32(rctl))
	p.w32(regTCTL, uint32(tctlEN|tctlPSP|tctlRTLC)|0xF<<tctlCTShift|0x3F<<tctlCOLDShft)
	p.r32(regSTATUS) // flush posted writes
	if p.cfg.LinkTimeout > 0 {
		p.WaitLink(p.cfg.LinkTimeout) //nolint:errcheck // a port with the link down still opens
	}
	return nil
}

// reset performs the software reset of 82576 datasheet 4.2.1.6 / Linux
// igb_reset_hw_82575: stop DMA, mask interrupts, stop RX/TX, reset, wait for the
// NVM auto-read, mask again.
func (p *Port) reset() error {
	ctrl := p.r32(regCTRL)
	p.w32(regCTRL, ctrl|uint32(ctrlGIOMasterD))
	if !p.poll(800*time.Millisecond, func(v uint32) bool { return statusBits(v)&statusGIOMaster == 0 }, regSTATUS) {
		// Linux carries on as well: the reset below stops the master anyway.
		p.warnings = append(p.warnings, "GIO master disable: DMA requests still pending after 800ms; resetting anyway")
	}
	p.w32(regIMC, 0xFFFFFFFF)
	p.w32(regEIMC, 0xFFFFFFFF)
	p.w32(regRCTL, 0)
	p.w32(regTCTL, uint32(tctlPSP))
	p.r32(regSTATUS) // flush
	time.Sleep(10 * time.Millisecond)

	p.w32(regCTRL, p.r32(regCTRL)|uint32(ctrlRST))
	time.Sleep(2 * time.Millisecond) // no register access right after RST (Linux waits too)
	var last uint32
	if !p.poll(time.Second, func(v uint32) bool { last = v; return v != 0xFFFFFFFF && ctrlBits(v)&ctrlRST == 0 }, regCTRL) {
		if last == 0xFFFFFFFF {
			return fmt.Errorf("device reset: registers read all ones afterwards: %w", nic.ErrNoDevice)
		}
		return fmt.Errorf("device reset: CTRL.RST still set after 1s (the device is stuck in reset): %w", nic.ErrTimeout)
	}
	// The NVM auto-read loads the MAC address and defaults after reset. Linux
	// waits up to 10 ms and carries on without it (parts without an NVM, and
	// QEMU's igb, never set AUTO_RD); so do we, with a warning.
	if !p.poll(50*time.Millisecond, func(v uint32) bool { return v&eecdAutoRD != 0 }, regEECD) {
		p.warnings = append(p.warnings, "EECD.AUTO_RD not set 50ms after reset (no NVM, or an emulated device); continuing as Linux does")
	}
	p.w32(regIMC, 0xFFFFFFFF)
	p.w32(regEIMC, 0xFFFFFFFF)
	p.r32(regICR) // clear causes latched during reset
	p.w32(regCTRL_EXT, p.r32(regCTRL_EXT)|ctrlExtDrvLoad)
	return nil
}

// poll reads r every 100 us until cond holds or d passes (nic.Poll's timing).
// It reports whether cond held. cond sees every value, all ones included.
func (p *Port) poll(d time.Duration, cond func(uint32) bool, r reg) bool {
	return nic.Poll(d, 100*time.Microsecond, func() bool { return cond(p.r32(r)) })
}

// readMAC takes the address the NVM auto-read loaded into RAL/RAH(0).
func (p *Port) readMAC() error {
	lo, hi := p.r32(regRAL0), p.r32(regRAH0)
	m := macFromRA(lo, hi)
	if hi&rahAV == 0 || isZero(m) || m[0]&1 != 0 {
		return fmt.Errorf("no valid MAC address in RAL/RAH(0) (%s, AV=%d): the NVM holds none", m, hi>>31)
	}
	p.mac = m
	return nil
}

func macFromRA(lo, hi uint32) net.HardwareAddr {
	return net.HardwareAddr{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// setupLink sets the MAC's link up and (re)starts autonegotiation on the PHY,
// or on a SerDes port on the PCS (pcs.go).
func (p *Port) setupLink() error {
	ctrl := ctrlBits(p.r32(regCTRL))
	ctrl &^= ctrlLRST | ctrlPHYRST | ctrlILOS | ctrlFRCSPD | ctrlFRCDPX
	ctrl |= ctrlSLU
	if p.cfg.VLANStrip {
		ctrl |= ctrlVME
	} else {
		ctrl &^= ctrlVME
	}
	if p.media == MediaSerDes {
		return p.setupSerDesLink(ctrl)
	}
	p.w32(regCTRL, uint32(ctrl))
	p.ctl.Lock()
	defer p.ctl.Unlock()
	id, err := p.readPHYID()
	if err != nil {
		return fmt.Errorf("reading the PHY ID: %w", err)
	}
	p.phyID = id
	return p.restartAutoneg()
}

// setupFilters clears the multicast table and keeps RAR(0) valid.
func (p *Port) setupFilters() {
	for i := 0; i < 128; i++ {
		p.w32(regMTA+reg(4*i), 0)
	}
	p.w32(regRAH0, p.r32(regRAH0)|rahAV)
	// Checksum offload reporting on; PCSD puts the RSS hash in the write-back.
	p.w32(regRXCSUM, rxcsumIPOFLD|rxcsumTUOFLD|rxcsumPCSD)
}

// setupRSS programs the key, the redirection table and MRQC (82576 7.1.2.8).
// With one queue too, as Linux's igb_setup_mrqc: the write-back then carries
// the hash for every port (RxMeta), the table sending everything to queue 0.
func (p *Port) setupRSS() error {
	if p.cfg.RSSKey != nil {
		copy(p.rssKey[:], p.cfg.RSSKey)
	} else if _, err := rand.Read(p.rssKey[:]); err != nil {
		return fmt.Errorf("RSS key: %w", err)
	}
	for i := 0; i < rssKeyLen/4; i++ {
		p.w32(regRSSRK+reg(4*i), le32(p.rssKey[4*i:]))
	}
	for i := 0; i < retaEntries/4; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= uint32((4*i+j)%p.cfg.Queues) << (8 * j)
		}
		p.w32(regRETA+reg(4*i), v)
	}
	p.w32(regMRQC, uint32(mrqcEnableRSS|mrqcHashIPv4|mrqcHashIPv4TCP|mrqcHashIPv4UDP|
		mrqcHashIPv6|mrqcHashIPv6TCP|mrqcHashIPv6UDP))
	return nil
}

// setupIRQs maps queue pair i to MSI-X vector i and link/other causes to the
// last vector (82576 7.3.1.2; Linux igb_configure_msix).
func (p *Port) setupIRQs() error {
	want := p.cfg.Queues + 1
	irqs, err := p.dev.EnableMSIX(want)
	if err != nil {
		return fmt.Errorf("enabling %d MSI-X vectors: %w", want, err)
	}
	p.irqs = irqs
	if len(irqs) < want {
		return fmt.Errorf("the device gave %d interrupt vectors, the driver needs %d (one per queue and one for link): %w", len(irqs), want, nic.ErrNotSupported)
	}
	p.w32(regGPIE, uint32(gpieMSIXMode|gpieEIAME|gpiePBA))
	var queueMask uint32
	for i := 0; i < p.cfg.Queues; i++ {
		p.setIVAR(i, i)
		p.w32(regEITR(i), p.eitr())
		queueMask |= 1 << i
		p.rx[i].irq = irqs[i]
		p.rx[i].eims = 1 << i
	}
	other := p.cfg.Queues
	p.w32(regIVAR_MISC, (uint32(other)|ivarValid)<<8)
	p.w32(regEIAC, queueMask)
	p.w32(regEIAM, queueMask)
	p.w32(regEIMS, queueMask|1<<other)
	p.w32(regIMS, icrLSC)
	return nil
}

// eitr encodes cfg.ITR for EITR: interval bits 14:2, about 4 per microsecond.
func (p *Port) eitr() uint32 {
	us := p.cfg.ITR.Microseconds()
	v := uint32(us*4) & 0x7FFC
	if p.model.MAC != MAC82576 {
		v |= eitrCntIgnr
	}
	return v
}

// setIVAR routes queue q's RX and TX causes to vector v. The 82576 keeps queue q
// in IVAR(q&7), byte 0/2 for RX and 1/3 for TX; the I350 and I210 keep queue pairs
// (2q, 2q+1) in IVAR(q>>1) (Linux igb_assign_vector).
func (p *Port) setIVAR(q, v int) {
	var idx, off int
	if p.model.MAC == MAC82576 {
		idx, off = q&7, (q&8)<<1
	} else {
		idx, off = q>>1, (q&1)<<4
	}
	r := regIVAR0 + reg(4*idx)
	val := p.r32(r)
	val &^= 0xFF<<off | 0xFF<<(off+8)
	val |= (uint32(v)|ivarValid)<<off | (uint32(v)|ivarValid)<<(off+8)
	p.w32(r, val)
}

// LinkIRQ is the vector of link changes and other causes (the last one), nil
// without interrupts. After it fires, call HandleLinkIRQ.
func (p *Port) LinkIRQ() nic.IRQ {
	if p.irqs == nil {
		return nil
	}
	return p.irqs[p.cfg.Queues]
}

// HandleLinkIRQ acknowledges the causes behind LinkIRQ (reading ICR clears them,
// so the next link change raises the vector again), unmasks the vector and
// returns the link state now.
func (p *Port) HandleLinkIRQ() nic.LinkState {
	p.ctl.Lock()
	if !p.ctl.Closed && p.irqs != nil {
		p.r32(regICR)
		p.w32(regEIMS, 1<<p.cfg.Queues)
	}
	p.ctl.Unlock()
	return p.Link()
}

// Name is the device's name (PCI address or model name).
func (p *Port) Name() string { return p.name }

// MAC is the port's station address.
func (p *Port) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), p.mac...) }

// Model is the device's entry in the ID table.
func (p *Port) Model() Model { return p.model }

// PHYID is PHYID1:PHYID2 as read at bring-up (0 on a SerDes port: no PHY).
func (p *Port) PHYID() uint32 { return p.phyID }

// Warnings lists non-fatal oddities seen during bring-up.
func (p *Port) Warnings() []string { return append([]string(nil), p.warnings...) }

// Link decodes STATUS (82576 8.2.2), or on a SerDes port PCS_LSTAT (pcs.go).
// A closed port's link is down.
func (p *Port) Link() nic.LinkState {
	if p.ctl.IsClosed() {
		return nic.LinkState{}
	}
	if p.media == MediaSerDes {
		return pcsLink(pcsBits(p.r32(regPCS_LSTAT)))
	}
	return decodeLink(statusBits(p.r32(regSTATUS)))
}

func decodeLink(s statusBits) nic.LinkState {
	if s&statusLU == 0 || uint32(s) == 0xFFFFFFFF {
		return nic.LinkState{}
	}
	l := nic.LinkState{Up: true, FullDuplex: s&statusFD != 0}
	switch {
	case s&statusSpeed1000 != 0:
		l.SpeedMbps = 1000
	case s&statusSpeed100 != 0:
		l.SpeedMbps = 100
	default:
		l.SpeedMbps = 10
	}
	return l
}

// WaitLink polls STATUS.LU every 5 ms until the link is up or timeout passes.
func (p *Port) WaitLink(timeout time.Duration) (nic.LinkState, error) {
	if p.ctl.IsClosed() {
		return nic.LinkState{}, p.ctl.ErrClosed()
	}
	l, up := nic.WaitLinkUp(timeout, 5*time.Millisecond, p.Link)
	if !up {
		return l, fmt.Errorf("igb: %s: no link after %v (cable, peer, or autonegotiation): %w", p.name, timeout, nic.ErrLinkDown)
	}
	return l, nil
}

// NumQueues is the number of RX/TX queue pairs.
func (p *Port) NumQueues() int { return len(p.rx) }

// RxQueue returns RX queue i, or nil when out of range.
func (p *Port) RxQueue(i int) nic.RxQueue { return nic.RxQueueAt(p.rx, i) }

// TxQueue returns TX queue i, or nil when out of range.
func (p *Port) TxQueue(i int) nic.TxQueue { return nic.TxQueueAt(p.tx, i) }

// SetPromisc turns unicast and multicast promiscuous mode on or off.
func (p *Port) SetPromisc(on bool) error {
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	v := rctlBits(p.r32(regRCTL))
	if on {
		v |= rctlUPE | rctlMPE
	} else {
		v &^= rctlUPE | rctlMPE
	}
	p.w32(regRCTL, uint32(v))
	return nil
}

// mtaHash is the 12-bit multicast table index of a MAC address with RCTL.MO = 0:
// destination address bits 47:36 (82576 8.10.15; Linux e1000_hash_mc_addr).
func mtaHash(a net.HardwareAddr) uint32 {
	return (uint32(a[4])>>4 | uint32(a[5])<<4) & 0xFFF
}

// SetMulticast replaces the multicast filter with the given group addresses
// (a hash filter: other groups that hash alike pass too).
func (p *Port) SetMulticast(addrs []net.HardwareAddr) error {
	var mta [128]uint32
	for _, a := range addrs {
		if len(a) != 6 || a[0]&1 == 0 {
			return fmt.Errorf("igb: %q is not a multicast MAC address", a)
		}
		h := mtaHash(a)
		mta[h>>5] |= 1 << (h & 31)
	}
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	v := rctlBits(p.r32(regRCTL)) &^ rctlMOMask
	p.w32(regRCTL, uint32(v))
	for i, w := range mta {
		p.w32(regMTA+reg(4*i), w)
	}
	return nil
}

// Close stops the queues, masks interrupts, returns every buffer on the rings to
// its pool and frees rings and pools. Buffers the caller still holds from this
// port's pools must not be used afterwards. The Device stays open, and a second
// Open on it works.
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

// teardown undoes whatever part of bring-up happened.
func (p *Port) teardown() error {
	var errs []error
	// A device that reads all ones is gone: nothing to stop, only memory to free.
	present := p.r32(regSTATUS) != 0xFFFFFFFF
	if present {
		p.w32(regEIMC, 0xFFFFFFFF)
		p.w32(regIMC, 0xFFFFFFFF)
		p.w32(regRCTL, 0)
		p.w32(regTCTL, uint32(tctlPSP))
		for _, q := range p.rx {
			if err := q.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, q := range p.tx {
			if err := q.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		// Hand the device back to firmware, as igb_release_hw_control does
		// on remove: CTRL_EXT.DRV_LOAD clear.
		p.w32(regCTRL_EXT, p.r32(regCTRL_EXT)&^ctrlExtDrvLoad)
		p.r32(regSTATUS)
	}
	for _, q := range p.rx {
		q.stopped = true
	}
	for _, q := range p.tx {
		q.stopped = true
	}
	if p.irqs != nil {
		if present {
			p.w32(regGPIE, 0)
		}
		errs = append(errs, nic.DisableIRQs(p.dev))
		p.irqs = nil
	}
	return nic.FreeQueues("igb", p.name, errs, p.tx, (*txQueue).free, p.rx, (*rxQueue).free)
}

// RSSKey is the 40-byte Toeplitz key programmed into RSSRK.
func (p *Port) RSSKey() []byte {
	return append([]byte(nil), p.rssKey[:]...)
}
