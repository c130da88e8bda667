package sim

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic"
)

const testAN = 5 * time.Millisecond

func waitUp(t *testing.T, p *PHY) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !p.LinkUp() {
		if time.Now().After(deadline) {
			t.Fatal("link did not come up within 2s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPHYIdentityAndDefaults(t *testing.T) {
	p := NewPHY(PHYConfig{Addr: 1, ID1: 0x0141, ID2: 0x0C00, AutonegDelay: testAN})
	require.Equal(t, uint16(0x0141), p.Read(MIIPHYID1))
	require.Equal(t, uint16(0x0C00), p.Read(MIIPHYID2))
	require.Equal(t, bmcrDefault, p.Read(MIIBMCR))
	require.Equal(t, anarDefault, p.Read(MIIANAR))
	bmsr := p.Read(MIIBMSR)
	require.Zero(t, bmsr&(BMSRLinkStatus|BMSRANComplete))
	require.NotZero(t, bmsr&BMSRANAbility)
	require.Equal(t, 1, p.Addr())
}

func TestPHYAutonegOnlyAfterRestart(t *testing.T) {
	var notes atomic.Int32
	p := NewPHY(PHYConfig{AutonegDelay: testAN})
	p.SetNotify(func(nic.LinkState) { notes.Add(1) })
	time.Sleep(4 * testAN)
	require.False(t, p.LinkUp(), "power-on does not negotiate")
	p.Write(MIIBMCR, BMCRANEnable|BMCRFullDplx|BMCRSpeed1000) // AN enable without restart
	time.Sleep(4 * testAN)
	require.False(t, p.LinkUp(), "AN enable alone does not negotiate")

	start := time.Now()
	p.Write(MIIBMCR, p.Read(MIIBMCR)|BMCRANRestart)
	require.Zero(t, p.Read(MIIBMCR)&BMCRANRestart, "restart self-clears")
	require.False(t, p.LinkUp(), "negotiation takes time")
	waitUp(t, p)
	require.GreaterOrEqual(t, time.Since(start), testAN)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}, p.Link())
	bmsr := p.Read(MIIBMSR)
	require.NotZero(t, bmsr&BMSRANComplete)
	require.NotZero(t, bmsr&BMSRLinkStatus)
	require.Equal(t, lpDefault, p.Read(MIIANLPAR))
	require.NotZero(t, p.Read(MIISTAT1000)&Stat1000LPFD)
	st := p.Read(MIIPHYSTAT)
	require.Equal(t, uint16(2), st>>PHYStatSpeedShift)
	require.NotZero(t, st&PHYStatDuplex)
	require.Equal(t, int32(1), notes.Load())
}

func TestPHYLatchedLowAndCable(t *testing.T) {
	p := NewPHY(PHYConfig{AutonegDelay: testAN})
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	p.SetConnected(false)
	require.False(t, p.LinkUp())
	require.Zero(t, p.Read(MIIANLPAR), "partner pages gone with the cable")
	p.SetConnected(true) // negotiation resumes by itself
	waitUp(t, p)
	require.Zero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "first BMSR read after a drop reports the drop")
	require.NotZero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "second read reports the current state")
}

func TestPHYResolutionAndReset(t *testing.T) {
	p := NewPHY(PHYConfig{AutonegDelay: testAN, PartnerNo1000: true, StatStyle: PHYStatIGP})
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link())

	p.Write(MIIANAR, AN10HD|ANSelector)
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 10, FullDuplex: false}, p.Link())

	p.Write(MIIBMCR, BMCRReset)
	require.Zero(t, p.Read(MIIBMCR)&BMCRReset, "reset self-clears")
	require.Equal(t, anarDefault, p.Read(MIIANAR), "reset restores defaults")
	require.False(t, p.LinkUp(), "reset drops the link")
	waitUp(t, p) // AN is enabled after the reset: negotiation starts again
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link(), "the default advertisement again")

	// Forced 100 full duplex.
	p.Write(MIIBMCR, BMCRSpeed100|BMCRFullDplx)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link())
	p.Write(MIIBMCR, BMCRSpeed100|BMCRFullDplx|BMCRPowerDown)
	require.False(t, p.LinkUp())
}

func TestPHYNoCommonModeAndUnplugged(t *testing.T) {
	p := NewPHY(PHYConfig{AutonegDelay: testAN, PartnerNo1000: true, PartnerAbility: AN10HD | ANSelector})
	p.Write(MIIANAR, AN100FD|ANSelector)
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	time.Sleep(6 * testAN)
	require.False(t, p.LinkUp(), "no common mode: no link")

	q := NewPHY(PHYConfig{AutonegDelay: testAN, Unplugged: true})
	q.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	time.Sleep(4 * testAN)
	require.False(t, q.LinkUp())
	q.SetConnected(true)
	waitUp(t, q)
}

func TestPHYReadOnlyWriteFaults(t *testing.T) {
	f := &Faults{}
	p := NewPHY(PHYConfig{Faults: f})
	p.Write(MIIPHYID1, 0x1234)
	p.Write(MIIBMSR, 0xFFFF)
	require.Equal(t, 2, f.Count())
	require.Equal(t, uint16(0), p.Read(MIIPHYID1))
	p.Write(22, 0xBEEF) // vendor page register: storage
	require.Equal(t, uint16(0xBEEF), p.Read(22))
	require.Equal(t, 2, f.Count())
}

func TestPHYStatusStyles(t *testing.T) {
	p := NewPHY(PHYConfig{AutonegDelay: testAN, StatStyle: PHYStatIGP})
	require.Zero(t, p.Read(MIIPHYSTAT), "no link: no status")
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	require.Equal(t, uint16(0xC000|0x0400|0x0200), p.Read(MIIPHYSTAT), "IGP: 1000 Mb/s, link, full duplex")
	q := NewPHY(PHYConfig{AutonegDelay: testAN, PartnerNo1000: true})
	q.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, q)
	require.Equal(t, uint16(1<<14|PHYStatDuplex|PHYStatResolved|PHYStatLink), q.Read(MIIPHYSTAT), "Marvell: 100 Mb/s full duplex")
}

// TestPHYMarvellPages: on a page other than 0 (register 22), registers 16-29
// are that page's own storage, so Linux's marvell driver can write page 0xFF's
// errata registers and page 3's LED registers; register 17 on page 0 stays the
// read-only copper status, and registers 0-15 are the copper ones on any page.
func TestPHYMarvellPages(t *testing.T) {
	f := &Faults{}
	p := NewPHY(PHYConfig{Faults: f, ID1: 0x0141, ID2: 0x0dd0})
	p.Write(22, 0xff)
	p.Write(17, 0x214b)
	p.Write(16, 0x2144)
	p.Write(22, 3)
	p.Write(16, 0x1177)
	require.Equal(t, uint16(0x0141), p.Read(MIIPHYID1), "registers 0-15 on page 3")
	p.Write(22, 3)
	p.Write(22, 0xff)
	require.Equal(t, uint16(0x214b), p.Read(17))
	require.Equal(t, uint16(0x2144), p.Read(16))
	p.Write(22, 3)
	require.Equal(t, uint16(0x1177), p.Read(16))
	require.Equal(t, 0, f.Count())
	p.Write(22, 18)
	p.Write(20, 0x8001) // SGMII to copper, with the mode reset
	require.Equal(t, uint16(0x0001), p.Read(20), "page 18 register 20: reset self-clears, MODE stays")
	p.Write(22, 0)
	p.Write(17, 0x1234)
	require.Equal(t, 1, f.Count(), "register 17 on page 0 is read-only")
	require.Zero(t, p.Read(16), "page 0's register 16 is its own")
	// The IGP layout has no such page register: 22 is plain storage there.
	q := NewPHY(PHYConfig{Faults: f, StatStyle: PHYStatIGP})
	q.Write(22, 3)
	q.Write(17, 1)
	require.Equal(t, 2, f.Count())
}

// TestPHYMarvellSoftReset is Linux's genphy_soft_reset after marvell.ko's
// config_aneg (m88e1121_config_aneg commits its changes with a reset): BMCR
// 0x1340 (AN enable and restart, 1000 full) then 0x9340 (the same with reset).
// The 88E151x keeps its registers over a software reset and negotiates again;
// the link comes up with the advertisement written before the reset.
func TestPHYMarvellSoftReset(t *testing.T) {
	p := NewPHY(PHYConfig{ID1: 0x0141, ID2: 0x0dd0, AutonegDelay: testAN, PartnerNo1000: true})
	p.Write(MIIANAR, AN100HD|AN10FD|ANSelector)
	p.Write(22, 3)
	p.Write(16, 0x1177) // page 3's LED control
	p.Write(22, 0)
	p.Write(MIIBMCR, 0x1340)
	p.Write(MIIBMCR, 0x9340)
	require.Equal(t, uint16(0x1140), p.Read(MIIBMCR), "reset and restart self-clear; the rest stays")
	require.Equal(t, AN100HD|AN10FD|ANSelector, p.Read(MIIANAR), "ANAR kept over the reset")
	waitUp(t, p)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: false}, p.Link())
	require.NotZero(t, p.Read(MIIBMSR)&BMSRANComplete)
	p.Write(22, 3)
	require.Equal(t, uint16(0x1177), p.Read(16), "paged registers kept")
	p.Write(22, 0)

	// A reset with AN disabled applies the forced mode; with power down,
	// nothing comes up until power up restarts negotiation.
	p.Write(MIIBMCR, BMCRReset|BMCRSpeed100|BMCRFullDplx)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link())
	p.Write(MIIBMCR, BMCRReset|BMCRANEnable|BMCRPowerDown)
	time.Sleep(4 * testAN)
	require.False(t, p.LinkUp(), "powered down")
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
}

// TestPHYMarvellFiberPage is marvell.ko's config_aneg outside SGMII mode with
// only 100BASE-T full duplex advertised: page 1's advertisement is written
// with no 1000BASE-X bit and its negotiation restarted; the copper side
// keeps its advertisement and negotiates 100 full.
func TestPHYMarvellFiberPage(t *testing.T) {
	f := &Faults{}
	p := NewPHY(PHYConfig{ID1: 0x0141, ID2: 0x0dd0, AutonegDelay: testAN, Faults: f})
	p.Write(MIIANAR, AN100FD|ANSelector)
	p.Write(MIICTRL1000, 0)
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	p.Write(22, 1)
	p.Write(MIIANAR, ANSelector) // linkmode_adv_to_fiber_adv_t: nothing
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart|BMCRFullDplx|BMCRSpeed1000)
	require.Equal(t, uint16(ANSelector), p.Read(MIIANAR), "page 1's own advertisement")
	require.Equal(t, BMCRANEnable|BMCRFullDplx|BMCRSpeed1000, p.Read(MIIBMCR), "restart self-clears")
	require.Zero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "no fiber link")
	require.Zero(t, p.Read(MIIPHYSTAT), "page 1's status register: not resolved")
	require.Equal(t, uint16(0x0141), p.Read(MIIPHYID1))
	p.Write(MIIBMSR, 0)
	require.Equal(t, 1, f.Count(), "page 1's status is read-only")
	p.Write(22, 0)
	require.Equal(t, AN100FD|ANSelector, p.Read(MIIANAR), "copper advertisement untouched")
	waitUp(t, p)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link())
}

// TestPHYRealtek is realtek.ko on an RTL8211F: register 31 pages registers
// 16-30; PHYSR and rtlgen_get_speed's register on page 0xa43 give the
// resolved link; the configuration registers are each page's storage.
func TestPHYRealtek(t *testing.T) {
	f := &Faults{}
	p := NewPHY(PHYConfig{ID1: 0x001c, ID2: 0xc916, AutonegDelay: testAN, Faults: f, PartnerNo1000: true})
	require.Equal(t, PHYStatRealtek, p.cfg.StatStyle, "a Realtek ID gets the Realtek register set")
	p.Write(31, 0xa43)
	require.Zero(t, p.Read(0x1a), "no link yet")
	p.Write(0x18, 0x2000) // PHYCR1 (ALDPS)
	p.Write(31, 0xd08)
	p.Write(0x11, 0x0100) // TX delay
	p.Write(31, 0)
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	p.Write(31, 0xa43)
	require.Equal(t, uint16(1<<2|1<<3|1<<4), p.Read(0x1a), "PHYSR: link, full duplex, 100")
	require.Equal(t, uint16(1<<2|1<<3|1<<4), p.Read(0x12), "rtlgen_get_speed's register")
	require.Equal(t, uint16(0x2000), p.Read(0x18))
	require.Equal(t, uint16(0xa43), p.Read(31))
	p.Write(0x1a, 0)
	require.Equal(t, 1, f.Count(), "PHYSR is read-only")
	p.Write(31, 0xd08)
	require.Equal(t, uint16(0x0100), p.Read(0x11))
	require.Zero(t, p.Read(0x18), "page 0xd08's register 0x18 is its own")
	require.Equal(t, uint16(0x001c), p.Read(MIIPHYID1), "registers 0-15 on any page")
	// Other PHYs keep their layouts: register 31 is plain storage there.
	q := NewPHY(PHYConfig{ID1: 0x0141, ID2: 0x0dd0})
	require.Equal(t, PHYStatMarvell, q.cfg.StatStyle)
}

// A dead PHY reads all ones over MDIO, BMCR's loopback bit included, but
// loops nothing back: Loopback follows the register only while the PHY lives.
func TestPHYLoopbackDead(t *testing.T) {
	p := NewPHY(PHYConfig{AutonegDelay: testAN})
	if p.Loopback() {
		t.Fatal("loopback after reset")
	}
	p.SetDead(true)
	if p.Read(MIIBMCR) != 0xFFFF || p.Loopback() {
		t.Fatalf("dead: BMCR reads %#x, Loopback %v: want 0xffff and no loopback", p.Read(MIIBMCR), p.Loopback())
	}
	p.SetDead(false)
	p.Write(MIIBMCR, p.Read(MIIBMCR)|BMCRLoopback)
	if !p.Loopback() {
		t.Fatal("BMCR loopback set: no loopback")
	}
	p.SetDead(true)
	if p.Loopback() {
		t.Fatal("a dead PHY in loopback still loops frames back")
	}
}

// TestPHYBreakLink: a renegotiation of a link that was up (a BMCR restart,
// the 88E151x's soft reset that marvell.ko uses to commit an advertisement, a
// restart during the break) keeps the link down for BreakLink and then the
// negotiation's time; the first BMSR read afterwards reports the drop, and a
// reader that double-reads BMSR (Linux's genphy_update_link when phylib last
// saw the link down) still sees it down during the break. A first
// negotiation has nothing to break.
func TestPHYBreakLink(t *testing.T) {
	const brk = 150 * time.Millisecond
	p := NewPHY(PHYConfig{ID1: 0x0141, ID2: 0x0dd0, AutonegDelay: testAN, BreakLink: brk})
	start := time.Now()
	p.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, p)
	require.Less(t, time.Since(start), brk, "a first negotiation breaks no link")
	p.Read(MIIBMSR)

	downFor := func(restart func()) time.Duration {
		t.Helper()
		require.True(t, p.LinkUp())
		start := time.Now()
		restart()
		require.False(t, p.LinkUp(), "the restart drops the link at once")
		require.Zero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "latched low: the first read reports the drop")
		time.Sleep(brk / 2)
		require.Zero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "still down halfway through the break")
		require.Zero(t, p.Read(MIIBMSR)&BMSRLinkStatus, "a double read sees it down too")
		waitUp(t, p)
		return time.Since(start)
	}
	require.GreaterOrEqual(t, downFor(func() { p.Write(MIIBMCR, p.Read(MIIBMCR)|BMCRANRestart) }), brk+testAN)
	// ethtool -s advertise 100 full on marvell.ko: ANAR, CTRL1000, then
	// BMCR 0x9340 (genphy_soft_reset).
	d := downFor(func() {
		p.Write(MIICTRL1000, 0)
		p.Write(MIIANAR, AN100FD|ANSelector)
		p.Write(MIIBMCR, BMCRReset|BMCRANEnable|BMCRANRestart|BMCRFullDplx|BMCRSpeed1000)
	})
	require.GreaterOrEqual(t, d, brk+testAN)
	require.Equal(t, nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, p.Link())
	// A restart during the break starts it again.
	d = downFor(func() {
		p.Write(MIIBMCR, p.Read(MIIBMCR)|BMCRANRestart)
		time.Sleep(brk / 2)
		p.Write(MIIBMCR, p.Read(MIIBMCR)|BMCRANRestart)
	})
	require.GreaterOrEqual(t, d, brk/2+brk+testAN)

	q := NewPHY(PHYConfig{AutonegDelay: testAN})
	q.Write(MIIBMCR, BMCRANEnable|BMCRANRestart)
	waitUp(t, q)
	start = time.Now()
	q.Write(MIIBMCR, q.Read(MIIBMCR)|BMCRANRestart)
	waitUp(t, q)
	require.Less(t, time.Since(start), brk, "BreakLink 0: renegotiation takes AutonegDelay only")
}
