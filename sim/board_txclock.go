package sim

import (
	"encoding/binary"
	"fmt"
	"os"
)

// The EQOS's interface mode and the rate of its "tx" clock as user space
// meets them.
//
// phy-mode: imx8mp-evk.dts gives both MACs "rgmii-id"; a board with an RMII
// PHY says "rmii" (SetPHYMode). Render writes it into the node, where the
// preflight reads it.
//
// clk_rate: drivers/clk/clk.c creates each clock's debugfs clk_rate with
// mode 0444 and no write handler, unless the kernel source was edited to
// define CLOCK_ALLOW_WRITE_DEBUGFS (clk.c #undefs it: there is no Kconfig
// option); then the file is 0644 and a write calls clk_set_rate. A write to
// the read-only file fails with EACCES (debugfs's simple_attr_write without a
// set handler), even for root. SetRateWritable models the edited kernel;
// WriteClockRate is the write.

// evkPHYMode is imx8mp-evk.dts's phy-mode for the FEC and the EQOS.
const evkPHYMode = "rgmii-id"

// enetQOSParentHz is the parent imx8mp.dtsi assigns to IMX8MP_CLK_ENET_QOS
// (IMX8MP_SYS_PLL2_125M); the clock is an imx8m composite with a 3-bit
// pre-divider and a 6-bit post-divider (clk-composite-8m.c), so it runs at
// 125 MHz divided by 1 to 512.
const (
	enetQOSParentHz = 125_000_000
	enetQOSMaxDiv   = 8 * 64
)

// SetRateWritable says whether the kernel lets user space write clk_rate
// (built with CLOCK_ALLOW_WRITE_DEBUGFS). NewBoard's kernel does not.
func (b *Board) SetRateWritable(on bool) {
	b.mu.Lock()
	b.rateWritable = on
	b.mu.Unlock()
}

// RateWritable reports whether clk_rate is writable.
func (b *Board) RateWritable() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rateWritable
}

// rateModeLocked is clk_rate's file mode.
func (b *Board) rateModeLocked() os.FileMode {
	if b.rateWritable {
		return 0o644
	}
	return 0o444
}

// WriteClockRate is a write of hz to the clock's debugfs clk_rate: refused
// (wrapping ErrBoard) on a kernel whose clk_rate is read-only; otherwise
// clk_set_rate, which for enet_qos picks the closest rate its dividers make
// at or below hz (clk-divider.c without CLK_DIVIDER_ROUND_CLOSEST).
func (b *Board) WriteClockRate(name string, hz uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.clocks[name]
	if !ok {
		return fmt.Errorf("%w: %s has no clock %q", ErrBoard, b.soc, name)
	}
	if !b.rateWritable {
		return fmt.Errorf("%w: write %d to /sys/kernel/debug/clk/%s/clk_rate: permission denied (clk_rate is read-only: the kernel was built without CLOCK_ALLOW_WRITE_DEBUGFS)", ErrBoard, hz, name)
	}
	if name == "enet_qos" && hz > 0 {
		div := (enetQOSParentHz + hz - 1) / hz
		div = min(max(div, 1), enetQOSMaxDiv)
		hz = enetQOSParentHz / div
	}
	c.rate = hz
	return nil
}

// SetPHYMode sets the node's phy-mode ("rgmii-id", "rmii", ...), as a
// board's devicetree does.
func (b *Board) SetPHYMode(unit, mode string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if mode == "" {
		return fmt.Errorf("%w: %s: an empty phy-mode", ErrBoard, unit)
	}
	m.phyMode = mode
	return nil
}

// PHYMode is the node's phy-mode ("" for a unit the board does not have).
func (b *Board) PHYMode(unit string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return ""
	}
	return m.phyMode
}

// ClockOf is the clock-framework name of unit's clock-names entry con
// ("tx" of the EQOS: "enet_qos"); ok is false when the node has no such
// entry.
func (b *Board) ClockOf(unit, con string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return "", false
	}
	n := m.clockName(con)
	return n, n != ""
}

// imx8mp.dtsi's clock assignments of the EQOS node: IMX8MP_CLK_ENET_AXI
// (94), IMX8MP_CLK_ENET_QOS_TIMER (130) and IMX8MP_CLK_ENET_QOS (129) of the
// CCM (dt-bindings/clock/imx8mp-clock.h; the CCM's phandle is the board's
// own, 2 here), at 0 (unchanged), 100 MHz and 125 MHz.
var (
	eqosAssignedClocks = []uint32{ccmPhandle, 94, ccmPhandle, 130, ccmPhandle, 129}
	eqosAssignedRates  = []uint32{0, 100_000_000, 125_000_000}
)

const ccmPhandle = 2

// cells is a devicetree property of big-endian 32-bit cells.
func cells(v ...uint32) string {
	b := make([]byte, 4*len(v))
	for i, c := range v {
		binary.BigEndian.PutUint32(b[4*i:], c)
	}
	return string(b)
}
