package dwmac

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// RX interrupt coalescing with the RX interrupt watchdog (DWC EQoS databook,
// DMA_CHx_Rx_Interrupt_Watchdog_Timer at 0x1138 + 0x80*ch; Linux dwmac4_dma.h
// DMA_CHAN_RX_WATCHDOG). A received frame whose last descriptor has RDES3.IOC
// (bit 30) set raises RI at once and stops the channel's watchdog; one whose
// descriptor leaves IOC clear raises nothing but (re)starts the watchdog with
// RWT (bits 7:0) units of 256 << RWTU (bits 17:16, 5.00 and later; reserved
// before, so a unit is 256) cycles of the system clock, and RI sets when it
// runs out. RWT 0 is no watchdog: frames without IOC then never interrupt.
//
// Linux does this in stmmac_rx_refill: with use_riwt it leaves IOC clear
// (dwmac4_set_rx_owner sets RDES3_INT_ON_COMPLETION_EN only when it is not
// using the watchdog) except as rx_coal_frames decides, and programs RIWT at
// open (DEF_DMA_RIWT, 0xa0) and from ethtool -C rx-usecs (stmmac_set_coalesce,
// stmmac_usec2riwt: usecs * MHz / 256, refused outside MIN_DMA_RIWT 0x10 to
// MAX_DMA_RIWT 0xff). As written, stmmac_rx_refill's counter (incremented,
// then increased by rx_coal_frames, then zeroed when above rx_coal_frames) is
// zeroed at every descriptor, so a non-zero rx_coal_frames sets IOC on every
// descriptor and the default 0 (STMMAC_RX_FRAMES) on none. This driver sets
// IOC on the descriptors of every Nth frame (Config.RxCoalesceFrames), the
// frame threshold rx_coal_frames names, and converts intervals with RWTU too,
// so that a 5.x core reaches 255 * 2048 cycles.
//
// The clock the watchdog counts is the one Linux converts with, stmmac_clk:
// on Intel mGbE a fixed 200 MHz clock (dwmac-intel.c intel_mgbe_common_data
// registers stmmac_clk at clk_ptp_rate, 200 MHz on EHL, TGL and ADL); on the
// i.MX8M Plus the "stmmaceth" clock of imx8mp.dtsi, IMX8MP_CLK_ENET_QOS_ROOT,
// under ENET_AXI from SYS_PLL1_266M (266 MHz nominal). Config.SystemClockHz
// overrides it for boards whose clock tree differs.

// Fields of DMA_CHx_Rx_Interrupt_Watchdog_Timer.
const (
	riwtRWTMask    uint32 = 0xff // RWT 7:0: the count, in units of RWTU
	riwtRWTUShift         = 16   // RWTU 17:16: a unit is 256 << RWTU cycles
	riwtRWTUMask   uint32 = 3 << riwtRWTUShift
	riwtUnitCycles        = 256
)

// System clocks the watchdog counts, by integration (see above).
const (
	IntelSystemClockHz  = 200_000_000
	IMX8MPSystemClockHz = 266_000_000
)

// DefaultCoalesceFrames is the frame count between two IOC frames when
// Config.RxCoalesce is set without RxCoalesceFrames: 64, NAPI's poll weight
// (NAPI_POLL_WEIGHT), so one interrupt brings about one poll's worth of
// frames; at most half the ring (see rxCoalesceFrames). Linux's own default,
// STMMAC_RX_FRAMES 0 (the watchdog alone), lets a burst at line rate fill the
// ring before the watchdog runs out: 511 minimum-size frames arrive in 343 µs
// at 1 Gb/s, the longest watchdog is 2.6 ms.
const DefaultCoalesceFrames = 64

// hasRWTU reports whether a core of this SNPSVER has the RWTU field.
func hasRWTU(version uint8) bool { return version >= coreVersion500 }

// MaxCoalesce is the longest watchdog interval of a core of version (SNPSVER)
// whose system clock runs at hz: 255 units of 2048 cycles (256 before 5.00).
func MaxCoalesce(hz uint64, version uint8) time.Duration {
	if hz == 0 {
		return 0
	}
	unit := uint64(riwtUnitCycles)
	if hasRWTU(version) {
		unit <<= 3
	}
	return time.Duration(uint64(riwtRWTMask) * unit * 1e9 / hz)
}

// CoalesceValue is the DMA_CHx_Rx_Interrupt_Watchdog_Timer (RIWT) value whose watchdog runs for at least d on a
// core of version at a system clock of hz: the finest unit (smallest RWTU)
// that holds it, the count rounded up so that a short interval still holds
// the interrupt. d zero gives 0 (no watchdog).
func CoalesceValue(d time.Duration, hz uint64, version uint8) (uint32, error) {
	switch {
	case d == 0:
		return 0, nil
	case hz == 0:
		return 0, fmt.Errorf("RX watchdog of %v: no system clock rate", d)
	case d < 0 || d > MaxCoalesce(hz, version):
		return 0, fmt.Errorf("RX watchdog of %v: want 0 to %v at a %d Hz system clock (SNPSVER 0x%02x)",
			d, MaxCoalesce(hz, version), hz, version)
	}
	cycles := (uint64(d.Nanoseconds())*hz + 1e9 - 1) / 1e9
	maxU := uint32(0)
	if hasRWTU(version) {
		maxU = 3
	}
	for u := uint32(0); ; u++ {
		unit := uint64(riwtUnitCycles) << u
		if n := (cycles + unit - 1) / unit; n <= uint64(riwtRWTMask) || u == maxU {
			return u<<riwtRWTUShift | uint32(min(max(n, 1), uint64(riwtRWTMask))), nil
		}
	}
}

// CoalesceSetting decodes a RIWT value at a system clock of hz: the
// watchdog's interval, 0 when RWT is 0.
func CoalesceSetting(v uint32, hz uint64) time.Duration {
	if hz == 0 {
		return 0
	}
	cycles := uint64(v&riwtRWTMask) * (riwtUnitCycles << (v & riwtRWTUMask >> riwtRWTUShift))
	return time.Duration(cycles * 1e9 / hz)
}

// coalesceState is the port's RX coalescing, chosen at Open.
type coalesceState struct {
	hz     uint64 // the system clock the watchdog counts; immutable after Open
	frames int    // IOC on every frames-th frame; 0: on every descriptor (off). Immutable after Open
	riwt   uint32 // RIWT of every channel; guarded by ctl after Open
}

// chooseCoalesce checks Config's coalescing against the ring and the core
// (called once the core's version is known).
func (p *Port) chooseCoalesce() error {
	c := &p.coal
	c.hz = p.cfg.SystemClockHz
	if c.hz == 0 {
		c.hz = IMX8MPSystemClockHz
		if p.model.Integration == IntegrationIntel {
			c.hz = IntelSystemClockHz
		}
	}
	v, err := CoalesceValue(p.cfg.RxCoalesce, c.hz, p.hw.Version)
	if err != nil || v == 0 {
		return err
	}
	c.riwt = v
	c.frames, err = p.cfg.rxCoalesceFrames()
	return err
}

// descsPerFrame is how many descriptors a received frame takes: two with
// RxTimestamp (the frame's and its context descriptor).
func (c Config) descsPerFrame() int {
	if c.RxTimestamp {
		return 2
	}
	return 1
}

// rxCoalesceFrames is the frame count between IOC frames: Config's, or
// DefaultCoalesceFrames bounded to half the frames the ring holds, so that
// an interrupt comes while half the ring is still free for the frames that
// arrive before the poll.
func (c Config) rxCoalesceFrames() (int, error) {
	hold := (c.RxRingSize - 1) / c.descsPerFrame() // frames posted at most
	n := c.RxCoalesceFrames
	switch {
	case n == 0:
		return max(1, min(DefaultCoalesceFrames, hold/2)), nil
	case n < 0 || n > hold:
		return 0, fmt.Errorf("an RX interrupt every %d frames: want 1 to %d, the frames a ring of %d descriptors holds",
			n, hold, c.RxRingSize)
	}
	return n, nil
}

// iocPlan is how an RX queue sets IOC as it refills: on the descriptors of
// every every-th frame, per descriptors a frame takes.
type iocPlan struct {
	every int // frames per IOC frame; 0: IOC on every descriptor
	descs int // descriptors per frame (1, or 2 with timestamps)
	pos   int // descriptors refilled since the last IOC group, 0..every*descs-1
}

// next reports whether the next refilled descriptor asks for IOC. Each
// group of every*descs descriptors ends with descs that do, so the last
// descriptor of one frame in every group has IOC whatever the frames'
// alignment in the ring.
func (c *iocPlan) next() bool {
	if c.every == 0 {
		return true
	}
	ioc := c.pos >= (c.every-1)*c.descs
	if c.pos++; c.pos == c.every*c.descs {
		c.pos = 0
	}
	return ioc
}

// setupCoalesce programs channel i's watchdog (before its first refill).
func (p *Port) setupCoalesce(i int, q *rxQueue) {
	q.ioc = iocPlan{every: p.coal.frames, descs: p.cfg.descsPerFrame()}
	p.w32(chReg(i, chRxWatchdog), p.coal.riwt)
}

// RxCoalesceFrames is the frame count between two RX interrupts the
// descriptors ask for (IOC), 0 when every frame asks (Config.RxCoalesce 0).
func (p *Port) RxCoalesceFrames() int { return p.coal.frames }

// SetRxCoalesce changes the RX watchdog's interval on every channel while the
// port runs (the register may be written at any time; stmmac_set_coalesce
// does so), as ethtool -C rx-usecs does. The frame count stays what Open
// chose. A port opened without Config.RxCoalesce sets IOC on every
// descriptor, so the watchdog never runs: refused, as is d zero on a port
// with coalescing (its descriptors leave IOC clear, and RWT 0 would leave
// their frames without an interrupt).
func (p *Port) SetRxCoalesce(d time.Duration) error {
	if p.coal.frames == 0 {
		return fmt.Errorf("dwmac: %s: opened without RX coalescing (every descriptor asks for an interrupt, so the watchdog never runs): "+
			"reopen with Config.RxCoalesce: %w", p.name, nic.ErrNotSupported)
	}
	if d == 0 {
		return fmt.Errorf("dwmac: %s: an RX watchdog of 0 would leave the frames whose descriptors ask for no interrupt without one; "+
			"the shortest is %v", p.name, CoalesceSetting(1, p.coal.hz))
	}
	v, err := CoalesceValue(d, p.coal.hz, p.hw.Version)
	if err != nil {
		return fmt.Errorf("dwmac: %s: %w", p.name, err)
	}
	if err := p.ctl.LockOpen(); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	for i := range p.rx {
		p.w32(chReg(i, chRxWatchdog), v)
	}
	p.coal.riwt = v
	return nil
}

// riwtFields decodes a RIWT value for the dump, with the port's frame count
// (FRAMES; 0: IOC on every descriptor, the watchdog unused) and the clock it
// is decoded at.
func (p *Port) riwtFields(v uint32) []Field {
	return []Field{{Name: "RWT", Value: fmt.Sprint(v & riwtRWTMask)}, {Name: "RWTU", Value: fmt.Sprint(v & riwtRWTUMask >> riwtRWTUShift)},
		{Name: "INTERVAL", Value: CoalesceSetting(v, p.coal.hz).String()}, {Name: "FRAMES", Value: fmt.Sprint(p.coal.frames)},
		{Name: "CLOCK_HZ", Value: fmt.Sprint(p.coal.hz)}, {Name: "SNPSVER", Value: fmt.Sprintf("0x%02x", p.hw.Version)}}
}
