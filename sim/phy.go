package sim

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// Clause-22 MII register numbers (IEEE 802.3 clause 22.2.4) and the
// vendor-specific copper status register of Marvell-style PHYs (the 88E1111 and
// the Intel I210/82576 internal PHYs: page 0 register 17).
const (
	MIIBMCR     = 0  // basic mode control
	MIIBMSR     = 1  // basic mode status
	MIIPHYID1   = 2  // PHY identifier, OUI bits 3:18
	MIIPHYID2   = 3  // PHY identifier, OUI bits 19:24, model, revision
	MIIANAR     = 4  // autonegotiation advertisement
	MIIANLPAR   = 5  // link partner ability
	MIIANER     = 6  // autonegotiation expansion
	MIICTRL1000 = 9  // 1000BASE-T control
	MIISTAT1000 = 10 // 1000BASE-T status
	MIIESTATUS  = 15 // extended status
	MIIPHYSTAT  = 17 // vendor copper specific status (speed, duplex, resolved, link)
)

// BMCR bits (IEEE 802.3 22.2.4.1).
const (
	BMCRReset     uint16 = 1 << 15 // self-clearing software reset
	BMCRLoopback  uint16 = 1 << 14
	BMCRSpeed100  uint16 = 1 << 13 // speed select LSB
	BMCRANEnable  uint16 = 1 << 12
	BMCRPowerDown uint16 = 1 << 11
	BMCRIsolate   uint16 = 1 << 10
	BMCRANRestart uint16 = 1 << 9 // self-clearing
	BMCRFullDplx  uint16 = 1 << 8
	BMCRSpeed1000 uint16 = 1 << 6 // speed select MSB
)

// BMSR bits (IEEE 802.3 22.2.4.2).
const (
	BMSR100FD      uint16 = 1 << 14
	BMSR100HD      uint16 = 1 << 13
	BMSR10FD       uint16 = 1 << 12
	BMSR10HD       uint16 = 1 << 11
	BMSRExtStatus  uint16 = 1 << 8
	BMSRMFPreSup   uint16 = 1 << 6
	BMSRANComplete uint16 = 1 << 5
	BMSRANAbility  uint16 = 1 << 3
	BMSRLinkStatus uint16 = 1 << 2 // latched low
	BMSRExtCap     uint16 = 1 << 0
)

// ANAR/ANLPAR bits (IEEE 802.3 28.2.1.2) and 1000BASE-T control/status bits
// (40.5.1.1).
const (
	ANAck      uint16 = 1 << 14
	ANPause    uint16 = 1 << 10
	AN100FD    uint16 = 1 << 8
	AN100HD    uint16 = 1 << 7
	AN10FD     uint16 = 1 << 6
	AN10HD     uint16 = 1 << 5
	ANSelector uint16 = 0x0001 // IEEE 802.3

	Ctrl1000FD uint16 = 1 << 9 // advertise 1000BASE-T full duplex
	Ctrl1000HD uint16 = 1 << 8

	Stat1000LocalRxOK  uint16 = 1 << 13
	Stat1000RemoteRxOK uint16 = 1 << 12
	Stat1000LPFD       uint16 = 1 << 11 // partner can 1000BASE-T full duplex
	Stat1000LPHD       uint16 = 1 << 10
)

// Copper specific status (register 17) fields of Marvell-style PHYs.
const (
	PHYStatSpeedShift        = 14 // 2 bits: 0 = 10, 1 = 100, 2 = 1000 Mb/s
	PHYStatDuplex     uint16 = 1 << 13
	PHYStatResolved   uint16 = 1 << 11
	PHYStatLink       uint16 = 1 << 10 // real time
)

// PHYStatStyle selects the layout of the vendor status register 17.
type PHYStatStyle uint8

const (
	// PHYStatMarvell: Marvell 88E1xxx / Intel I210 copper specific status:
	// speed bits 15:14 (0 10, 1 100, 2 1000 Mb/s), duplex bit 13, resolved bit
	// 11, real-time link bit 10.
	PHYStatMarvell PHYStatStyle = iota
	// PHYStatIGP: Intel IGP (82576 internal PHY) port status: speed bits 15:14
	// (1 10, 2 100, 3 1000 Mb/s), link up bit 10, full duplex bit 9.
	PHYStatIGP
	// PHYStatRealtek: the Realtek RTL8211F register set (phy_realtek.go):
	// register 31 selects the page of registers 16-30, the PHY status is on
	// page 0xa43. NewPHY uses it for a PHYStatMarvell configuration (the
	// zero value) whose ID carries Realtek's OUI: the register set of the
	// part the ID names.
	PHYStatRealtek
)

// Register values after a PHY reset.
const (
	bmcrDefault   = BMCRANEnable | BMCRFullDplx | BMCRSpeed1000
	bmsrBase      = BMSR100FD | BMSR100HD | BMSR10FD | BMSR10HD | BMSRExtStatus | BMSRMFPreSup | BMSRANAbility | BMSRExtCap
	anarDefault   = AN100FD | AN100HD | AN10FD | AN10HD | ANSelector
	ctrl1000Def   = Ctrl1000FD | Ctrl1000HD
	esrDefault    = 0x3000 // 1000BASE-T full and half duplex capable
	lpDefault     = ANAck | ANPause | AN100FD | AN100HD | AN10FD | AN10HD | ANSelector
	lp1000Default = Stat1000LPFD | Stat1000LPHD
)

// DefaultAutonegDelay is how long autonegotiation takes when PHYConfig leaves it 0.
const DefaultAutonegDelay = 100 * time.Millisecond

// BreakLinkMin is the minimum of clause 28's break_link_timer (IEEE 802.3
// 28.3.2: 1200 to 1500 ms): how long a real PHY's link stays down when its
// autonegotiation restarts (Microchip's LAN8742A datasheet: about 1250 ms,
// during which the partner drops its link too). Linux's phylib polls a PHY
// without an interrupt once a second (PHY_STATE_TIME), so it sees every such
// renegotiation as a link down and then up, and tells the MAC the new speed.
const BreakLinkMin = 1200 * time.Millisecond

// PHYConfig describes a PHY and its link partner.
type PHYConfig struct {
	Addr int    // MDIO address (0-31); the MAC model decides what answers
	ID1  uint16 // PHYID1
	ID2  uint16 // PHYID2
	// AutonegDelay is the time from an autonegotiation restart to its completion
	// (real time). 0: DefaultAutonegDelay.
	AutonegDelay time.Duration
	// BreakLink is how long a renegotiation of a link that was up keeps the
	// link down before autonegotiation can complete (IEEE 802.3 28.3.2:
	// break_link_timer, 1200 to 1500 ms, runs in the arbitration state
	// TRANSMIT DISABLE while the PHY sends nothing, so the partner sees the
	// link break too; BreakLinkMin is the standard's minimum). The
	// negotiation's AutonegDelay follows it. A restart while the break is
	// still running starts it again. 0: no break (renegotiation takes
	// AutonegDelay only, for unit tests' speed).
	BreakLink time.Duration
	// PartnerAbility is what the link partner advertises (ANLPAR). 0: 10/100
	// half and full duplex with pause.
	PartnerAbility uint16
	// PartnerNo1000 makes the partner unable to do 1000BASE-T.
	PartnerNo1000 bool
	// Unplugged starts with no cable (SetConnected(true) plugs it in).
	Unplugged bool
	// Faults receives writes to read-only registers; nil: a private log.
	Faults *Faults
	// StatStyle is the layout of register 17.
	StatStyle PHYStatStyle
}

// PHY is a clause-22 copper PHY with autonegotiation.
//
// Autonegotiation runs only after software writes BMCR with AN enable and AN
// restart, or resets the PHY (BMCR reset) while AN is enabled (power-on alone
// does not start it: the models' PHYs wait for their driver), and
// completes AutonegDelay later if the cable is connected and the two sides share
// a mode; then the link is up at the best common mode (1000 before 100 before 10,
// full before half duplex). Unplugging drops the link at once; plugging back in
// restarts autonegotiation if it had been started before. With AN disabled the
// forced BMCR speed and duplex apply as soon as the cable is connected.
//
// A restart of a link that was up (BMCR restart or reset, an unplug and plug
// during the break) keeps it down for BreakLink before the AutonegDelay of the
// negotiation runs (PHYConfig.BreakLink).
//
// BMSR's link status is latched low: after the link drops, the first BMSR read
// returns 0 even if the link has come back. Safe for concurrent use.
type PHY struct {
	cfg    PHYConfig // immutable
	delay  time.Duration
	faults *Faults

	up   atomic.Bool // link up: read without the lock on fast paths
	dead atomic.Bool // MDIO does not answer (SetDead, phydead.go)

	mu       sync.Mutex
	bmcr     uint16
	anar     uint16
	ctrl1000 uint16
	vendor   [32]uint16 // registers 16-31 other than 17: plain storage
	// page is the Marvell page address (register 22, PHYStatMarvell): on a
	// page other than 0, registers 16-29 are that page's (paged, plain
	// storage) and 17 is not the copper status. Linux's marvell driver
	// (88E1510 family) writes LED, errata and RGMII-delay registers there.
	// Registers 0-15 are the copper ones on every page but 1, where they
	// are the fiber side's (phy_marvell.go).
	page       uint16 // register 22 as written; the page is its low byte
	paged      map[uint32]uint16
	connected  bool
	anStarted  bool      // AN has been restarted since the last PHY reset
	anDone     bool      // AN completed (partner pages received)
	anGen      uint64    // bumps on every restart/abort; stale timers compare it
	latchedLow bool      // link dropped since the last BMSR read
	breakEnd   time.Time // end of the running break_link_timer (BreakLink)
	speed      int
	full       bool
	timer      *time.Timer
	notify     func(nic.LinkState) // called without mu held on link changes
}

// NewPHY returns a PHY after power-on: registers at their reset values, link down.
func NewPHY(cfg PHYConfig) *PHY {
	p := &PHY{cfg: cfg, delay: cfg.AutonegDelay, faults: cfg.Faults}
	if p.delay <= 0 {
		p.delay = DefaultAutonegDelay
	}
	if p.faults == nil {
		p.faults = &Faults{}
	}
	if p.cfg.PartnerAbility == 0 {
		p.cfg.PartnerAbility = lpDefault
	}
	if p.cfg.StatStyle == PHYStatMarvell && p.cfg.ID1 == realtekID1 {
		p.cfg.StatStyle = PHYStatRealtek
	}
	p.connected = !cfg.Unplugged
	p.resetLocked()
	return p
}

// Addr is the PHY's MDIO address.
func (p *PHY) Addr() int { return p.cfg.Addr }

// SetNotify registers f to be called (from any goroutine, without the PHY's
// lock) whenever the link goes up or down.
func (p *PHY) SetNotify(f func(nic.LinkState)) {
	p.mu.Lock()
	p.notify = f
	p.mu.Unlock()
}

// LinkUp reports whether the link is up. Lock-free.
func (p *PHY) LinkUp() bool { return p.up.Load() }

// Link returns the resolved link state.
func (p *PHY) Link() nic.LinkState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateLocked()
}

func (p *PHY) stateLocked() nic.LinkState {
	if !p.up.Load() {
		return nic.LinkState{}
	}
	return nic.LinkState{Up: true, SpeedMbps: p.speed, FullDuplex: p.full}
}

// resetLocked puts the registers at their reset values and drops the link.
func (p *PHY) resetLocked() {
	p.bmcr = bmcrDefault
	p.anar = anarDefault
	p.ctrl1000 = ctrl1000Def
	p.vendor = [32]uint16{}
	p.anStarted = false
	p.abortLocked()
}

// softResetLocked is a BMCR write with the reset bit (self-clearing: it reads
// back 0 at once). Either way the link drops and, when BMCR then has AN
// enable, autonegotiation starts again, as after any reset of a PHY that can
// negotiate (IEEE 802.3 22.2.4.1.1 and 28.3: the arbitration state machine
// starts from its reset state; Linux's genphy_soft_reset writes BMCR_RESET
// with BMCR_ANRESTART and waits only for the reset bit to clear):
//   - PHYStatIGP (an IEEE register set): the registers return to their reset
//     values, the rest of the written value is lost.
//   - PHYStatMarvell (88E1xxx, the I210's PHY): the registers keep their
//     values (the 88E151x datasheet's "Retain" registers: a software reset is
//     how the driver commits ANAR, CTRL1000 and BMCR speed/duplex/AN enable
//     changes, which Linux's marvell driver does after config_aneg); the
//     written BMCR bits other than reset and restart become BMCR.
func (p *PHY) softResetLocked(val uint16) {
	brk := p.breaksLocked()
	if p.cfg.StatStyle != PHYStatMarvell {
		p.resetLocked()
	} else {
		p.bmcr = val &^ (BMCRReset | BMCRANRestart)
		p.anStarted = false
		p.abortLocked()
	}
	switch {
	case p.bmcr&BMCRPowerDown != 0:
	case p.bmcr&BMCRANEnable == 0:
		p.forceLocked()
	default:
		p.restartLocked(brk)
	}
}

// abortLocked stops autonegotiation and drops the link.
func (p *PHY) abortLocked() {
	p.anGen++
	p.anDone = false
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.setDownLocked()
}

func (p *PHY) setDownLocked() {
	if p.up.Load() {
		p.latchedLow = true
	}
	p.up.Store(false)
	p.speed, p.full = 0, false
}

// breaksLocked reports whether a restart now breaks a link: the link is up,
// or the break of an earlier restart is still running.
func (p *PHY) breaksLocked() bool {
	return p.cfg.BreakLink > 0 && (p.up.Load() || time.Now().Before(p.breakEnd))
}

// restartLocked starts autonegotiation; it completes after the delay, and
// after BreakLink before it when brk (breaksLocked before the link dropped).
func (p *PHY) restartLocked(brk bool) {
	p.abortLocked()
	p.anStarted = true
	d := p.delay
	if brk {
		p.breakEnd = time.Now().Add(p.cfg.BreakLink)
		d += p.cfg.BreakLink
	}
	if !p.connected || p.bmcr&BMCRPowerDown != 0 {
		return
	}
	gen := p.anGen
	p.timer = time.AfterFunc(d, func() { p.complete(gen) })
}

func (p *PHY) complete(gen uint64) {
	p.mu.Lock()
	if gen != p.anGen || !p.connected {
		p.mu.Unlock()
		return
	}
	p.timer = nil
	p.anDone = true
	lp1000 := !p.cfg.PartnerNo1000
	lp := p.cfg.PartnerAbility
	switch {
	case p.ctrl1000&Ctrl1000FD != 0 && lp1000:
		p.speed, p.full = 1000, true
	case p.ctrl1000&Ctrl1000HD != 0 && lp1000:
		p.speed, p.full = 1000, false
	case p.anar&lp&AN100FD != 0:
		p.speed, p.full = 100, true
	case p.anar&lp&AN100HD != 0:
		p.speed, p.full = 100, false
	case p.anar&lp&AN10FD != 0:
		p.speed, p.full = 10, true
	case p.anar&lp&AN10HD != 0:
		p.speed, p.full = 10, false
	default: // no common mode: negotiation ends, the link stays down
		p.mu.Unlock()
		return
	}
	p.up.Store(true)
	st, f := p.stateLocked(), p.notify
	p.mu.Unlock()
	if f != nil {
		f(st)
	}
}

// forceLocked applies BMCR's forced speed and duplex (AN disabled).
func (p *PHY) forceLocked() {
	p.abortLocked()
	if !p.connected || p.bmcr&BMCRPowerDown != 0 {
		return
	}
	switch {
	case p.bmcr&BMCRSpeed1000 != 0 && p.bmcr&BMCRSpeed100 == 0:
		p.speed = 1000
	case p.bmcr&BMCRSpeed100 != 0 && p.bmcr&BMCRSpeed1000 == 0:
		p.speed = 100
	default:
		p.speed = 10
	}
	p.full = p.bmcr&BMCRFullDplx != 0
	p.up.Store(true)
}

// SetConnected plugs the cable in (true) or pulls it (false).
func (p *PHY) SetConnected(on bool) {
	p.mu.Lock()
	wasUp := p.up.Load()
	p.connected = on
	switch {
	case !on:
		p.abortLocked()
	case p.bmcr&BMCRANEnable == 0:
		p.forceLocked()
	case p.anStarted:
		p.restartLocked(p.breaksLocked())
	}
	st, f := p.stateLocked(), p.notify
	changed := wasUp != p.up.Load()
	p.mu.Unlock()
	if changed && f != nil {
		f(st)
	}
}

// marvellPage is register 22, the page address of PHYStatMarvell PHYs.
const marvellPage = 22

// pagedLocked reports whether reg is one of the current page's own registers.
func (p *PHY) pagedLocked(reg int) bool {
	return p.cfg.StatStyle == PHYStatMarvell && p.page&0xff != 0 && reg >= 16 && reg < 30 && reg != marvellPage
}

// Read returns MII register reg (0-31).
func (p *PHY) Read(reg int) uint16 {
	if p.dead.Load() {
		return 0xFFFF // nothing drives MDIO: the pull-up reads all ones
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fiberLocked(reg) {
		return p.readFiberLocked(reg)
	}
	if p.cfg.StatStyle == PHYStatRealtek && reg >= 16 {
		return p.readRealtekLocked(reg)
	}
	if p.pagedLocked(reg) {
		return p.paged[uint32(p.page&0xff)<<5|uint32(reg)]
	}
	if reg == marvellPage && p.cfg.StatStyle == PHYStatMarvell {
		return p.page
	}
	switch reg {
	case MIIBMCR:
		return p.bmcr
	case MIIBMSR:
		v := bmsrBase
		if p.anDone {
			v |= BMSRANComplete
		}
		if p.up.Load() && !p.latchedLow {
			v |= BMSRLinkStatus
		}
		p.latchedLow = false
		return v
	case MIIPHYID1:
		return p.cfg.ID1
	case MIIPHYID2:
		return p.cfg.ID2
	case MIIANAR:
		return p.anar
	case MIIANLPAR:
		if p.anDone {
			return p.cfg.PartnerAbility
		}
		return 0
	case MIIANER:
		if p.anDone {
			return 1 // link partner autonegotiation able
		}
		return 0
	case MIICTRL1000:
		return p.ctrl1000
	case MIISTAT1000:
		if !p.anDone {
			return 0
		}
		var v uint16
		if !p.cfg.PartnerNo1000 {
			v |= lp1000Default
		}
		if p.up.Load() {
			v |= Stat1000LocalRxOK | Stat1000RemoteRxOK
		}
		return v
	case MIIESTATUS:
		return esrDefault
	case MIIPHYSTAT:
		if !p.up.Load() {
			return 0
		}
		if p.cfg.StatStyle == PHYStatIGP {
			v := uint16(1 << 10) // link up
			switch p.speed {
			case 1000:
				v |= 3 << 14
			case 100:
				v |= 2 << 14
			default:
				v |= 1 << 14
			}
			if p.full {
				v |= 1 << 9
			}
			return v
		}
		v := PHYStatResolved | PHYStatLink
		switch p.speed {
		case 1000:
			v |= 2 << PHYStatSpeedShift
		case 100:
			v |= 1 << PHYStatSpeedShift
		}
		if p.full {
			v |= PHYStatDuplex
		}
		return v
	}
	if reg >= 16 && reg < 32 {
		return p.vendor[reg]
	}
	return 0
}

// Write sets MII register reg (0-31). Writes to read-only registers are faults.
func (p *PHY) Write(reg int, val uint16) {
	if p.dead.Load() {
		return
	}
	p.mu.Lock()
	if p.fiberLocked(reg) {
		p.writeFiberLocked(reg, val)
		p.mu.Unlock()
		return
	}
	if p.cfg.StatStyle == PHYStatRealtek && reg >= 16 {
		p.writeRealtekLocked(reg, val)
		p.mu.Unlock()
		return
	}
	if p.pagedLocked(reg) {
		if p.paged == nil {
			p.paged = map[uint32]uint16{}
		}
		if p.page&0xff == 18 && reg == 20 {
			// General Control Register 1 (88E151x page 18 register 20):
			// the reset bit 15 self-clears; MODE 2:0 (SGMII to copper,
			// Linux's m88e1510_config_init) takes effect with it. The
			// MAC-side interface is not modelled: MODE is storage.
			val &^= 1 << 15
		}
		p.paged[uint32(p.page&0xff)<<5|uint32(reg)] = val
		p.mu.Unlock()
		return
	}
	if reg == marvellPage && p.cfg.StatStyle == PHYStatMarvell {
		p.page = val
		p.mu.Unlock()
		return
	}
	wasUp := p.up.Load()
	switch reg {
	case MIIBMCR:
		if val&BMCRReset != 0 {
			p.softResetLocked(val)
			break
		}
		old := p.bmcr
		p.bmcr = val &^ BMCRANRestart // restart self-clears
		switch {
		case val&BMCRANEnable == 0:
			if old&BMCRANEnable != 0 || (old^val)&(BMCRSpeed100|BMCRSpeed1000|BMCRFullDplx|BMCRPowerDown) != 0 || !p.up.Load() {
				p.forceLocked()
			}
		case val&BMCRPowerDown != 0:
			p.abortLocked()
		case val&BMCRANRestart != 0:
			p.restartLocked(p.breaksLocked())
		case old&BMCRPowerDown != 0 && p.anStarted:
			p.restartLocked(p.breaksLocked()) // power back up: negotiation resumes
		}
	case MIIANAR:
		p.anar = val
	case MIICTRL1000:
		p.ctrl1000 = val
	case MIIBMSR, MIIPHYID1, MIIPHYID2, MIIANLPAR, MIIANER, MIISTAT1000, MIIESTATUS, MIIPHYSTAT:
		p.mu.Unlock()
		p.faults.Add("mdio-write", miiName(reg), uint64(reg), "write of 0x%04x to a read-only PHY register", val)
		return
	default:
		if reg >= 16 && reg < 32 {
			p.vendor[reg] = val
		}
	}
	st, f := p.stateLocked(), p.notify
	changed := wasUp != p.up.Load()
	p.mu.Unlock()
	if changed && f != nil {
		f(st)
	}
}

func miiName(reg int) string {
	switch reg {
	case MIIBMCR:
		return "BMCR"
	case MIIBMSR:
		return "BMSR"
	case MIIPHYID1:
		return "PHYID1"
	case MIIPHYID2:
		return "PHYID2"
	case MIIANAR:
		return "ANAR"
	case MIIANLPAR:
		return "ANLPAR"
	case MIIANER:
		return "ANER"
	case MIICTRL1000:
		return "CTRL1000"
	case MIISTAT1000:
		return "STAT1000"
	case MIIESTATUS:
		return "ESTATUS"
	case MIIPHYSTAT:
		return "PHYSTAT"
	}
	return "MII"
}
