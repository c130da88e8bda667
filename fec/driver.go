package fec

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Interface is the MAC-PHY interface (RCR.RGMII / RCR.RMII; MII otherwise).
type Interface uint8

const (
	DefaultInterface Interface = iota // RGMII on gigabit parts, RMII otherwise
	RGMII
	RMII
	MII
)

func (i Interface) String() string {
	switch i {
	case RGMII:
		return "rgmii"
	case RMII:
		return "rmii"
	case MII:
		return "mii"
	}
	return "default"
}

// Config chooses how Open brings a port up. The zero value is usable on QEMU's
// imx8mp-evk; real boards need ModuleClockHz and PHYAddr.
type Config struct {
	// Queues is the number of RX/TX ring pairs: 1 to 3 on multi-queue parts
	// (rings 1 and 2 receive frames whose VLAN priority is 0-3 and 4-7,
	// classified by RCMR1/2; everything else lands on ring 0). Default 1.
	Queues int
	// RxRingSize and TxRingSize are descriptors per ring, 4 to 4096. Default
	// 256 each.
	RxRingSize, TxRingSize int
	// PoolSize is the number of buffers of each RX ring's pool, at least
	// RxRingSize. Default 2*RxRingSize.
	PoolSize int
	// FrameSize is the size of one pool buffer: dma.Headroom, then at least
	// 2 KiB for the device. A multiple of 64. Default 2304.
	FrameSize int
	// MAC is the station address. nil: the one PALR/PAUR hold (set by the boot
	// loader or the model), else a random locally administered one.
	MAC net.HardwareAddr
	// Interface is the MAC-PHY interface. Default RGMII on gigabit parts.
	Interface Interface
	// ModuleClockHz is the ENET's module (ipg) clock, from which MSCR's MDC
	// divider is computed. Default 66 MHz (the i.MX8M's ENET ipg clock in
	// NXP's device trees); check the board's clock tree.
	ModuleClockHz uint64
	// PHYAddr is the PHY's MDIO address. 0 means 1 (QEMU's imx8mp-evk); for a
	// PHY at address 0 set PHYAddrZero.
	PHYAddr     int
	PHYAddrZero bool
	// MDIOBus is the register window of the MAC whose MDIO pins the PHY is
	// on, when that is another MAC of the SoC (the devicetree's phy-handle
	// points under that MAC's mdio node: on the i.MX6UL EVK both PHYs sit on
	// ENET2's bus). MSCR, MMFR and EIR.MII of that MAC carry the frames; its
	// module clock must run. nil: this MAC's own.
	MDIOBus nic.Regs
	// LegacyBD uses 8-byte descriptors even on parts with enhanced ones.
	LegacyBD bool
	// RxTimestamp reports each received frame's 1588 timer value
	// (dma.Buf.Timestamp with dma.FlagTimestamp; see PHC). Needs the
	// enhanced BDs.
	RxTimestamp bool
	// PTPClockHz is the 1588 timer's clock (a whole number of ns per
	// cycle, at most 127). Zero: 100 MHz, the ENET_TIMER rate of imx8mp.dtsi.
	PTPClockHz int
	// RxCoalesce holds each ring's RX interrupt until RxCoalesceFrames
	// frames have arrived or RxCoalesce has passed since the first (RXICn;
	// coalesce.go). Zero: an interrupt per frame. Multi-queue ENETs only.
	RxCoalesce       time.Duration
	RxCoalesceFrames int // 1 to 255; 0: DefaultCoalesceFrames
	// SystemClockHz is the ENET system (ahb) clock, which times RxCoalesce.
	// 0: DefaultSystemClockHz.
	SystemClockHz uint64
	// Promisc accepts every frame (RCR.PROM).
	Promisc bool
	// Interrupts asks the Device for one interrupt (EnableMSIX), raised on ring
	// 0's RXF. Devices reached through /dev/mem have none: leave it off and
	// poll.
	Interrupts bool
	// CacheLine is the CPU's cache write-back granule for DMA memory that is
	// not coherent. Descriptors are smaller than a line, so the rings then
	// post RX buffers and fill TX descriptors in whole lines (see rx.go, tx.go)
	// and ring sizes must be multiples of line/descriptor size. 0: what the
	// allocator reports through a CacheLine() int method (physmem does), else
	// none. Ignored when the rings are in uncached memory (ringmem.go).
	CacheLine int
	// LinkTimeout is how long Open waits for the link after restarting
	// autonegotiation; speed and duplex are programmed from what the PHY then
	// reports (default 1000/full on gigabit parts, 100/full otherwise, when the
	// link is still down). Open does not fail on a link that stays down. Zero
	// means 5 s; negative, no wait.
	LinkTimeout time.Duration
}

const (
	defaultRingSize    = 256
	maxRingSize        = 4096
	defaultFrameSize   = 2304
	defaultLinkTimeout = 5 * time.Second
	defaultModuleClock = 66_000_000
)

func (c Config) withDefaults(v Variant) (Config, error) {
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.Queues < 1 || c.Queues > v.Queues {
		return c, fmt.Errorf("fec: %d queues: the %s has %d: %w", c.Queues, v.Name, v.Queues, nic.ErrConfig)
	}
	for _, r := range []*int{&c.RxRingSize, &c.TxRingSize} {
		if *r == 0 {
			*r = defaultRingSize
		}
		if *r < 4 || *r > maxRingSize {
			return c, fmt.Errorf("fec: ring of %d descriptors: want 4 to %d: %w", *r, maxRingSize, nic.ErrConfig)
		}
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2 * c.RxRingSize
	}
	if c.PoolSize < c.RxRingSize {
		return c, fmt.Errorf("fec: pool of %d buffers for a ring of %d: want at least the ring size", c.PoolSize, c.RxRingSize)
	}
	if c.FrameSize == 0 {
		c.FrameSize = defaultFrameSize
	}
	if c.FrameSize < dma.Headroom+maxMRBR || c.FrameSize%64 != 0 {
		return c, fmt.Errorf("fec: frame size %d: want a multiple of 64 of at least %d (headroom %d + 2 KiB for the device)", c.FrameSize, dma.Headroom+maxMRBR, dma.Headroom)
	}
	if c.MAC != nil && (len(c.MAC) != 6 || c.MAC[0]&1 != 0 || isZero(c.MAC)) {
		return c, fmt.Errorf("fec: MAC address %s: want a unicast 6-byte address", c.MAC)
	}
	if c.Interface == DefaultInterface {
		c.Interface = RMII
		if v.Quirks&QuirkGBIT != 0 {
			c.Interface = RGMII
		}
	}
	if c.Interface == RGMII && v.Quirks&QuirkGBIT == 0 {
		return c, fmt.Errorf("fec: the %s has no RGMII (not a gigabit MAC)", v.Name)
	}
	if c.ModuleClockHz == 0 {
		c.ModuleClockHz = defaultModuleClock
	}
	if c.LinkTimeout == 0 {
		c.LinkTimeout = defaultLinkTimeout
	}
	if c.PHYAddr == 0 && !c.PHYAddrZero {
		c.PHYAddr = defPHYAddr
	}
	if c.PHYAddr < 0 || c.PHYAddr > 31 {
		return c, fmt.Errorf("fec: PHY address %d: want 0 to 31", c.PHYAddr)
	}
	if c.RxCoalesce != 0 && v.Quirks&QuirkCoalesce == 0 {
		return c, fmt.Errorf("fec: RX coalescing of %v: the %s has no interrupt coalescing", c.RxCoalesce, v.Name)
	}
	if _, err := c.rxicValue(); err != nil {
		return c, err
	}
	return c, nil
}

// Port is a FEC port brought up by Open. It implements nic.Port.
//
// Control methods may be called from any goroutine; they serialise on ctl
// (MDIO and RCR sequences). Each queue belongs to one goroutine. Close must not
// run while a queue is being polled.
type Port struct {
	dev     nic.Device // immutable
	regs    nic.Regs   // immutable
	alloc   dma.Allocator
	variant Variant  // immutable
	cfg     Config   // immutable after Open
	name    string   // immutable
	bd      bdLayout // immutable
	mscr    uint32   // immutable
	lineBDs int      // descriptors per cache line, 1 when coherent; immutable
	phyAddr int      // immutable
	// mdioRegs is the register window of the MAC driving the PHY's MDIO bus:
	// regs, or Config.MDIOBus. Immutable.
	mdioRegs nic.Regs
	linkErr  error // the last PHY read error Link met (LinkProblem); guarded by ctl

	uncachedRings bool // the rings come from AllocUncached (ringmem.go); immutable

	mac   net.HardwareAddr // immutable after Open
	phyID uint32           // immutable after Open
	link  nic.LinkState    // what the MAC was programmed for (Open, AdjustLink); guarded by ctl after Open

	rx  []*rxQueue // immutable after Open
	tx  []*txQueue // immutable after Open
	irq nic.IRQ    // nil without interrupts

	ctl nic.PortCtl // serialises MDIO, the filters, coalescing and restarts; Closed

	release func() // ends Open's claim on dev (nic.Claim); set once by Open

	stats stats    // has its own lock
	ptp   ptpClock // the 1588 timer's software side (ptp.go); has its own lock

	warnings []string // immutable after Open
	mib      bool     // the MIB counters exist (probeMIB); immutable after Open
	mdioLate bool     // the last MDIO frame timed out and may still run (phy.go); guarded by ctl
}

var _ nic.Port = (*Port)(nil)

func (p *Port) r32(r reg) uint32    { return p.regs.Read32(uint32(r)) }
func (p *Port) w32(r reg, v uint32) { p.regs.Write32(uint32(r), v) }

// mdioR32 and mdioW32 access the MDIO registers (MSCR, MMFR, EIR.MII) of the
// MAC that drives the PHY's bus (Config.MDIOBus).
func (p *Port) mdioR32(r reg) uint32    { return p.mdioRegs.Read32(uint32(r)) }
func (p *Port) mdioW32(r reg, v uint32) { p.mdioRegs.Write32(uint32(r), v) }

// Open resets the MAC, talks to the PHY, programs the rings and starts them,
// following Linux's fec_restart. The Device stays the caller's: Close does not
// close it, and a second Open on it works.
func Open(dev nic.Device, cfg Config) (*Port, error) {
	return nic.OpenClaimed(dev, "fec", func() (*Port, error) { return open(dev, cfg) },
		func(p *Port, release func()) { p.release = release })
}

// open brings the port up on a device Open has claimed.
func open(dev nic.Device, cfg Config) (*Port, error) {
	info := dev.Info()
	v, ok := LookupCompatible(info.Compatible)
	if !ok {
		return nil, fmt.Errorf("fec: %s: compatible %q is not a supported FEC/ENET (see fec.Variants): %w", info.Name, info.Compatible, nic.ErrNotSupported)
	}
	cfg, err := cfg.withDefaults(v)
	if err != nil {
		return nil, err
	}
	alloc := dev.DMA()
	if alloc == nil {
		return nil, fmt.Errorf("fec: %s: the device has no DMA allocator", info.Name)
	}
	if lim := alloc.Limit(); lim == 0 || lim > 1<<32 {
		return nil, fmt.Errorf("fec: %s: the DMA allocator's limit is %#x: %w: the FEC's descriptors carry 32-bit "+
			"addresses, so its memory must lie below 4 GiB; use an allocator limited to 4 GiB "+
			"(physmem.Config{Limit: 1 << 32}) with memory reserved low (mem=, reserved-memory, CMA)", info.Name, lim, dma.ErrTooHigh)
	}
	mscr, err := mscrValue(cfg.ModuleClockHz)
	if err != nil {
		return nil, err
	}
	regs, err := dev.Regs(0)
	if err != nil {
		return nil, fmt.Errorf("fec: %s: mapping the register window: %w", info.Name, err)
	}
	p := &Port{dev: dev, regs: regs, alloc: alloc, variant: v, cfg: cfg, name: info.Name, bd: legacyBD,
		mscr: mscr, phyAddr: cfg.PHYAddr, mdioRegs: regs}
	p.ctl.Prefix = "fec: " + info.Name
	if cfg.MDIOBus != nil {
		p.mdioRegs = cfg.MDIOBus
	}
	if v.Quirks&QuirkBufDescEx != 0 && !cfg.LegacyBD {
		p.bd = extBD
	}
	line := cfg.CacheLine
	if cl, ok := alloc.(interface{ CacheLine() int }); ok && line == 0 {
		line = cl.CacheLine()
	}
	if err := nic.CheckBufferLines(alloc, cfg.FrameSize); err != nil {
		return nil, fmt.Errorf("fec: %w", err)
	}
	if err := checkCacheMaintenance(alloc); err != nil {
		return nil, err
	}
	if p.uncachedRings = ringsUncached(alloc); p.uncachedRings {
		line = 0 // no line is ever written back over the device's (ringmem.go)
	}
	if line < 0 || line&(line-1) != 0 {
		return nil, fmt.Errorf("fec: cache line of %d bytes: want a power of two", line)
	}
	if p.lineBDs = 1; line > p.bd.size {
		p.lineBDs = line / p.bd.size
		for _, n := range []int{cfg.RxRingSize, cfg.TxRingSize} {
			if n%p.lineBDs != 0 || n < 2*p.lineBDs {
				return nil, fmt.Errorf("fec: ring of %d descriptors: with %d-byte cache lines and %d-byte descriptors, want a multiple of %d of at least %d: %w",
					n, line, p.bd.size, p.lineBDs, 2*p.lineBDs, nic.ErrConfig)
			}
		}
	}
	if err := p.initPTP(); err != nil {
		p.teardown()
		return nil, err
	}
	if err := p.bringUp(); err != nil {
		p.teardown()
		return nil, fmt.Errorf("fec: %s: %w", info.Name, err)
	}
	p.startKeeper()
	return p, nil
}

func (p *Port) bringUp() error {
	if v := p.r32(regECR); v == 0xFFFFFFFF {
		return fmt.Errorf("ECR reads 0xFFFFFFFF (is the ENET clocked and powered, and the register window right?): %w", nic.ErrNoDevice)
	}
	p.pickMAC()
	if err := p.reset(); err != nil {
		return err
	}
	p.mdioSetup()
	p.ctl.Lock()
	id, err := p.readPHYID()
	if err == nil {
		p.phyID = id
		err = p.restartAutoneg()
	}
	p.ctl.Unlock()
	if err != nil {
		return fmt.Errorf("PHY: %w", err)
	}
	link := nic.LinkState{SpeedMbps: 100, FullDuplex: true}
	if p.cfg.Interface == RGMII {
		link.SpeedMbps = 1000
	}
	if p.cfg.LinkTimeout > 0 {
		if l, err := p.WaitLink(p.cfg.LinkTimeout); err == nil {
			link = l
		} else {
			p.warnings = append(p.warnings, fmt.Sprintf("link down after %v: MAC programmed for %d Mb/s full duplex", p.cfg.LinkTimeout, link.SpeedMbps))
		}
	}
	p.link = link
	for i := 0; i < p.cfg.Queues; i++ {
		rq, err := p.newRx(i)
		if err != nil {
			return fmt.Errorf("ring %d: %w", i, err)
		}
		p.rx = append(p.rx, rq)
		tq, err := p.newTx(i)
		if err != nil {
			return fmt.Errorf("ring %d: %w", i, err)
		}
		p.tx = append(p.tx, tq)
	}
	for _, tq := range p.tx {
		for _, rq := range p.rx {
			tq.guard.Trust(rq.Pool())
		}
	}
	if p.cfg.Interrupts {
		irqs, err := p.dev.EnableMSIX(1)
		if err != nil {
			return fmt.Errorf("enabling the interrupt (set Config.Interrupts false to poll): %w", err)
		}
		if len(irqs) == 0 {
			return fmt.Errorf("the device gave no interrupt: %w", nic.ErrNotSupported)
		}
		p.irq = irqs[0]
		p.rx[0].irq = p.irq
		if p.bd.ext {
			p.rx[0].esc = rxESCInt
		}
	}
	if err := p.setupCoalesce(); err != nil {
		return err
	}
	if p.mib = p.probeMIB(); !p.mib {
		p.warnings = append(p.warnings, "no MIB counters: a value written to RMON_T_PACKETS with the MIB disabled read back as 0 "+
			"(QEMU's imx.enet has none); Stats reports the driver's own counters and mib_unavailable")
	}
	p.start()
	if err := p.checkRxRings(); err != nil {
		return err
	}
	p.stats.baseline(p)
	return nil
}

// pickMAC takes Config.MAC, else a valid address already in PALR/PAUR (boot
// loader, model), else a random locally administered one.
func (p *Port) pickMAC() {
	if p.cfg.MAC != nil {
		p.mac = append(net.HardwareAddr(nil), p.cfg.MAC...)
		return
	}
	lo, hi := p.r32(regPALR), p.r32(regPAUR)
	m := net.HardwareAddr{byte(lo >> 24), byte(lo >> 16), byte(lo >> 8), byte(lo), byte(hi >> 24), byte(hi >> 16)}
	if !isZero(m) && m[0]&1 == 0 && !(lo == 0xFFFFFFFF && hi>>16 == 0xFFFF) {
		p.mac = m
		return
	}
	m = make(net.HardwareAddr, 6)
	rand.Read(m) //nolint:errcheck // crypto/rand.Read never fails on Linux
	m[0] = m[0]&^1 | 2
	p.mac = m
	p.warnings = append(p.warnings, fmt.Sprintf("no MAC address in PALR/PAUR or Config.MAC: using random %s", m))
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// reset stops and resets the MAC (fec_restart): multi-queue parts by writing
// ECR = 0 (ECR.RESET would also reset their AVB state), others with ECR.RESET,
// which clears itself.
func (p *Port) reset() error {
	if p.variant.MultiQueue() {
		p.w32(regECR, 0)
		return nil
	}
	p.w32(regECR, uint32(ecrRESET))
	p.mdioLate = false // the reset cuts off a frame still being clocked out
	time.Sleep(10 * time.Microsecond)
	_, err := nic.PollReg(p.regs, uint32(regECR), 10*time.Millisecond, 10*time.Microsecond, func(v uint32) bool {
		return ecrBits(v)&ecrRESET == 0
	})
	switch {
	case errors.Is(err, nic.ErrNoDevice):
		return fmt.Errorf("ECR reads all ones after reset: %w", err)
	case err != nil:
		return fmt.Errorf("ECR.RESET still set 10ms after a reset (the MAC's clocks may be off): %w", err)
	}
	return nil
}

// start programs the MAC after a reset and starts the rings, in Linux
// fec_restart's order.
func (p *Port) start() {
	m := p.mac
	p.w32(regPALR, uint32(m[0])<<24|uint32(m[1])<<16|uint32(m[2])<<8|uint32(m[3]))
	p.w32(regPAUR, uint32(m[4])<<24|uint32(m[5])<<16|0x8808)
	p.w32(regEIR, 0xFFFFFFFF)
	// Rings: RX all empty with a buffer each, W on the last; TX all ours.
	for _, q := range p.rx {
		q.reset()
		q.refill(false)
	}
	for _, q := range p.tx {
		q.reset()
		q.esc = 0
		if p.irq != nil && p.bd.ext {
			q.esc = txESCInt
		}
	}
	for i := range p.rx {
		rr := rings[i]
		p.w32(rr.rdsr, uint32(p.rx[i].Ring.IOVA))
		p.w32(rr.mrbr, uint32(p.rx[i].BufLen))
		p.w32(rr.tdsr, uint32(p.tx[i].Ring.IOVA))
		switch i {
		case 1:
			p.w32(regRCMR1, rcmrMatchEn|rcmrCmp(0, 1, 2, 3))
			p.w32(regDMA1, dmaClassEn|dmaIdleSlope)
		case 2:
			p.w32(regRCMR2, rcmrMatchEn|rcmrCmp(4, 5, 6, 7))
			p.w32(regDMA2, dmaClassEn|dmaIdleSlope)
		}
	}
	var tcr tcrBits
	if p.link.FullDuplex {
		tcr |= tcrFDEN
	}
	p.w32(regTCR, uint32(tcr))
	p.mdioSetup()
	if p.variant.Quirks&QuirkRACC != 0 {
		p.w32(regRACC, 0) // no SHIFT16: frames start at the buffer; no checksum discard
	}
	if p.variant.Quirks&QuirkENETMAC != 0 {
		// TACC (RM "Transmit Accelerator Function Configuration"): no
		// SHIFT16, and no PROCHK/IPCHK, which would checksum every IP frame
		// whether it asked or not (a boot loader may leave them set). Frames
		// ask per BD (esc.PINS, txmeta.go).
		p.w32(regTACC, 0)
	}
	p.w32(regFTRL, maxFrameLen)
	p.w32(regRCR, uint32(p.rcr(p.cfg.Promisc)))
	if p.variant.Quirks&QuirkENETMAC != 0 {
		p.w32(regTFWR, tfwrSTRFWD)
	}
	p.w32(regIAUR, 0)
	p.w32(regIALR, 0)
	p.w32(regGAUR, 0)
	p.w32(regGALR, 0)
	p.w32(regMIBC, 0)
	ecr := ecrETHEREN
	if p.variant.Quirks&QuirkENETMAC != 0 {
		ecr |= ecrDBSWP
	}
	if p.bd.ext {
		ecr |= ecrEN1588
	}
	if p.link.SpeedMbps == 1000 && p.variant.Quirks&QuirkGBIT != 0 {
		ecr |= ecrSPEED
	}
	p.w32(regECR, uint32(ecr))
	p.setupTimer()
	for i := range p.rx {
		p.w32(rings[i].rdar, rdarActive)
	}
	var eimr eirBits
	if p.irq != nil {
		eimr = eirRXF
	}
	p.w32(regEIMR, uint32(eimr))
}

// rcr computes RCR for the interface, link and promiscuous mode.
func (p *Port) rcr(promisc bool) rcrBits {
	v := rcrBits(maxFrameLen)<<rcrMaxFLSft | rcrMIIMODE
	switch p.cfg.Interface {
	case RGMII:
		v |= rcrRGMII
	case RMII:
		v |= rcrRMII
	}
	// RMII_10T selects 10 Mb/s for RMII and RGMII alike (Linux fec_restart
	// sets it at 10 Mb/s whatever the interface).
	if p.link.SpeedMbps == 10 {
		v |= rcrRMII10T
	}
	if !p.link.FullDuplex {
		v |= rcrDRT
	}
	if promisc {
		v |= rcrPROM
	}
	return v
}

// Name is the device's name.
func (p *Port) Name() string { return p.name }

// MAC is the port's station address.
func (p *Port) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), p.mac...) }

// Variant is the FEC generation Open found.
func (p *Port) Variant() Variant { return p.variant }

// Extended reports whether the rings use 32-byte enhanced descriptors.
func (p *Port) Extended() bool { return p.bd.ext }

// PHYID is PHYID1:PHYID2 as read at bring-up.
func (p *Port) PHYID() uint32 { return p.phyID }

// ProgrammedLink is the speed and duplex the MAC is set up for (at Open, and
// by AdjustLink since).
func (p *Port) ProgrammedLink() nic.LinkState {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	return p.link
}

// LinkMismatch reports whether the link is up at another speed or duplex than
// the MAC runs at: AdjustLink would restart it (nic.LinkAdjuster).
func (p *Port) LinkMismatch() bool {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.ctl.Closed {
		return false
	}
	l, err := p.phyLink()
	return err == nil && l.Up && (l.SpeedMbps != p.link.SpeedMbps || l.FullDuplex != p.link.FullDuplex)
}

// Warnings lists non-fatal oddities of the bring-up.
func (p *Port) Warnings() []string { return append([]string(nil), p.warnings...) }

// Link asks the PHY (the FEC has no link status register of its own). A PHY
// that does not answer reads as link down.
func (p *Port) Link() nic.LinkState {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.ctl.Closed {
		return nic.LinkState{}
	}
	l, err := p.phyLink()
	p.linkErr = err
	if err != nil {
		return nic.LinkState{}
	}
	return l
}

// WaitLink polls the PHY until the link is up or timeout passes.
func (p *Port) WaitLink(timeout time.Duration) (nic.LinkState, error) {
	l, up := nic.WaitLinkUp(timeout, 5*time.Millisecond, p.Link)
	if !up {
		if p.ctl.IsClosed() {
			return l, p.ctl.ErrClosed()
		}
		return l, fmt.Errorf("fec: %s: no link after %v (cable, peer, PHY address %d, or autonegotiation): %w", p.name, timeout, p.phyAddr, nic.ErrLinkDown)
	}
	return l, nil
}

// NumQueues is the number of RX/TX ring pairs.
func (p *Port) NumQueues() int { return len(p.rx) }

// RxQueue returns RX ring i, or nil when out of range.
func (p *Port) RxQueue(i int) nic.RxQueue { return nic.RxQueueAt(p.rx, i) }

// TxQueue returns TX ring i, or nil when out of range.
func (p *Port) TxQueue(i int) nic.TxQueue { return nic.TxQueueAt(p.tx, i) }

// SetPromisc turns promiscuous mode (RCR.PROM) on or off.
func (p *Port) SetPromisc(on bool) error {
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	p.w32(regRCR, uint32(p.rcr(on)))
	return nil
}

// Close stops the MAC (graceful transmit stop, then reset), returns every
// buffer on the rings to its pool and frees rings and pools. The Device stays
// open; Open works on it again.
func (p *Port) Close() error {
	if !p.ctl.MarkClosed() {
		return nil
	}
	p.stopKeeper()
	p.stats.collect(p) // keep the totals
	p.stats.totals.Stop()
	err := p.teardown()
	p.release() // the device may be opened again
	return err
}

// gracefulStopTimeout bounds the wait for EIR.GRA after TCR.GTS.
const gracefulStopTimeout = 100 * time.Millisecond

// stopMAC masks interrupts, lets the frame being sent finish (TCR.GTS, then
// EIR.GRA) and resets the MAC, which stops both DMA engines.
func (p *Port) stopMAC() error {
	var errs []error
	if err := p.gracefulStop(); err != nil {
		errs = append(errs, err)
	}
	if err := p.reset(); err != nil {
		errs = append(errs, err)
	}
	p.w32(regEIR, 0xFFFFFFFF)
	return errors.Join(errs...)
}

// gracefulStop masks the MAC's interrupts and, while it is enabled, stops the
// transmitter after the frame it is sending (TCR.GTS, waiting for EIR.GRA).
func (p *Port) gracefulStop() error {
	p.w32(regEIMR, 0)
	if ecrBits(p.r32(regECR))&ecrETHEREN == 0 {
		return nil
	}
	p.w32(regTCR, p.r32(regTCR)|uint32(tcrGTS))
	if !nic.Poll(gracefulStopTimeout, 50*time.Microsecond, func() bool { return eirBits(p.r32(regEIR))&eirGRA != 0 }) {
		return fmt.Errorf("graceful stop: EIR.GRA not set %v after TCR.GTS: %w", gracefulStopTimeout, nic.ErrTimeout)
	}
	return nil
}

// AdjustLink follows a change of the link, as Linux's fec_enet_adjust_link: it
// asks the PHY, and when the link is up at a speed or duplex other than the
// MAC's, stops the MAC and brings it up again for the new ones (fec_restart).
// The rings start over: frames not yet received or sent are dropped, their
// buffers go back to their pools. It reports the link and whether it
// restarted. It must not run while a queue is being polled or sent on: the
// dataplane parks the port's queues around it (nic.LinkAdjuster).
func (p *Port) AdjustLink() (nic.LinkState, bool, error) {
	if err := p.ctl.LockOpen(); err != nil {
		return nic.LinkState{}, false, err
	}
	defer p.ctl.Unlock()
	l, err := p.phyLink()
	if err != nil {
		return l, false, fmt.Errorf("fec: %s: reading the link: %w", p.name, err)
	}
	if !l.Up || (l.SpeedMbps == p.link.SpeedMbps && l.FullDuplex == p.link.FullDuplex) {
		return l, false, nil
	}
	if err := errors.Join(p.halt(), p.reset()); err != nil {
		return l, false, fmt.Errorf("fec: %s: stopping for a link change: %w", p.name, err)
	}
	p.w32(regEIR, 0xFFFFFFFF)
	p.link = l
	p.stats.rebase(p) // before the MAC counts again: a reset may clear the MIB
	p.start()
	return l, true, nil
}

// teardown undoes whatever part of bring-up happened.
func (p *Port) teardown() error {
	var errs []error
	if p.r32(regECR) != 0xFFFFFFFF {
		if err := p.stopMAC(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.irq != nil {
		errs = append(errs, nic.DisableIRQs(p.dev))
		p.irq = nil
	}
	return nic.FreeQueues("fec", p.name, errs, p.tx, (*txQueue).free, p.rx, (*rxQueue).free)
}
