package preflight

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/nic"
)

// The i.MX8M Plus EQOS's TX clock ("tx", enet_qos in the clock framework).
//
// On RGMII it must run at the rate of the link speed (nic.RGMIITxClockHz:
// 125, 25, 2.5 MHz for 1000, 100, 10 Mb/s), which Linux's dwmac-imx.c
// (imx_dwmac_fix_speed) sets at each link change; on RMII and MII it
// returns early, their clocks not following the speed. Under simple-pm-bus
// nothing sets it: it stays at what the devicetree assigns
// (imx8mp.dtsi: assigned-clocks ENET_AXI, ENET_QOS_TIMER, ENET_QOS with
// assigned-clock-rates 0, 100 MHz, 125 MHz, applied by platform_probe's
// of_clk_set_defaults when simple-pm-bus binds the node). User space can
// change it only through debugfs clk_rate, which drivers/clk/clk.c makes
// writable (mode 0644, clk_rate_set) only when the kernel source defines
// CLOCK_ALLOW_WRITE_DEBUGFS; otherwise the file is 0444 and a write fails
// with EACCES. The dwmac driver asks Held (PlatformClocks below) and
// advertises, sets or refuses by the same rule the "tx-clock" check
// reports.

// imx8mpClkENETQOS is IMX8MP_CLK_ENET_QOS in
// include/dt-bindings/clock/imx8mp-clock.h: the clock's specifier in the
// node's assigned-clocks.
const imx8mpClkENETQOS = 129

// txClock is what the tree says about the EQOS TX clock.
type txClock struct {
	debugfs  string // the clock's name ("enet_qos")
	hz       uint64
	err      error // the rate could not be read
	writable bool  // clk_rate is 0644 (CLOCK_ALLOW_WRITE_DEBUGFS)
	mode     string
}

// rgmii reports whether the clock follows the speed (RGMII, or no
// phy-mode: the EVK's RGMII).
func (c txClock) rgmii() bool { return c.mode == "" || strings.HasPrefix(c.mode, "rgmii") }

// phyMode is the node's phy-mode (or phy-connection-type), "" when unknown.
func phyMode(nodeDir string) string {
	if nodeDir == "" {
		return ""
	}
	for _, prop := range []string{"phy-mode", "phy-connection-type"} {
		if m, err := dtStrings(filepath.Join(nodeDir, prop)); err == nil && len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// clockByCon is the debugfs name of the MAC's clock con ("" when none).
func (st *state) clockByCon(con string) string {
	for _, c := range st.mac.Clocks {
		if c.Con == con {
			return c.Debugfs
		}
	}
	return ""
}

// readTxClock reads the EQOS TX clock's rate and clk_rate's mode.
func (p Platform) readTxClock(st *state) txClock {
	c := txClock{debugfs: st.clockByCon("tx"), mode: phyMode(st.nodeDir)}
	if c.debugfs == "" {
		c.err = fmt.Errorf("the %s %s has no tx clock", st.mac.SoC, st.mac.Kind)
		return c
	}
	rel := "sys/kernel/debug/clk/" + c.debugfs + "/clk_rate"
	v, err := p.tree().read(rel)
	if err != nil {
		c.err = err
		return c
	}
	if c.hz, err = strconv.ParseUint(v, 10, 64); err != nil {
		c.err = fmt.Errorf("clk_rate %q: %w", v, err)
		return c
	}
	if fi, err := os.Stat(p.tree().path(rel)); err == nil {
		c.writable = fi.Mode().Perm()&0o200 != 0
	}
	return c
}

// txClockFix is the devicetree edit that runs the TX clock at hz from boot:
// the node's assigned-clock-rates with IMX8MP_CLK_ENET_QOS's entry changed,
// as an fdtput line naming the node and the board's DTB when they are
// known.
func (st *state) txClockFix(hz uint64) string {
	dtb, node := st.dtb, st.dtPath
	if dtb == "" {
		dtb = "BOARD.dtb"
	}
	if node == "" {
		node = "NODE"
	}
	rates, ok := assignedRates(st.nodeDir, hz)
	if !ok {
		return fmt.Sprintf("give the node (%s) IMX8MP_CLK_ENET_QOS in assigned-clocks with %d in assigned-clock-rates, in the DTB your bootloader loads, then reboot", node, hz)
	}
	return fmt.Sprintf("fdtput -t u32 %s %s assigned-clock-rates %s (then reboot)", dtb, node, rates)
}

// assignedRates is the node's assigned-clock-rates with the entry of
// IMX8MP_CLK_ENET_QOS set to hz, as fdtput arguments; ok is false when the
// node does not assign that clock (each assigned-clocks entry being the
// CCM's phandle and one cell: its #clock-cells is 1).
func assignedRates(nodeDir string, hz uint64) (string, bool) {
	if nodeDir == "" {
		return "", false
	}
	clks, err1 := dtCells(filepath.Join(nodeDir, "assigned-clocks"))
	rates, err2 := dtCells(filepath.Join(nodeDir, "assigned-clock-rates"))
	if err1 != nil || err2 != nil || len(clks)%2 != 0 || len(rates) != len(clks)/2 {
		return "", false
	}
	i := -1
	for j := 0; j < len(rates); j++ {
		if clks[2*j+1] == imx8mpClkENETQOS {
			i = j
		}
	}
	if i < 0 {
		return "", false
	}
	out := make([]string, len(rates))
	for j, r := range rates {
		out[j] = strconv.FormatUint(uint64(r), 10)
	}
	out[i] = strconv.FormatUint(hz, 10)
	return strings.Join(out, " "), true
}

// checkTxClock reports the EQOS TX clock against the rule the dwmac driver
// applies (see above).
func (p Platform) checkTxClock(r *Report, st *state) {
	c := p.readTxClock(st)
	switch {
	case !c.rgmii() && c.mode != "rmii" && c.mode != "mii":
		r.add("tx-clock", Fail, fmt.Sprintf("phy-mode %s: the EQOS runs MII, RMII or RGMII (dwmac-imx.c imx8mp_set_intf_mode)", c.mode),
			"set the node's phy-mode to the board's interface in the DTB")
	case !c.rgmii():
		r.add("tx-clock", Pass, fmt.Sprintf("phy-mode %s: the TX clock does not follow the speed (dwmac-imx sets no rate on RMII or MII); the link runs at 10 or 100 Mb/s, which xnic advertises", c.mode), "")
	case c.err != nil:
		r.add("tx-clock", Unknown, fmt.Sprintf("%s rate unreadable: %v", c.debugfs, c.err), "")
	case c.writable:
		r.add("tx-clock", Pass, fmt.Sprintf("%s at %d Hz; clk_rate is writable (CLOCK_ALLOW_WRITE_DEBUGFS): xnic sets 125, 25 or 2.5 MHz for 1000, 100 or 10 Mb/s at each link change, as dwmac-imx does", c.debugfs, c.hz), "")
	default:
		mbps, ok := nic.RGMIISpeedAt(c.hz)
		if !ok {
			r.add("tx-clock", Fail, fmt.Sprintf("%s at %d Hz fits no RGMII speed (125, 25, 2.5 MHz for 1000, 100, 10 Mb/s), and clk_rate is read-only", c.debugfs, c.hz),
				st.txClockFix(125_000_000))
			return
		}
		var other []string
		for _, s := range nic.RGMIISpeeds() {
			if s != mbps {
				hz, _ := nic.RGMIITxClockHz(s)
				other = append(other, fmt.Sprintf("%d Mb/s: %s", s, st.txClockFix(hz)))
			}
		}
		r.add("tx-clock", Pass, fmt.Sprintf("%s at %d Hz serves %d Mb/s only: xnic advertises only that speed and refuses a link at another (clk_rate is read-only: the kernel was built without CLOCK_ALLOW_WRITE_DEBUGFS)", c.debugfs, c.hz, mbps),
			"for "+strings.Join(other, "; for "))
	}
}

// PHYMode is the MAC node's phy-mode, "" when unknown (dwmac's
// PlatformClocks).
func (h *Held) PHYMode() string { return phyMode(h.st.nodeDir) }

// ClockRate reads the MAC node's clock con from debugfs: its name, rate and
// whether clk_rate is writable (dwmac's PlatformClocks).
func (h *Held) ClockRate(con string) (string, uint64, bool, error) {
	if !h.st.known {
		return "", 0, false, fmt.Errorf("preflight: %s is not a MAC xnic knows the clocks of", h.p.name())
	}
	if con != "tx" {
		return "", 0, false, fmt.Errorf("preflight: only the tx clock's rate is read, not %q's", con)
	}
	c := h.p.readTxClock(&h.st)
	return c.debugfs, c.hz, c.writable, c.err
}

// ErrClockReadOnly is wrapped by SetClockRate's refusal on a kernel whose
// clk_rate is read-only.
var ErrClockReadOnly = errors.New("clk_rate is read-only")

// SetClockRate writes the clock's debugfs clk_rate where the kernel allows
// it; otherwise it changes nothing and says how to set the rate at boot
// (dwmac's PlatformClocks).
func (h *Held) SetClockRate(con string, hz uint64) error {
	name, _, writable, err := h.ClockRate(con)
	if err != nil {
		return err
	}
	path := h.p.tree().path("sys/kernel/debug/clk/" + name + "/clk_rate")
	if !writable {
		return fmt.Errorf("%s's %w (the kernel was built without CLOCK_ALLOW_WRITE_DEBUGFS, drivers/clk/clk.c); set the rate at boot: %s, or run a kernel whose clk.c defines CLOCK_ALLOW_WRITE_DEBUGFS",
			name, ErrClockReadOnly, h.st.txClockFix(hz))
	}
	data := []byte(strconv.FormatUint(hz, 10))
	if h.p.Write != nil {
		err = h.p.Write(path, data)
	} else {
		err = os.WriteFile(path, data, 0)
	}
	if err != nil {
		return fmt.Errorf("writing %d to %s: %w; set the rate at boot instead: %s", hz, path, err, h.st.txClockFix(hz))
	}
	return nil
}
