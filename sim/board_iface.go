package sim

import "fmt"

// SetInterface brings the kernel's network interface on unit up or down
// (ip link set up/down) while fec or imx-dwmac is bound, with what the
// driver's open and close do to the SoC:
//
//   - fec: fec_enet_open resumes the node (fec_runtime_resume: ipg, ahb),
//     fec_enet_clk_enable turns enet_out, ptp and enet_clk_ref on, and
//     phylib takes the PHY out of reset; fec_enet_close undoes the three
//     (phy_detach asserts the reset again) and the node runtime-suspends.
//   - imx-dwmac: stmmac_open resumes the node (stmmaceth, pclk and, through
//     imx_dwmac_clks_config, tx) and enables ptp_ref (stmmac_init_ptp);
//     stmmac_release disables ptp_ref and the node suspends.
//
// The driver keeps the range claimed either way.
func (b *Board) SetInterface(unit string, up bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	var cons []string
	switch m.driver {
	case DriverFEC:
		cons = []string{"ipg", "ahb", "enet_out", "ptp", "enet_clk_ref"}
	case DriverIMXDwmac:
		cons = []string{"stmmaceth", "pclk", "tx", "ptp_ref"}
	default:
		return fmt.Errorf("%w: %s has no kernel network driver bound (%q)", ErrBoard, unit, m.driver)
	}
	if m.control == "on" && !up {
		// power/control on keeps the node resumed: only the open-time
		// clocks go.
		cons = cons[len(m.info.Gates):]
		if m.driver == DriverIMXDwmac {
			cons = cons[1:] // tx stays with the resumed node
		}
	}
	b.setClocksLocked(m, up, cons...)
	m.active = up || m.control == "on"
	m.resetOn = !up
	return nil
}
