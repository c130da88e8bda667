package igbsim

import (
	"strings"

	"github.com/xnic-dev/xnic/sim"
)

// The device as Linux's igb leaves it (Config.Left). The kernel's close path
// (igb_close -> __igb_close -> igb_down -> igb_reset) resets the MAC
// (e1000_reset_hw_82575: CTRL.RST), so the registers are at their reset
// values, and then, the interface not running, igb_power_down_link powers
// the PHY down (igb_power_down_phy_copper, e1000_phy.c: MII_CR_POWER_DOWN);
// remove adds igb_release_hw_control (CTRL_EXT.DRV_LOAD cleared).
//
// vfio-pci then: its probe leaves an idle device to runtime PM, which puts it
// in D3hot (vfio_pci_core_register_device, unless disable_idle_d3); its open
// (vfio_pci_core_enable) resumes it to D0, clears bus mastering,
// pci_enable_device, and tries a function reset (pci_try_reset_function:
// FLR where the function has it; reset_works records whether it did); its
// close resets it again and lets it drop back to D3hot. The function reset
// resets the MAC's registers as CTRL.RST does; the model takes the PHY's
// BMCR, a register of the PHY, as surviving it (Model.Reset keeps the PHY),
// so the power-down bit is still set when a user-space driver starts. (The
// 82576's reset table, which would settle whether its FLR reaches the
// internal PHY, was not at hand: a driver that clears the bit is right
// either way.)
//
// leftStates are the states the model has: LeftPHYPowerDown; LeftIRQsMasked
// (IMS, EIMS, EIAC, EIAM and GPIE cleared, as igb_irq_disable leaves them);
// LeftStaleRings (every queue's base and length registers hold a freed
// ring's address, sim.StaleRingBase + 64 KiB per queue, with head and tail
// in the middle: a queue enabled without reprogramming them fetches from
// memory that is gone); LeftDrvLoadClear; and on the SerDes ports
// LeftSerDesDown, the SerDes as igb_power_down_link leaves a fiber port:
// igb_shutdown_serdes_link_82575 (e1000_82575.c) clears PCS_CFG0.PCS_EN and
// sets CTRL_EXT.SDP3_DATA, which shuts the optical module's laser (unless
// manageability pass-through is on, which the model's MANC never has). Both
// outlive the function reset as the PHY's BMCR does (pcs.go), so the port
// carries nothing until a driver powers it up as
// igb_power_up_serdes_link_82575 does.
const leftStates = sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings | sim.LeftDrvLoadClear | sim.LeftSerDesDown

// applyLeftLocked puts the device in the kernel-left states of cfg.Left,
// after the power-on reset.
func (m *Model) applyLeftLocked() {
	left := m.cfg.Left
	if left.Has(sim.LeftPHYPowerDown) {
		m.phy.Write(sim.MIIBMCR, m.phy.Read(sim.MIIBMCR)|sim.BMCRPowerDown)
	}
	if left.Has(sim.LeftIRQsMasked) {
		m.ims, m.eims, m.eiac, m.eiam, m.gpie = 0, 0, 0, 0, 0
	}
	if left.Has(sim.LeftStaleRings) {
		for i := range m.rx {
			base := uint32(sim.StaleRingBase) + uint32(i)<<16
			m.rx[i].bal, m.rx[i].bah, m.rx[i].len = base, 0, 4096
			m.rx[i].baSet, m.rx[i].lenSet = true, true
			m.rx[i].head, m.rx[i].tail = 17, 16
		}
		for i := range m.tx {
			base := uint32(sim.StaleRingBase) + uint32(i)<<16 + 0x8000
			m.tx[i].bal, m.tx[i].bah, m.tx[i].len = base, 0, 4096
			m.tx[i].baSet, m.tx[i].lenSet = true, true
			m.tx[i].head, m.tx[i].tail = 5, 5
		}
	}
	if left.Has(sim.LeftDrvLoadClear) {
		m.ctrlExt &^= ctrlExtDrvLoad
	}
	if left.Has(sim.LeftSerDesDown) {
		m.pcs.cfg0 &^= pcsCfgEn
		m.ctrlExt |= ctrlExtSDP3Data
		m.pcsUpdateLocked(false)
	}
}

// CTRL_EXT fields (82576 datasheet 8.2.3; Linux e1000_defines.h).
const (
	ctrlExtDrvLoad       uint32 = 1 << 28 // E1000_CTRL_EXT_DRV_LOAD
	ctrlExtLinkModeSGMII uint32 = 2 << 22 // E1000_CTRL_EXT_LINK_MODE_SGMII
	ctrlExtLinkModeSerD  uint32 = 3 << 22 // E1000_CTRL_EXT_LINK_MODE_PCIE_SERDES
)

// ctrlExtReset is CTRL_EXT after reset: the NVM's initialization control
// words set LINK_MODE (bits 23:22) for the port's media, which Linux's
// igb_get_invariants_82575 reads to pick copper, SGMII or SerDes. The fiber,
// SerDes and backplane parts come up in SerDes mode, the SGMII parts in
// SGMII mode, the copper parts with the internal PHY (0).
func (d devInfo) ctrlExtReset() uint32 {
	switch {
	case strings.Contains(d.name, "fiber"), strings.Contains(d.name, "serdes"):
		return ctrlExtLinkModeSerD
	case strings.Contains(d.name, "SGMII"):
		return ctrlExtLinkModeSGMII
	}
	return 0
}
