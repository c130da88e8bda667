package sim

import (
	"fmt"
	"strings"
)

// KernelLeft is a set of states a kernel driver leaves a device in when its
// interface closes or the driver is removed: what a user-space driver meets
// instead of a device fresh out of reset. Each model's Config takes one
// (Config.Left) and documents which states it has; New refuses the others.
type KernelLeft uint32

const (
	// LeftPHYPowerDown: the PHY's BMCR power-down bit set. igb_reset calls
	// igb_power_down_link when the interface is not running (igb_main.c;
	// igb_power_down_phy_copper sets MII_CR_POWER_DOWN, e1000_phy.c);
	// phylib's phy_detach -> phy_suspend -> genphy_suspend sets BMCR_PDOWN
	// (phy_device.c) for fec and stmmac.
	LeftPHYPowerDown KernelLeft = 1 << iota
	// LeftPHYInReset: the PHY's reset GPIO asserted (phy_detach and
	// mdiobus_register_device assert it; gpiod_put leaves it so). i.MX only:
	// it lives on the model's Board.
	LeftPHYInReset
	// LeftSerDesDown: the Intel mGbE's SerDes in power state P3 with its PLL
	// clock request and lane reset bits cleared (dwmac-intel.c
	// intel_serdes_powerdown, called from stmmac_release); on igb's fiber and
	// SerDes ports, the PCS disabled and the laser off
	// (igb_shutdown_serdes_link_82575).
	LeftSerDesDown
	// LeftXPCSReset: the Intel mGbE's xPCS at its reset defaults (1000BASE-X,
	// clause-37 autonegotiation off for SGMII): what firmware that does not
	// program it leaves, and what pcs-xpcs.c's soft reset returns to.
	LeftXPCSReset
	// LeftClocksGated: the i.MX MAC's bus clocks off (fec_drv_remove,
	// runtime suspend): on the model's Board.
	LeftClocksGated
	// LeftIRQsMasked: every interrupt source of the device masked, as the
	// kernel's close masks them (igb_irq_disable, fec_stop, stmmac's
	// stmmac_disable_all_queues/DMA interrupt disable).
	LeftIRQsMasked
	// LeftStaleRings: the ring base registers still hold the addresses of the
	// kernel's rings, memory that is freed: a driver that starts DMA without
	// reprogramming them points the device at nothing.
	LeftStaleRings
	// LeftDrvLoadClear: igb's CTRL_EXT.DRV_LOAD clear (igb_release_hw_control
	// on remove): firmware owns the device.
	LeftDrvLoadClear

	leftEnd
)

// Has reports whether every state of x is in k.
func (k KernelLeft) Has(x KernelLeft) bool { return k&x == x }

var leftNames = [...]string{
	"phy-power-down", "phy-in-reset", "serdes-down", "xpcs-reset",
	"clocks-gated", "irqs-masked", "stale-rings", "drv-load-clear",
}

func (k KernelLeft) String() string {
	if k == 0 {
		return "reset"
	}
	var parts []string
	for i, n := range leftNames {
		if k&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if k >= leftEnd {
		parts = append(parts, fmt.Sprintf("0x%x", uint32(k&^(leftEnd-1))))
	}
	return strings.Join(parts, "+")
}

// Each lists the single states of k, in bit order.
func (k KernelLeft) Each() []KernelLeft {
	var out []KernelLeft
	for b := KernelLeft(1); b < leftEnd; b <<= 1 {
		if k&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// CheckLeft returns an error wrapping ErrBoard when k has a state outside
// supported, naming the model.
func CheckLeft(model string, k, supported KernelLeft) error {
	if extra := k &^ supported; extra != 0 {
		return fmt.Errorf("%w: %s cannot start as the kernel left it with %v (it models %v)", ErrBoard, model, extra, supported)
	}
	return nil
}

// StaleRingBase is where a model's stale ring registers point
// (LeftStaleRings): an address no sim.Memory maps, below 4 GiB so that
// 32-bit ring registers hold it too.
const StaleRingBase = 0xdead_0000
