package dwmacsim

import (
	"fmt"
	"strings"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// boardDevice is the i.MX8MP model's Device on a sim.Board: the platform
// device, plus what a user-space driver can learn of the SoC around it, as
// the CLI's platform device tells it from the preflight (the node's
// phy-mode, a clock's rate from debugfs clk_rate and, on a kernel that
// makes clk_rate writable, setting it). It implements dwmac's
// PlatformClocks without naming it.
type boardDevice struct {
	*sim.PlatformDevice
	m *Model
}

// socDevice wraps the platform device when the model has a board.
func (m *Model) socDevice(d *sim.PlatformDevice) nic.Device {
	if m.cfg.Board == nil {
		return d
	}
	return &boardDevice{PlatformDevice: d, m: m}
}

// PHYMode is the node's phy-mode.
func (d *boardDevice) PHYMode() string { return d.m.cfg.Board.PHYMode(d.m.cfg.Unit) }

// ClockRate reads the node's clock con (its clock-names entry) as debugfs
// shows it.
func (d *boardDevice) ClockRate(con string) (string, uint64, bool, error) {
	b := d.m.cfg.Board
	name, ok := b.ClockOf(d.m.cfg.Unit, con)
	if !ok {
		return "", 0, false, fmt.Errorf("dwmacsim: %s has no clock %q: %w", d.m.cfg.Unit, con, ErrConfig)
	}
	return name, b.ClockRate(name), b.RateWritable(), nil
}

// SetClockRate writes the clock's debugfs clk_rate; refused on a kernel
// whose clk_rate is read-only, with the devicetree edit that sets the rate
// at boot (imx8mp.dtsi's assigned-clocks: ENET_AXI, ENET_QOS_TIMER,
// ENET_QOS, with rates 0, 100 MHz, 125 MHz).
func (d *boardDevice) SetClockRate(con string, hz uint64) error {
	b := d.m.cfg.Board
	name, ok := b.ClockOf(d.m.cfg.Unit, con)
	if !ok {
		return fmt.Errorf("dwmacsim: %s has no clock %q: %w", d.m.cfg.Unit, con, ErrConfig)
	}
	if err := b.WriteClockRate(name, hz); err != nil {
		mi, _ := b.MAC(sim.EQOS)
		return fmt.Errorf("%w; set it at boot: fdtput -t u32 BOARD.dtb %s assigned-clock-rates 0 100000000 %d (then reboot), or run a kernel built with CLOCK_ALLOW_WRITE_DEBUGFS", err, mi.Node, hz)
	}
	return nil
}

// txClockWantLocked is the rate the EQOS's "tx" clock must run at for a
// frame sent at the PHY's speed, by the node's interface mode: RGMII's
// table (nic.RGMIITxClockHz); none on RMII and MII, whose clocks do not
// follow the speed (dwmac-imx.c imx_dwmac_fix_speed returns early), which
// carry at most 100 Mb/s. ok is false when no frame can leave at that speed
// (why says so).
func (m *Model) txClockWantLocked(mbps int) (hz uint64, ok bool, why string) {
	mode := m.cfg.Board.PHYMode(m.cfg.Unit)
	if mode == "rmii" || mode == "mii" {
		if mbps > 100 {
			return 0, false, fmt.Sprintf("a frame sent at %d Mb/s on %s, which carries at most 100 Mb/s", mbps, strings.ToUpper(mode))
		}
		return 0, true, ""
	}
	hz, _ = nic.RGMIITxClockHz(mbps)
	return hz, true, ""
}
