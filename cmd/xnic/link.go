package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// xnic link: ethtool PORT and ethtool -s PORT speed/duplex/autoneg/advertise,
// through the PHY's clause-22 registers (IEEE 802.3 22.2.4, 28.2.4.1.3,
// 40.5.1.1): supported modes from BMSR and ESTATUS, advertised ones in
// ADVERTISE and CTRL1000, the partner's in LPA and STAT1000; forcing writes
// BMCR's speed and duplex with autonegotiation off. After a change the
// command waits for the link and lets the driver follow it (dwmac reprograms
// MAC_Configuration when it sees the new link, fec restarts the MAC in
// AdjustLink as fec_enet_adjust_link does, igb's MAC takes speed and duplex
// from its PHY).

func init() {
	register(&command{name: "link", usage: portUsage + " [speed 10|100|1000] [duplex half|full] [autoneg on|off] [advertise MODES|0xMASK] [--json]",
		summary: "like ethtool / ethtool -s: show or set speed, duplex, autonegotiation and advertised modes through the PHY",
		run:     runLink})
}

// linkMode is one copper mode, with ethtool's ADVERTISED_* bit and its bits
// in ADVERTISE (reg 4) or CTRL1000 (reg 9), and the matching ability bits of
// BMSR or ESTATUS, LPA or STAT1000.
type linkMode struct {
	Name    string
	Ethtool uint32
	Speed   int
	Full    bool
	reg     int    // 4 (ADVERTISE) or 9 (CTRL1000)
	adv     uint16 // bit in reg
	ability uint16 // bit in BMSR (10/100) or ESTATUS (1000)
	partner uint16 // bit in LPA (10/100) or STAT1000 (1000)
}

var linkModes = []linkMode{
	{"10baseT/Half", 1 << 0, 10, false, 4, 1 << 5, 1 << 11, 1 << 5},
	{"10baseT/Full", 1 << 1, 10, true, 4, 1 << 6, 1 << 12, 1 << 6},
	{"100baseT/Half", 1 << 2, 100, false, 4, 1 << 7, 1 << 13, 1 << 7},
	{"100baseT/Full", 1 << 3, 100, true, 4, 1 << 8, 1 << 14, 1 << 8},
	{"1000baseT/Half", 1 << 4, 1000, false, 9, 1 << 8, 1 << 12, 1 << 10},
	{"1000baseT/Full", 1 << 5, 1000, true, 9, 1 << 9, 1 << 13, 1 << 11},
}

// linkSettings is what `xnic link` shows.
type linkSettings struct {
	Port       string   `json:"port"`
	Media      string   `json:"media"` // "twisted pair" (a PHY on MDIO) or "fibre" (a 1000BASE-X PCS), as ethtool's Port line
	Supported  []string `json:"supported"`
	Advertised []string `json:"advertised"`
	Partner    []string `json:"partner,omitempty"`
	Autoneg    bool     `json:"autoneg"`
	Forced     string   `json:"forced,omitempty"` // BMCR's speed and duplex with autoneg off
	Link       linkInfo `json:"link"`
}

// linkRequest is the ethtool -s words given.
type linkRequest struct {
	speed     int    // 0: not given
	duplex    string // "", "half", "full"
	autoneg   string // "", "on", "off"
	advertise []linkMode
	given     bool
}

func parseLinkWords(ws []string) (linkRequest, error) {
	var r linkRequest
	for len(ws) > 0 {
		if len(ws) < 2 {
			return r, usageErrorf("%q wants a value", ws[0])
		}
		k, v := ws[0], ws[1]
		ws = ws[2:]
		r.given = true
		switch k {
		case "speed":
			n, err := strconv.Atoi(v)
			if err != nil || (n != 10 && n != 100 && n != 1000) {
				return r, usageErrorf("speed %q: want 10, 100 or 1000", v)
			}
			r.speed = n
		case "duplex":
			if v != "half" && v != "full" {
				return r, usageErrorf("duplex %q: want half or full", v)
			}
			r.duplex = v
		case "autoneg":
			if v != "on" && v != "off" {
				return r, usageErrorf("autoneg %q: want on or off", v)
			}
			r.autoneg = v
		case "advertise":
			ms, err := parseModes(v)
			if err != nil {
				return r, err
			}
			r.advertise = ms
		default:
			return r, usageErrorf("unknown setting %q: want speed, duplex, autoneg or advertise", k)
		}
	}
	return r, nil
}

// parseModes reads ethtool's advertise mask (0x3f: all six copper modes) or a
// comma list of mode names (100baseT/Full,1000baseT/Full).
func parseModes(s string) ([]linkMode, error) {
	var out []linkMode
	if strings.HasPrefix(s, "0x") {
		mask, err := strconv.ParseUint(s, 0, 32)
		if err != nil || mask == 0 || mask&^0x3F != 0 {
			return nil, usageErrorf("advertise %s: want a mask of ethtool's 10/100/1000BASE-T bits (0x01 to 0x3f)", s)
		}
		for _, m := range linkModes {
			if uint64(m.Ethtool)&mask != 0 {
				out = append(out, m)
			}
		}
		return out, nil
	}
	for _, n := range strings.Split(s, ",") {
		i := slices.IndexFunc(linkModes, func(m linkMode) bool { return strings.EqualFold(m.Name, n) })
		if i < 0 {
			return nil, usageErrorf("advertise: no mode %q (modes: 10baseT/Half, 10baseT/Full, 100baseT/Half, 100baseT/Full, 1000baseT/Half, 1000baseT/Full)", n)
		}
		out = append(out, linkModes[i])
	}
	return out, nil
}

func runLink(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON bool
	fs := newFlags("link", stderr)
	portFlags(fs, &o, false)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	bdf := ""
	if len(pos) > 0 && !isLinkSetting(pos[0]) {
		bdf, pos = pos[0], pos[1:]
	}
	req, err := parseLinkWords(pos)
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok { // a run holds the port: it applies the settings (control.go)
		resp, err := control.Call(path, control.Request{Cmd: control.CmdLink, Args: pos})
		if err != nil {
			return err
		}
		var ls linkSettings
		if err := json.Unmarshal(resp.Result, &ls); err != nil {
			return fmt.Errorf("the run's answer: %w", err)
		}
		return printLink(stdout, ls, asJSON)
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	defer op.Close()
	timeout := o.LinkTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ls, err := linkExec(op, req, timeout)
	if err != nil {
		return err
	}
	return printLink(stdout, ls, asJSON)
}

func printLink(stdout io.Writer, ls linkSettings, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, ls)
	}
	printLinkSettings(stdout, ls)
	return nil
}

// isLinkSetting reports whether w is one of the ethtool -s words (so not a
// PCI address).
func isLinkSetting(w string) bool {
	return w == "speed" || w == "duplex" || w == "autoneg" || w == "advertise"
}

// linkExec applies req (when it sets anything) and returns the settings.
func linkExec(op *openedPort, req linkRequest, timeout time.Duration) (linkSettings, error) {
	if pcs, an := pcsLink(op); pcs {
		return pcsLinkExec(op, req, an)
	}
	pa, ok := op.Port.(nic.PHYAccess)
	if !ok {
		return linkSettings{}, fmt.Errorf("%s: the %s driver gives no access to its PHY: %w", op.Name(), op.Family, nic.ErrNotSupported)
	}
	if req.given {
		if err := linkApply(pa, req); err != nil {
			return linkSettings{}, err
		}
		if err := linkFollow(op, timeout); err != nil {
			return linkSettings{}, err
		}
	}
	return linkRead(op, pa)
}

// linkExecRunning is linkExec on a port a run holds: the driver's own
// follow-up (AdjustLink) is left to the run's link monitor, which parks the
// port's queues around it.
func linkExecRunning(op *openedPort, req linkRequest, timeout time.Duration) (linkSettings, error) {
	if pcs, an := pcsLink(op); pcs {
		return pcsLinkExec(op, req, an)
	}
	pa, ok := op.Port.(nic.PHYAccess)
	if !ok {
		return linkSettings{}, fmt.Errorf("%s: the %s driver gives no access to its PHY: %w", op.Name(), op.Family, nic.ErrNotSupported)
	}
	if req.given {
		if err := linkApply(pa, req); err != nil {
			return linkSettings{}, err
		}
		time.Sleep(10 * time.Millisecond) // as linkFollow: let a link that was up drop first
		if _, err := op.WaitLink(timeout); err != nil {
			return linkSettings{}, err
		}
	}
	return linkRead(op, pa)
}

// pcsLink reports whether the port's link is a 1000BASE-X PCS's
// (nic.PCSLinkReporter) and whether that PCS negotiates.
func pcsLink(op *openedPort) (pcs, autoneg bool) {
	if r, ok := op.Port.(nic.PCSLinkReporter); ok {
		return r.PCSLink()
	}
	return false, false
}

// pcsLinkExec is xnic link on a SerDes port: 1000BASE-X runs at 1000 Mb/s
// full duplex only (IEEE 802.3 clause 36), so a request for anything else is
// refused before any register is written, as Linux's igb refuses it
// (igb_set_link_ksettings on internal SerDes). Whether the PCS negotiates is
// the driver's choice at open (the NVM's, on 82576 boards), not a setting.
func pcsLinkExec(op *openedPort, req linkRequest, autoneg bool) (linkSettings, error) {
	const mode = "1000baseX/Full"
	if req.speed != 0 && req.speed != 1000 || req.duplex == "half" {
		return linkSettings{}, fmt.Errorf("%s: a 1000BASE-X SerDes port runs at 1000 Mb/s full duplex only (IEEE 802.3 clause 36): %w", op.Name(), nic.ErrLinkMode)
	}
	if req.autoneg != "" && (req.autoneg == "on") != autoneg {
		return linkSettings{}, fmt.Errorf("%s: the PCS's clause-37 autonegotiation is %s, chosen at open from the port's wiring (forced on backplane and where the NVM says so); it is not a setting: %w",
			op.Name(), onOff(autoneg), nic.ErrNotSupported)
	}
	for _, m := range req.advertise {
		if m.Speed != 1000 || !m.Full {
			return linkSettings{}, fmt.Errorf("%s: cannot advertise %s: a 1000BASE-X SerDes port runs %s only: %w", op.Name(), m.Name, mode, nic.ErrLinkMode)
		}
	}
	ls := linkSettings{Port: op.Name(), Media: "fibre", Supported: []string{mode}, Advertised: []string{}, Autoneg: autoneg}
	if autoneg {
		ls.Advertised = append(ls.Advertised, mode)
	} else {
		ls.Forced = "1000/full"
	}
	l := op.Link()
	ls.Link = linkInfo{Up: l.Up, SpeedMbps: l.SpeedMbps, FullDuplex: l.FullDuplex}
	return ls, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// readPHYRegs reads the listed clause-22 registers.
func readPHYRegs(pa nic.PHYAccess, regs ...int) (map[int]uint16, error) {
	out := make(map[int]uint16, len(regs))
	for _, r := range regs {
		v, err := pa.ReadPHY(r)
		if err != nil {
			return nil, err
		}
		out[r] = v
	}
	return out, nil
}

// macRefuses is the MAC's reason for refusing m (nil if it runs it): the
// driver says, through nic.LinkModeChecker.
func macRefuses(port any, m linkMode) error {
	if c, ok := port.(nic.LinkModeChecker); ok {
		return c.CheckLinkMode(m.Speed, m.Full)
	}
	return nil
}

// macModes is sup without the modes the MAC refuses, as ethtool shows the
// PHY's modes masked by the MAC driver's.
func macModes(port any, sup []linkMode) []linkMode {
	return slices.DeleteFunc(sup, func(m linkMode) bool { return macRefuses(port, m) != nil })
}

func supportedModes(r map[int]uint16) []linkMode {
	var out []linkMode
	for _, m := range linkModes {
		switch {
		case m.Speed < 1000 && r[sim.MIIBMSR]&m.ability != 0:
			out = append(out, m)
		case m.Speed == 1000 && r[sim.MIIBMSR]&sim.BMSRExtStatus != 0 && r[sim.MIIESTATUS]&m.ability != 0:
			out = append(out, m)
		}
	}
	return out
}

func linkRead(op *openedPort, pa nic.PHYAccess) (linkSettings, error) {
	r, err := readPHYRegs(pa, sim.MIIBMCR, sim.MIIBMSR, sim.MIIANAR, sim.MIIANLPAR, sim.MIIESTATUS)
	if err != nil {
		return linkSettings{}, err
	}
	sup := macModes(pa, supportedModes(r))
	has1000 := slices.ContainsFunc(sup, func(m linkMode) bool { return m.Speed == 1000 })
	if has1000 {
		r2, err := readPHYRegs(pa, sim.MIICTRL1000, sim.MIISTAT1000)
		if err != nil {
			return linkSettings{}, err
		}
		r[sim.MIICTRL1000], r[sim.MIISTAT1000] = r2[sim.MIICTRL1000], r2[sim.MIISTAT1000]
	}
	ls := linkSettings{Port: op.Name(), Media: "twisted pair", Autoneg: r[sim.MIIBMCR]&sim.BMCRANEnable != 0, Supported: []string{}, Advertised: []string{}}
	for _, m := range sup {
		ls.Supported = append(ls.Supported, m.Name)
		if r[m.reg]&m.adv != 0 {
			ls.Advertised = append(ls.Advertised, m.Name)
		}
		preg := sim.MIIANLPAR
		if m.Speed == 1000 {
			preg = sim.MIISTAT1000
		}
		if ls.Autoneg && r[preg]&m.partner != 0 {
			ls.Partner = append(ls.Partner, m.Name)
		}
	}
	if !ls.Autoneg {
		ls.Forced = bmcrSpeed(r[sim.MIIBMCR]) + "/" + duplexName(r[sim.MIIBMCR]&sim.BMCRFullDplx != 0)
	}
	l := op.Link()
	ls.Link = linkInfo{Up: l.Up, SpeedMbps: l.SpeedMbps, FullDuplex: l.FullDuplex}
	return ls, nil
}

// linkApply writes the PHY registers req asks for, within the modes both
// the PHY and the MAC take (the driver refuses the others with its reason,
// nic.LinkModeChecker), before writing anything.
func linkApply(pa nic.PHYAccess, req linkRequest) error {
	r, err := readPHYRegs(pa, sim.MIIBMCR, sim.MIIBMSR, sim.MIIANAR, sim.MIIESTATUS)
	if err != nil {
		return err
	}
	sup := supportedModes(r)
	bmcr := r[sim.MIIBMCR] &^ (sim.BMCRPowerDown | sim.BMCRIsolate | sim.BMCRANRestart | sim.BMCRReset | sim.BMCRLoopback)
	autoneg := bmcr&sim.BMCRANEnable != 0
	if req.autoneg != "" {
		autoneg = req.autoneg == "on"
	}
	if !autoneg {
		speed, full := req.speed, req.duplex == "full"
		if speed == 0 {
			speed, _ = strconv.Atoi(bmcrSpeed(bmcr))
		}
		if req.duplex == "" {
			full = bmcr&sim.BMCRFullDplx != 0
		}
		if speed == 1000 {
			return usageErrorf("1000BASE-T cannot be forced: it needs autonegotiation (IEEE 802.3 40.5.1); use autoneg on speed 1000")
		}
		if !slices.ContainsFunc(sup, func(m linkMode) bool { return m.Speed == speed && m.Full == full }) {
			return fmt.Errorf("the port does not support %d Mb/s %s duplex (its PHY and MAC support %s)", speed, duplexName(full), modeNames(sup))
		}
		bmcr &^= sim.BMCRANEnable | sim.BMCRSpeed100 | sim.BMCRSpeed1000 | sim.BMCRFullDplx
		if speed == 100 {
			bmcr |= sim.BMCRSpeed100
		}
		if full {
			bmcr |= sim.BMCRFullDplx
		}
		return pa.WritePHY(sim.MIIBMCR, bmcr)
	}
	adv := req.advertise
	if adv == nil {
		var refused error
		for _, m := range sup {
			if (req.speed == 0 || m.Speed == req.speed) && (req.duplex == "" || m.Full == (req.duplex == "full")) {
				if err := macRefuses(pa, m); err != nil {
					refused = err
					continue
				}
				adv = append(adv, m)
			}
		}
		if len(adv) == 0 && refused != nil {
			return refused
		}
	}
	for _, m := range adv {
		if !slices.ContainsFunc(sup, func(s linkMode) bool { return s.Name == m.Name }) {
			return fmt.Errorf("the port does not support %s (its PHY and MAC support %s)", m.Name, modeNames(sup))
		}
		if err := macRefuses(pa, m); err != nil {
			return err
		}
	}
	if len(adv) == 0 {
		return fmt.Errorf("nothing to advertise: the PHY supports %s", modeNames(sup))
	}
	var anar, c1000 uint16
	for _, m := range adv {
		if m.reg == sim.MIIANAR {
			anar |= m.adv
		} else {
			c1000 |= m.adv
		}
	}
	if err := pa.WritePHY(sim.MIIANAR, r[sim.MIIANAR]&^0x01E0|anar); err != nil {
		return err
	}
	if r[sim.MIIBMSR]&sim.BMSRExtStatus != 0 {
		cur, err := pa.ReadPHY(sim.MIICTRL1000)
		if err != nil {
			return err
		}
		if err := pa.WritePHY(sim.MIICTRL1000, cur&^0x0300|c1000); err != nil {
			return err
		}
	}
	return pa.WritePHY(sim.MIIBMCR, bmcr|sim.BMCRANEnable|sim.BMCRANRestart)
}

func modeNames(ms []linkMode) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Name)
	}
	return strings.Join(s, ", ")
}

// linkFollow waits for the link the PHY now brings up and lets the driver
// follow it.
func linkFollow(op *openedPort, timeout time.Duration) error {
	// A link that was up goes down first (renegotiation, or the forced mode
	// taking over); give the PHY a moment to drop it before waiting for up.
	time.Sleep(10 * time.Millisecond)
	if _, err := op.WaitLink(timeout); err != nil {
		return err
	}
	if a, ok := op.Port.(interface {
		AdjustLink() (nic.LinkState, bool, error)
	}); ok {
		if _, _, err := a.AdjustLink(); err != nil {
			return err
		}
	}
	return nil
}

func printLinkSettings(w io.Writer, ls linkSettings) {
	fmt.Fprintf(w, "port:        %s\n", ls.Port)
	fmt.Fprintf(w, "media:       %s\n", ls.Media)
	fmt.Fprintf(w, "supported:   %s\n", strings.Join(ls.Supported, " "))
	fmt.Fprintf(w, "advertised:  %s\n", strings.Join(ls.Advertised, " "))
	if ls.Partner != nil {
		fmt.Fprintf(w, "partner:     %s\n", strings.Join(ls.Partner, " "))
	}
	an := "on"
	if !ls.Autoneg {
		an = "off (forced " + ls.Forced + ")"
	}
	fmt.Fprintf(w, "autoneg:     %s\n", an)
	fmt.Fprintf(w, "link:        %s\n", ls.Link)
}
