package dwmac

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// The i.MX8M Plus EQOS's TX clock.
//
// On RGMII the MAC sends its TX clock with the data, and the SoC makes it:
// the node's "tx" clock (clk-imx8mp.c IMX8MP_CLK_ENET_QOS, "enet_qos" in
// the clock framework) must run at 125, 25 or 2.5 MHz for a 1000, 100 or 10
// Mb/s link (nic.RGMIITxClockHz). Linux's dwmac-imx.c sets it at every link
// change (imx_dwmac_fix_speed: clk_set_rate(clk_tx, rate)), but returns
// early on RMII and MII, whose clocks do not follow the speed: there the
// 50 MHz RMII reference clock (from the PHY or the board with
// snps,rmii_refclk_ext, else from this clock through IOMUXC_GPR1's
// TX_CLK_SEL) or the PHY's MII TX clock serve 10 and 100 Mb/s alike, and
// neither carries 1000. A clock at the wrong rate garbles every frame sent.
//
// User space can set a clock's rate only on a kernel built with
// CLOCK_ALLOW_WRITE_DEBUGFS (drivers/clk/clk.c #undefs it; clk_rate is 0444
// otherwise). So, when the Device tells the rate (PlatformClocks), Open
// learns it and, when it cannot be changed, advertises only the speed it
// serves (so autonegotiation with a gigabit partner lands on 1000); a link
// that comes up at another speed anyway (a forced PHY, a partner offering
// only speeds the clock does not serve) is refused: the transmitter stays
// off, Link reports the link down, LinkProblem and WaitLink say which clock
// runs at what rate, what the speed needs and how to fix it, and
// link_refused_tx_clock counts it. The transmitter stays off until a link
// is admitted (frames sent meanwhile wait in the ring; with it on and the
// link down they would be lost). Where the rate can be set, the driver
// sets it as dwmac-imx does at each link change and counts
// tx_clock_retunes.

// PlatformClocks is what a platform Device may tell the driver about the
// SoC around the MAC, from its devicetree node and the clock framework: the
// CLI's platform device does (from package preflight: the node's phy-mode,
// debugfs clk_rate), as does dwmacsim's i.MX8MP model on a sim.Board. The
// driver finds it by a type assertion on the nic.Device; without it the TX
// clock goes unchecked.
type PlatformClocks interface {
	// PHYMode is the node's phy-mode ("rgmii-id", "rmii"), "" when unknown.
	PHYMode() string
	// ClockRate reads the node's clock whose clock-names entry is con: its
	// name in the clock framework, its rate in Hz, and whether SetClockRate
	// can change it.
	ClockRate(con string) (name string, hz uint64, settable bool, err error)
	// SetClockRate sets that clock's rate. Its error says why it cannot and
	// how to get the rate (the devicetree edit); when the clock is not
	// settable it changes nothing.
	SetClockRate(con string, hz uint64) error
}

// ErrTxClock is wrapped by refusals of a link the EQOS TX clock cannot
// serve.
var ErrTxClock = errors.New("TX clock does not serve the link speed")

// txClockCon is the clock-names entry (dwmac-imx.c devm_clk_get(dev, "tx")).
const txClockCon = "tx"

// speedSet is a set of link speeds.
type speedSet uint8

const (
	speed10 speedSet = 1 << iota
	speed100
	speed1000
	speedsAll = speed10 | speed100 | speed1000
)

func speedOf(mbps int) speedSet {
	switch mbps {
	case 10:
		return speed10
	case 100:
		return speed100
	case 1000:
		return speed1000
	}
	return 0
}

func (s speedSet) has(mbps int) bool { return s&speedOf(mbps) != 0 }

func (s speedSet) String() string {
	var out []string
	for _, m := range []int{10, 100, 1000} {
		if s.has(m) {
			out = append(out, fmt.Sprint(m))
		}
	}
	if len(out) == 0 {
		return "no speed"
	}
	return strings.Join(out, " and ") + " Mb/s"
}

// txClock is what Open learned about the TX clock and what the link
// monitor decided since. dev, name, mode and rgmii are immutable after
// Open; allowed, and the rest, are guarded by Port.ctl.
type txClock struct {
	dev     PlatformClocks // nil: unchecked (not an i.MX EQOS, or the Device cannot tell)
	name    string         // the clock's name ("enet_qos")
	mode    string         // phy-mode
	rgmii   bool           // the rate follows the speed (RGMII); otherwise RMII/MII
	allowed speedSet       // the speeds advertised: what the clock serves

	hz       uint64 // the rate as last read or set
	refused  error  // the refusal in force; nil when the link is admitted
	parked   bool   // the transmitter is off: refused, and no admitted link since
	refSpeed int    // the speed refused (0: a partner's offer)
	refusals uint64 // link_refused_tx_clock
	retunes  uint64 // tx_clock_retunes
}

// learnTxClock is part of bring-up: on an i.MX EQOS whose Device tells the
// TX clock, it reads the interface mode and the rate and chooses the speeds
// to advertise. A rate that serves no speed and cannot be changed refuses
// the open.
func (p *Port) learnTxClock() error {
	pc, ok := p.dev.(PlatformClocks)
	if p.model.Integration != IntegrationIMX8MP || !ok {
		return nil
	}
	t := &p.txc
	t.mode = pc.PHYMode()
	switch {
	case t.mode == "" || strings.HasPrefix(t.mode, "rgmii"):
		t.rgmii = true
	case t.mode == "rmii" || t.mode == "mii":
		t.dev, t.allowed = pc, speed10|speed100 // no rate per speed: dwmac-imx returns early
		return nil
	default:
		return fmt.Errorf("phy-mode %q: the i.MX8MP EQOS runs MII, RMII or RGMII (dwmac-imx.c imx8mp_set_intf_mode): %w", t.mode, nic.ErrNotSupported)
	}
	name, hz, settable, err := pc.ClockRate(txClockCon)
	if err != nil {
		p.warnings = append(p.warnings, fmt.Sprintf("the EQOS TX clock %q: rate unknown (%v); links are accepted at any speed, and one it does not fit sends garbage", txClockCon, err))
		return nil
	}
	t.dev, t.name, t.hz = pc, name, hz
	if t.mode == "" {
		p.warnings = append(p.warnings, "the EQOS node's phy-mode is unknown: taking RGMII, as on the i.MX8MP EVK")
	}
	if settable {
		t.allowed = speedsAll
		return nil
	}
	mbps, ok := nic.RGMIISpeedAt(hz)
	if !ok {
		return fmt.Errorf("the EQOS TX clock %q (%s) runs at %d Hz, which serves no RGMII speed (125, 25 or 2.5 MHz for 1000, 100 or 10 Mb/s), and cannot be set: %v: %w",
			txClockCon, name, hz, pc.SetClockRate(txClockCon, 125_000_000), ErrTxClock) // not settable: changes nothing, says why
	}
	t.allowed = speedOf(mbps)
	return nil
}

// advertiseForTxClock writes ANAR and 1000BASE-T control for the speeds the
// TX clock serves, among those the PHY can (BMSR, extended status), as
// genphy_config_advert writes phylib's narrowed advertising mask. Caller
// holds ctl.
func (p *Port) advertiseForTxClock() error {
	t := &p.txc
	if t.dev == nil {
		return nil
	}
	bmsr, err := p.mdioRead(p.phyAddr, miiBMSR)
	if err != nil {
		return fmt.Errorf("reading BMSR: %w", err)
	}
	anar, err := p.mdioRead(p.phyAddr, miiANAR)
	if err != nil {
		return fmt.Errorf("reading the advertisement: %w", err)
	}
	anar &^= an10HD | an10FD | an100HD | an100FD
	for _, m := range []struct {
		mbps     int
		can, adv uint16
	}{{10, bmsr10HD, an10HD}, {10, bmsr10FD, an10FD}, {100, bmsr100HD, an100HD}, {100, bmsr100FD, an100FD}} {
		if t.allowed.has(m.mbps) && bmsr&m.can != 0 {
			anar |= m.adv
		}
	}
	if err := p.mdioWrite(p.phyAddr, miiANAR, anar); err != nil {
		return fmt.Errorf("writing the advertisement: %w", err)
	}
	if bmsr&bmsrExtStatus == 0 {
		return nil
	}
	es, err := p.mdioRead(p.phyAddr, miiESTATUS)
	if err != nil {
		return fmt.Errorf("reading the extended status: %w", err)
	}
	c1000, err := p.mdioRead(p.phyAddr, miiCTRL1000)
	if err != nil {
		return fmt.Errorf("reading 1000BASE-T control: %w", err)
	}
	c1000 &^= ctrl1000FD | ctrl1000HD // half duplex stays withdrawn (gigabitHalfWhy)
	if t.allowed.has(1000) && es&estatus1000TFD != 0 {
		c1000 |= ctrl1000FD
	}
	if err := p.mdioWrite(p.phyAddr, miiCTRL1000, c1000); err != nil {
		return fmt.Errorf("writing 1000BASE-T control: %w", err)
	}
	return nil
}

// admitLocked checks link l (and, with the link down after a completed
// autonegotiation, what the partner offered) against the TX clock: it
// returns l, or a down link when refused, and keeps the refusal, its count
// and the transmitter's state up to date. Caller holds ctl.
func (p *Port) admitLocked(l nic.LinkState, bmsr uint16) nic.LinkState {
	t := &p.txc
	if t.dev == nil {
		return l
	}
	var why error
	switch {
	case l.Up:
		if l != p.link && t.rgmii && t.refused == nil {
			t.refresh() // a new link: the rate may have changed since (a DTB, another tool)
		}
		why = p.fitTxClockLocked(l.SpeedMbps)
	case bmsr&bmsrANComplete != 0 && bmsr != 0xFFFF:
		why = p.partnerRefusedLocked()
	}
	was := t.refused
	t.refused = why
	switch {
	case why != nil:
		if was == nil {
			t.refusals++
		}
		if !t.parked {
			t.parked = true
			p.programMAC(p.link) // the transmitter off (programMAC reads parked)
		}
	case t.parked && l.Up:
		t.parked = false
		p.programMAC(l) // an admitted link: the transmitter on again
	}
	if why != nil {
		return nic.LinkState{}
	}
	return l
}

// refresh reads the clock's rate again (kept as it was when unreadable).
// Caller holds ctl.
func (t *txClock) refresh() {
	if _, hz, _, err := t.dev.ClockRate(txClockCon); err == nil {
		t.hz = hz
	}
}

// fitTxClockLocked makes the TX clock serve a link at mbps: nil when it
// does or was set to; otherwise the refusal. Caller holds ctl.
func (p *Port) fitTxClockLocked(mbps int) error {
	t := &p.txc
	if !t.rgmii {
		if mbps > 100 {
			return fmt.Errorf("dwmac: %s: link at %d Mb/s refused: the EQOS runs %s, which carries at most 100 Mb/s: %w", p.name, mbps, strings.ToUpper(t.mode), ErrTxClock)
		}
		return nil
	}
	want, ok := nic.RGMIITxClockHz(mbps)
	if !ok {
		return fmt.Errorf("dwmac: %s: link at %d Mb/s refused: RGMII has no such speed: %w", p.name, mbps, ErrTxClock)
	}
	if t.hz == want {
		return nil
	}
	if t.refused != nil && t.refSpeed == mbps {
		return t.refused // tried already: do not write clk_rate at every poll
	}
	cause := p.setTxClockLocked(want)
	if cause == nil {
		return nil
	}
	t.refSpeed = mbps
	return fmt.Errorf("dwmac: %s: link at %d Mb/s refused: RGMII at %d Mb/s needs the EQOS TX clock %q (%s) at %d Hz, and it runs at %d Hz; the transmitter stays off, as it would send garbage. Fix: %v: %w",
		p.name, mbps, mbps, txClockCon, t.name, want, t.hz, cause, ErrTxClock)
}

// setTxClockLocked sets the TX clock to hz and reads it back (the clock
// framework rounds to what its dividers make). Caller holds ctl.
func (p *Port) setTxClockLocked(hz uint64) error {
	t := &p.txc
	if err := t.dev.SetClockRate(txClockCon, hz); err != nil {
		return err
	}
	_, got, _, err := t.dev.ClockRate(txClockCon)
	if err != nil {
		return fmt.Errorf("reading %s back after setting %d Hz: %w", t.name, hz, err)
	}
	t.hz = got
	if got != hz {
		return fmt.Errorf("%s was set to %d Hz but runs at %d Hz (its parent cannot be divided to that rate): set its parent in the DTB (assigned-clock-parents)", t.name, hz, got)
	}
	t.retunes++
	return nil
}

// partnerRefusedLocked explains a link that stayed down after
// autonegotiation because the partner offered only speeds the TX clock
// does not serve (they were not advertised). nil when that is not why, or
// when the clock could be set after all (then it advertises every speed and
// restarts autonegotiation). Caller holds ctl.
func (p *Port) partnerRefusedLocked() error {
	t := &p.txc
	if t.refused != nil && t.refSpeed == 0 {
		return t.refused
	}
	lpa, err := p.mdioRead(p.phyAddr, miiANLPAR)
	if err != nil {
		return nil
	}
	s1000, err := p.mdioRead(p.phyAddr, miiSTAT1000)
	if err != nil {
		return nil
	}
	offer := partnerOffer(lpa, s1000)
	if offer == 0 || offer&t.allowed != 0 {
		return nil // no pages, or a common speed: not the clock's doing
	}
	if !t.rgmii {
		return fmt.Errorf("dwmac: %s: no link: the partner offers only %v (ANLPAR %#04x, 1000BASE-T status %#04x), and the EQOS runs %s, which carries at most 100 Mb/s: %w",
			p.name, offer, lpa, s1000, strings.ToUpper(t.mode), ErrTxClock)
	}
	best := offer.fastest()
	want, _ := nic.RGMIITxClockHz(best)
	cause := p.setTxClockLocked(want)
	if cause == nil { // the clock became settable: offer every speed again
		t.allowed = speedsAll
		if err := p.advertiseForTxClock(); err == nil {
			bmcr, err := p.mdioRead(p.phyAddr, miiBMCR)
			if err == nil {
				_ = p.mdioWrite(p.phyAddr, miiBMCR, bmcr|bmcrANEnable|bmcrANRestart)
			}
		}
		return nil
	}
	t.refSpeed = 0
	return fmt.Errorf("dwmac: %s: no link: the partner offers only %v (ANLPAR %#04x, 1000BASE-T status %#04x); RGMII at %d Mb/s needs the EQOS TX clock %q (%s) at %d Hz, and it runs at %d Hz, which serves %v only, so only that was advertised. Fix: %v: %w",
		p.name, offer, lpa, s1000, best, txClockCon, t.name, want, t.hz, t.allowed, cause, ErrTxClock)
}

// partnerOffer is the speeds a partner's base page (ANLPAR) and 1000BASE-T
// status offer (full duplex only at 1000: gigabitHalfWhy).
func partnerOffer(lpa, s1000 uint16) speedSet {
	var offer speedSet
	if lpa&(an10HD|an10FD) != 0 {
		offer |= speed10
	}
	if lpa&(an100HD|an100FD) != 0 {
		offer |= speed100
	}
	if s1000&stat1000FD != 0 {
		offer |= speed1000
	}
	return offer
}

// fastest is the set's fastest speed in Mb/s (0 for none).
func (s speedSet) fastest() int {
	for _, m := range []int{1000, 100, 10} {
		if s.has(m) {
			return m
		}
	}
	return 0
}

// txClockCounters are Stats' TX clock counters, on ports that check it.
func (p *Port) txClockCounters(out []nic.Counter) []nic.Counter {
	if p.txc.dev == nil {
		return out
	}
	p.ctl.Lock()
	defer p.ctl.Unlock()
	return append(out,
		nic.Counter{Name: "link_refused_tx_clock", Value: p.txc.refusals},
		nic.Counter{Name: "tx_clock_retunes", Value: p.txc.retunes})
}

// TxClock reports the EQOS TX clock as the port knows it: its name, rate,
// the speeds advertised for it and the refusal in force (nil when none).
// name is "" when the port does not check the clock.
func (p *Port) TxClock() (name string, hz uint64, speeds string, refused error) {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	t := &p.txc
	if t.dev == nil {
		return "", 0, "", nil
	}
	return t.name, t.hz, t.allowed.String(), t.refused
}

// txClockNote says what Open did to the TX clock ("" when nothing).
// Caller holds ctl.
func (p *Port) txClockNote() string {
	t := &p.txc
	if t.retunes == 0 {
		return ""
	}
	return fmt.Sprintf("set the EQOS TX clock %q (%s) to %d Hz for the link, as dwmac-imx does (this kernel's clk_rate is writable)", txClockCon, t.name, t.hz)
}

// txParked reports whether the transmitter must stay off. Caller holds ctl.
func (p *Port) txParked() bool { return p.txc.parked }

// txClockProblem is the refusal in force, for LinkProblem and WaitLink.
// Caller holds ctl.
func (p *Port) txClockProblem() error { return p.txc.refused }
