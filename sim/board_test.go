package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readTree reads a rendered file ("" when absent).
func readTree(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// driverLink is readlink of the device's driver symlink, as a preflight reads
// it ("" when unbound).
func driverLink(t *testing.T, root, unit string) string {
	t.Helper()
	l, err := os.Readlink(filepath.Join(root, "sys/bus/platform/devices", unit, "driver"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(t, err)
	return filepath.Base(l)
}

// TestBoardWalkIMX8MPFEC walks the i.MX8MP's FEC from a stock boot (fec
// bound, interface down) to the hand-over, rendering the tree at each step
// and checking what a preflight reads and what a register access meets.
func TestBoardWalkIMX8MPFEC(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	fec, ok := b.MAC(FEC)
	require.True(t, ok)
	u := fec.Unit
	require.Equal(t, "30be0000.ethernet", u)
	root := t.TempDir()
	render := func() { require.NoError(t, b.Render(root)) }
	count := func(clk string) string {
		return strings.TrimSpace(readTree(t, root, "sys/kernel/debug/clk/"+clk+"/clk_enable_count"))
	}
	dev := "sys/bus/platform/devices/" + u

	// 1. Boot: fec bound, interface down.
	render()
	require.Equal(t, "fec", driverLink(t, root, u))
	require.Contains(t, readTree(t, root, "proc/iomem"), "30be0000-30beffff : 30be0000.ethernet\n")
	require.Equal(t, "suspended\n", readTree(t, root, dev+"/power/runtime_status"))
	require.Equal(t, "auto\n", readTree(t, root, dev+"/power/control"))
	for _, c := range []string{"enet1_root_clk", "sim_enet_root_clk", "enet_timer", "enet_ref", "enet_phy_ref"} {
		require.Equal(t, "0", count(c), c)
	}
	require.Contains(t, readTree(t, root, "sys/kernel/debug/gpio"), " gpio-98  (                    |PHY reset           ) out lo ACTIVE LOW\n")
	require.Equal(t, "[none] integrity confidentiality\n", readTree(t, root, "sys/kernel/security/lockdown"))
	err = b.Access(u)
	require.ErrorIs(t, err, ErrBusError)
	require.Contains(t, err.Error(), "IO_STRICT_DEVMEM")
	require.ErrorIs(t, b.Remap(u), ErrBusError, "strict /dev/mem refuses a claimed range")
	require.Error(t, b.SetPHYReset(u, false), "the kernel holds the PHY's reset line")

	// 2. rmmod fec: no driver, no claim, clocks gated, the PHY left in reset.
	require.NoError(t, b.Unbind(u))
	render()
	require.Equal(t, "", driverLink(t, root, u))
	require.NotContains(t, readTree(t, root, "proc/iomem"), "30be0000.ethernet")
	require.Equal(t, "unsupported\n", readTree(t, root, dev+"/power/runtime_status"))
	require.NotContains(t, readTree(t, root, "sys/kernel/debug/gpio"), "gpio-98 ", "a line nobody holds is not listed")
	require.True(t, b.PHYInReset(u))
	require.NoError(t, b.Remap(u), "nothing claims the range: /dev/mem maps it")
	err = b.Access(u)
	require.ErrorIs(t, err, ErrBusError)
	require.Contains(t, err.Error(), "real hardware hangs here")
	require.Contains(t, err.Error(), "enet1_root_clk")

	// 3. The DTB's compatible edited to simple-pm-bus, rebooted: bound,
	// nothing claimed, still suspended (clocks off).
	require.NoError(t, b.Bind(u, DriverSimplePMBus))
	render()
	require.Equal(t, "simple-pm-bus", driverLink(t, root, u))
	require.Equal(t, "simple-pm-bus\x00", readTree(t, root, dev+"/of_node/compatible"))
	require.Equal(t, "suspended\n", readTree(t, root, dev+"/power/runtime_status"))
	require.ErrorIs(t, b.Access(u), ErrBusError)

	// 4. power/control on: all five clocks on.
	require.NoError(t, b.SetControl(u, "on"))
	render()
	require.Equal(t, "active\n", readTree(t, root, dev+"/power/runtime_status"))
	for _, c := range []string{"enet1_root_clk", "sim_enet_root_clk", "enet_timer", "enet_ref", "enet_phy_ref"} {
		require.Equal(t, "1", count(c), c)
	}
	require.NoError(t, b.Access(u))
	require.True(t, b.PHYInReset(u), "the PHY is still in reset")

	// 5. The PHY released and held by the user-space process.
	require.NoError(t, b.SetPHYReset(u, false))
	render()
	require.Contains(t, readTree(t, root, "sys/kernel/debug/gpio"), " gpio-98  (                    |xnic                ) out hi ACTIVE LOW\n")
	require.False(t, b.PHYInReset(u))

	// 6. Loading fec again claims the range and revokes the mapping.
	require.NoError(t, b.Unbind(u))
	require.NoError(t, b.Bind(u, DriverFEC))
	err = b.Access(u)
	require.ErrorIs(t, err, ErrBusError)
	b.SetStrictDevmem(false) // iomem=relaxed
	render()
	require.Contains(t, readTree(t, root, "proc/cmdline"), "iomem=relaxed")
	require.ErrorContains(t, b.Access(u), "revoked")
	require.NoError(t, b.Remap(u))
	require.ErrorContains(t, b.Access(u), "hangs", "mapped again, but fec's runtime suspend gated the clocks")
}

// TestBoardEQOSClocks: the EQOS's stmmaceth (enet_qos_root_clk) hangs from
// sim_enet_root_clk, the FEC's ahb: enabling it counts on its parent too,
// and the EQOS's register access needs stmmaceth and pclk. imx-dwmac's
// remove leaves "tx" enabled.
func TestBoardEQOSClocks(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	eq, _ := b.MAC(EQOS)
	require.Equal(t, 0, b.ClockEnableCount("enet_qos"), "a runtime-suspended imx-dwmac has tx off")
	require.NoError(t, b.SetControl(eq.Unit, "on"))
	require.Equal(t, 1, b.ClockEnableCount("enet_qos"), "runtime resume enables tx (imx_dwmac_clks_config)")
	require.Equal(t, 1, b.ClockEnableCount("enet_qos_root_clk"))
	require.NoError(t, b.SetControl(eq.Unit, "auto"))
	require.NoError(t, b.HandOver(eq.Unit))
	require.NoError(t, b.Access(eq.Unit))
	require.Equal(t, 1, b.ClockEnableCount("enet_qos_root_clk"))
	require.Equal(t, 1, b.ClockEnableCount("sim_enet_root_clk"), "the parent counts its child's enable")
	require.Equal(t, 2, b.ClockEnableCount("enet_qos"), "imx-dwmac's leak plus simple-pm-bus's")
	require.Equal(t, uint64(125_000_000), b.ClockRate("enet_qos"))
	require.NoError(t, b.SetControl(eq.Unit, "auto"))
	err = b.Access(eq.Unit)
	require.ErrorContains(t, err, "stmmaceth")
	require.ErrorContains(t, err, "pclk")
	// The FEC's ahb on keeps sim_enet_root_clk up, not the EQOS's own gate.
	fec, _ := b.MAC(FEC)
	require.NoError(t, b.HandOver(fec.Unit))
	require.ErrorIs(t, b.Access(eq.Unit), ErrBusError)
}

func TestBoardIMX8MMSharedGate(t *testing.T) {
	b, err := NewBoard(IMX8MM)
	require.NoError(t, err)
	require.Len(t, b.MACs(), 1)
	fec := b.MACs()[0]
	require.NoError(t, b.HandOver(fec.Unit))
	require.Equal(t, 2, b.ClockEnableCount("enet1_root_clk"), "ipg and ahb are the same clock")
	root := t.TempDir()
	require.NoError(t, b.Render(root))
	require.Equal(t, "2\n", readTree(t, root, "sys/kernel/debug/clk/enet1_root_clk/clk_enable_count"))
	require.Equal(t, "1\n", readTree(t, root, "sys/kernel/debug/clk/enet_phy/clk_enable_count"))
	require.Contains(t, readTree(t, root, "sys/kernel/debug/gpio"), "gpio-118 ")
}

func TestBoardRefusals(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	require.ErrorIs(t, b.Render("/"), ErrBoard)
	require.ErrorIs(t, b.Render(""), ErrBoard)
	require.ErrorIs(t, b.Bind("30be0000.ethernet", DriverSimplePMBus), ErrBoard, "fec is bound")
	require.ErrorIs(t, b.Bind("nosuch", DriverFEC), ErrBoard)
	require.NoError(t, b.Unbind("30bf0000.ethernet"))
	require.ErrorIs(t, b.Bind("30bf0000.ethernet", DriverFEC), ErrBoard, "fec does not drive the EQOS")
	require.ErrorIs(t, b.Unbind("30bf0000.ethernet"), ErrBoard, "nothing bound")
	require.ErrorIs(t, b.SetControl("30be0000.ethernet", "off"), ErrBoard)
	require.ErrorIs(t, b.SetLockdown("strict"), ErrBoard)
	require.NoError(t, b.HandOver("30be0000.ethernet"))
	require.NoError(t, b.SetLockdown("integrity"))
	require.ErrorContains(t, b.Access("30be0000.ethernet"), "lockdown")
	_, err = NewBoard(SoC(9))
	require.ErrorIs(t, err, ErrBoard)
}

func TestKernelLeftNames(t *testing.T) {
	require.Equal(t, "reset", KernelLeft(0).String())
	require.Equal(t, "phy-power-down+serdes-down", (LeftPHYPowerDown | LeftSerDesDown).String())
	require.Equal(t, []KernelLeft{LeftPHYPowerDown, LeftDrvLoadClear}, (LeftPHYPowerDown | LeftDrvLoadClear).Each())
	require.ErrorIs(t, CheckLeft("m", LeftSerDesDown, LeftPHYPowerDown), ErrBoard)
	require.NoError(t, CheckLeft("m", LeftPHYPowerDown, LeftPHYPowerDown|LeftIRQsMasked))
}

// TestBoardGPIOChardev: the PHY reset line as the GPIO character device
// shows it: busy while fec holds it; after rmmod a process requests it,
// releases the PHY, and the line keeps its value when the request closes.
func TestBoardGPIOChardev(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	fec, _ := b.MAC(FEC)
	chip, err := b.GPIOChip(fec.PHYReset.Chip)
	require.NoError(t, err)
	require.Equal(t, "30230000.gpio", chip.Label())
	_, err = chip.RequestOutput(fec.PHYReset.Offset, "xnic", false)
	require.ErrorIs(t, err, ErrLineBusy, "the kernel's fec holds the line")
	require.NoError(t, b.Unbind(fec.Unit))
	req, err := chip.RequestOutput(fec.PHYReset.Offset, "xnic", true)
	require.NoError(t, err)
	require.True(t, b.PHYInReset(fec.Unit))
	_, err = chip.RequestOutput(fec.PHYReset.Offset, "other", true)
	require.ErrorIs(t, err, ErrLineBusy, "one holder at a time")
	require.NoError(t, req.Set(false))
	require.False(t, b.PHYInReset(fec.Unit))
	root := t.TempDir()
	require.NoError(t, b.Render(root))
	require.Contains(t, readTree(t, root, "sys/kernel/debug/gpio"), "|xnic                ) out hi ACTIVE LOW")
	require.NoError(t, req.Close())
	require.False(t, b.PHYInReset(fec.Unit), "a released line keeps its value")
	require.Error(t, req.Set(true))
	_, err = b.GPIOChip(7)
	require.ErrorIs(t, err, ErrBoard)
}

// TestBoardPHYSupply: a board whose FEC PHY has a phy-supply: fec's remove
// disables it, simple-pm-bus never enables it, so the handed-over PHY is
// unpowered until the devicetree keeps the regulator on.
func TestBoardPHYSupply(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	fec, _ := b.MAC(FEC)
	eq, _ := b.MAC(EQOS)
	require.ErrorIs(t, b.SetPHYSupply(eq.Unit, "eqos-phy"), ErrBoard)
	require.ErrorIs(t, b.SetPHYSupplyAlwaysOn(fec.Unit, true), ErrBoard, "no supply declared yet")
	require.NoError(t, b.SetPHYSupply(fec.Unit, "VDD_PHY"))
	root := t.TempDir()
	require.NoError(t, b.Render(root))
	require.Equal(t, "VDD_PHY\n", readTree(t, root, "sys/class/regulator/regulator.1/name"))
	require.Equal(t, "enabled\n", readTree(t, root, "sys/class/regulator/regulator.1/state"))
	require.Equal(t, "1\n", readTree(t, root, "sys/class/regulator/regulator.1/num_users"))
	require.NoError(t, b.HandOver(fec.Unit))
	require.NoError(t, b.Render(root))
	require.Equal(t, "disabled\n", readTree(t, root, "sys/class/regulator/regulator.1/state"))
	require.Equal(t, "0\n", readTree(t, root, "sys/class/regulator/regulator.1/num_users"))
	require.False(t, b.PHYInReset(fec.Unit))
	require.False(t, b.PHYOperating(fec.Unit), "out of reset but unpowered")
	require.NoError(t, b.SetPHYSupplyAlwaysOn(fec.Unit, true))
	require.True(t, b.PHYOperating(fec.Unit))
}

// TestBoardInterfaceUpDown: a bound fec with its interface up has all five
// clocks on and the PHY out of reset, and still claims the range (a
// mapping is refused); down again, everything is off and the PHY in reset.
func TestBoardInterfaceUpDown(t *testing.T) {
	b, err := NewBoard(IMX8MP)
	require.NoError(t, err)
	fec, _ := b.MAC(FEC)
	eq, _ := b.MAC(EQOS)
	require.NoError(t, b.SetInterface(fec.Unit, true))
	for _, c := range fec.Clocks {
		require.Equal(t, 1, b.ClockEnableCount(c.Name), c.Name)
	}
	require.False(t, b.PHYInReset(fec.Unit))
	require.ErrorContains(t, b.Access(fec.Unit), "IO_STRICT_DEVMEM", "up or down, fec claims the range")
	root := t.TempDir()
	require.NoError(t, b.Render(root))
	require.Equal(t, "active\n", readTree(t, root, "sys/bus/platform/devices/"+fec.Unit+"/power/runtime_status"))
	require.Contains(t, readTree(t, root, "sys/kernel/debug/gpio"), "|PHY reset           ) out hi ACTIVE LOW")
	require.NoError(t, b.SetInterface(fec.Unit, false))
	for _, c := range fec.Clocks {
		require.Equal(t, 0, b.ClockEnableCount(c.Name), c.Name)
	}
	require.True(t, b.PHYInReset(fec.Unit))

	require.NoError(t, b.SetInterface(eq.Unit, true))
	require.Equal(t, 1, b.ClockEnableCount("enet_qos_timer"))
	require.Equal(t, 1, b.ClockEnableCount("enet_qos"))
	require.NoError(t, b.SetControl(eq.Unit, "on"))
	require.NoError(t, b.SetInterface(eq.Unit, false))
	require.Equal(t, 0, b.ClockEnableCount("enet_qos_timer"))
	require.Equal(t, 1, b.ClockEnableCount("enet_qos_root_clk"), "power/control on keeps the node resumed")
	require.NoError(t, b.Unbind(fec.Unit))
	require.ErrorIs(t, b.SetInterface(fec.Unit, true), ErrBoard)
}
