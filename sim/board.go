package sim

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// A Board is the SoC around an i.MX8M Ethernet MAC, as Linux leaves it and as
// a user-space driver meets it: which kernel driver is bound to the MAC's
// devicetree node, whether the driver claims the register range
// (/proc/iomem), the node's runtime PM state, the enable count of each of the
// MAC's clocks, the PHY's reset line, and the /dev/mem policy. The fec and
// dwmac models of an i.MX MAC consult it on every register access (Access)
// and MDIO frame (PHYInReset); Render writes the same state as the files
// Linux shows (board_render.go), so a preflight that reads sysfs, debugfs and
// /proc under a root directory and the models see one state.
//
// The transitions are Linux's (6.12; file and function named at each):
// Bind and Unbind run a driver's probe and remove paths as far as the SoC
// sees them, SetControl writes power/control, SetPHYReset drives the reset
// line as the GPIO character device does (GPIOChip is that device:
// board_gpio.go), SetPHYSupply gives the FEC's PHY a regulator that fec's
// remove switches off (board_supply.go). Safe for concurrent use.
type Board struct {
	soc SoC // immutable

	mu       sync.Mutex
	macs     []*boardMAC            // guarded by mu (the slice is immutable)
	clocks   map[string]*boardClock // guarded by mu (the map is immutable)
	lockdown string                 // "none", "integrity", "confidentiality"
	strict   bool                   // CONFIG_IO_STRICT_DEVMEM without iomem=relaxed
	// rateWritable: the kernel was built with CLOCK_ALLOW_WRITE_DEBUGFS
	// (board_txclock.go); guarded by mu.
	rateWritable bool
}

// SoC is an i.MX8M part.
type SoC uint8

const (
	// IMX8MP is the i.MX8M Plus: FEC at 30be0000, EQOS at 30bf0000.
	IMX8MP SoC = iota
	// IMX8MM is the i.MX8M Mini: FEC at 30be0000.
	IMX8MM
	// IMX8MN is the i.MX8M Nano: FEC at 30be0000.
	IMX8MN
)

func (s SoC) String() string {
	switch s {
	case IMX8MP:
		return "i.MX8MP"
	case IMX8MM:
		return "i.MX8MM"
	case IMX8MN:
		return "i.MX8MN"
	}
	return fmt.Sprintf("SoC(%d)", uint8(s))
}

// MACKind is the Ethernet IP behind a node.
type MACKind uint8

const (
	FEC  MACKind = iota // NXP ENET, Linux's fec
	EQOS                // Synopsys DWC Ethernet QoS, Linux's imx-dwmac
)

func (k MACKind) String() string {
	switch k {
	case FEC:
		return "FEC"
	case EQOS:
		return "EQOS"
	}
	return fmt.Sprintf("MACKind(%d)", uint8(k))
}

// ClockUse is one entry of a MAC node's clocks: its clock-names entry (what
// the driver asks for) and the clock's name in the clock framework (what
// /sys/kernel/debug/clk lists).
type ClockUse struct {
	Con  string // clock-names entry: "ipg", "ahb", "stmmaceth", ...
	Name string // clock name: "enet1_root_clk", ...
}

// GPIOLine is a GPIO line: the gpiochip's number and label, its first global
// number (for /sys/kernel/debug/gpio), and the line's offset on it.
type GPIOLine struct {
	Chip      int    // N of /dev/gpiochipN
	ChipLabel string // "30230000.gpio"
	Base      int    // global number of line 0
	Offset    int
	ActiveLow bool
}

// MACInfo describes one MAC node of a SoC. Immutable.
type MACInfo struct {
	Unit   string // platform device name: "30be0000.ethernet"
	Node   string // devicetree path: "/soc@0/bus@30800000/ethernet@30be0000"
	Base   uint64
	Size   uint64
	Kind   MACKind
	Clocks []ClockUse
	// Gates are the clock-names entries whose clocks must run for a register
	// access to complete: the FEC's ipg and ahb (fec_main.c enables exactly
	// these in fec_runtime_resume), the EQOS's stmmaceth and pclk
	// (stmmac_bus_clks_config).
	Gates []string
	// PHYReset is the reset-gpios line of the PHY on the EVK's devicetree.
	PHYReset GPIOLine
}

// boardMAC is a MAC node's state; guarded by Board.mu.
type boardMAC struct {
	info    MACInfo
	driver  string // bound driver, "" for none
	control string // power/control: "auto" or "on"
	active  bool   // runtime PM: resumed
	enabled []string
	resetOn bool         // PHY reset line asserted
	resetBy string       // who holds the line: a consumer label, "" when free
	revoked bool         // a /dev/mem mapping was zapped by a driver's claim
	supply  *boardSupply // phy-supply, nil when the board has none (board_supply.go)
	phyMode string       // the node's phy-mode (board_txclock.go)
}

// boardClock is one clock of the clock tree; guarded by Board.mu.
type boardClock struct {
	parent string
	count  int
	rate   uint64
}

// Drivers bound to MAC nodes (the names Linux gives them).
const (
	DriverNone        = ""
	DriverFEC         = "fec"           // fec_main.c fec_driver
	DriverIMXDwmac    = "imx-dwmac"     // dwmac-imx.c
	DriverSimplePMBus = "simple-pm-bus" // drivers/bus/simple-pm-bus.c
	DriverFECUIO      = "fec-uio"       // NXP's BSP fec_uio.c
)

// ErrBoard is wrapped by errors of Board operations Linux would refuse.
var ErrBoard = errors.New("sim: board")

// imx8mpMACs is imx8mp.dtsi's fec and eqos nodes and the EVK's PHY resets
// (imx8mp-evk.dts: GPIO4_IO02 for the FEC's PHY, GPIO4_IO22 for the EQOS's;
// gpio4 is 30230000.gpio, gpiochip3, whose global numbers start at 96:
// gpio-mxc.c sets the base to the "gpio" alias (gpio3) times 32). Clock
// names from clk-imx8mp.c: IMX8MP_CLK_ENET1_ROOT "enet1_root_clk",
// IMX8MP_CLK_SIM_ENET_ROOT "sim_enet_root_clk", IMX8MP_CLK_ENET_TIMER
// "enet_timer", IMX8MP_CLK_ENET_REF "enet_ref", IMX8MP_CLK_ENET_PHY_REF
// "enet_phy_ref", IMX8MP_CLK_ENET_QOS_ROOT "enet_qos_root_clk",
// IMX8MP_CLK_QOS_ENET_ROOT "qos_enet_root_clk", IMX8MP_CLK_ENET_QOS_TIMER
// "enet_qos_timer", IMX8MP_CLK_ENET_QOS "enet_qos".
var imx8mpMACs = []MACInfo{
	{
		Unit: "30be0000.ethernet", Node: "/soc@0/bus@30800000/ethernet@30be0000",
		Base: 0x30be0000, Size: 0x10000, Kind: FEC,
		Clocks: []ClockUse{{"ipg", "enet1_root_clk"}, {"ahb", "sim_enet_root_clk"}, {"ptp", "enet_timer"},
			{"enet_clk_ref", "enet_ref"}, {"enet_out", "enet_phy_ref"}},
		Gates:    []string{"ipg", "ahb"},
		PHYReset: GPIOLine{Chip: 3, ChipLabel: "30230000.gpio", Base: 96, Offset: 2, ActiveLow: true},
	},
	{
		Unit: "30bf0000.ethernet", Node: "/soc@0/bus@30800000/ethernet@30bf0000",
		Base: 0x30bf0000, Size: 0x10000, Kind: EQOS,
		Clocks: []ClockUse{{"stmmaceth", "enet_qos_root_clk"}, {"pclk", "qos_enet_root_clk"},
			{"ptp_ref", "enet_qos_timer"}, {"tx", "enet_qos"}},
		Gates:    []string{"stmmaceth", "pclk"},
		PHYReset: GPIOLine{Chip: 3, ChipLabel: "30230000.gpio", Base: 96, Offset: 22, ActiveLow: true},
	},
}

// imx8mmMACs is imx8mm.dtsi's fec1 (imx8mn.dtsi's is the same): ipg and ahb
// are both IMX8MM_CLK_ENET1_ROOT, and the PHY reference clock is
// IMX8MM_CLK_ENET_PHY_REF, named "enet_phy" in clk-imx8mm.c. The EVK's PHY
// reset is GPIO4_IO22.
var imx8mmMACs = []MACInfo{{
	Unit: "30be0000.ethernet", Node: "/soc@0/bus@30800000/ethernet@30be0000",
	Base: 0x30be0000, Size: 0x10000, Kind: FEC,
	Clocks: []ClockUse{{"ipg", "enet1_root_clk"}, {"ahb", "enet1_root_clk"}, {"ptp", "enet_timer"},
		{"enet_clk_ref", "enet_ref"}, {"enet_out", "enet_phy"}},
	Gates:    []string{"ipg", "ahb"},
	PHYReset: GPIOLine{Chip: 3, ChipLabel: "30230000.gpio", Base: 96, Offset: 22, ActiveLow: true},
}}

// clockParents is the part of each SoC's clock tree the MACs' gates hang
// from: clk_enable of a child enables its parent first (clk.c
// clk_core_enable), so a parent's count includes its children's.
var clockParents = map[SoC]map[string]string{
	IMX8MP: {
		"enet1_root_clk":    "ipg_root",
		"sim_enet_root_clk": "enet_axi",
		"enet_qos_root_clk": "sim_enet_root_clk", // clk-imx8mp.c
		"qos_enet_root_clk": "ipg_root",
	},
	IMX8MM: {"enet1_root_clk": "ipg_root"},
	IMX8MN: {"enet1_root_clk": "ipg_root"},
}

// NewBoard returns soc as a stock kernel leaves it after boot with every MAC
// node's driver bound and its interface down: fec (and imx-dwmac) bound and
// claiming the range, runtime-suspended (power/control "auto") with the bus
// clocks off, the PHYs held in reset by the kernel, /dev/mem strict (Debian's
// CONFIG_IO_STRICT_DEVMEM) and no lockdown. EQOS's "tx" clock is set to
// 125 MHz (imx8mp.dtsi's assigned rate).
func NewBoard(soc SoC) (*Board, error) {
	var macs []MACInfo
	switch soc {
	case IMX8MP:
		macs = imx8mpMACs
	case IMX8MM, IMX8MN:
		macs = imx8mmMACs
	default:
		return nil, fmt.Errorf("%w: %v: want IMX8MP, IMX8MM or IMX8MN", ErrBoard, soc)
	}
	b := &Board{soc: soc, clocks: map[string]*boardClock{}, lockdown: "none", strict: true}
	b.mu.Lock()
	defer b.mu.Unlock()
	for child, parent := range clockParents[soc] {
		b.clockLocked(child).parent = parent
	}
	for _, mi := range macs {
		m := &boardMAC{info: mi, control: "auto", phyMode: evkPHYMode}
		for _, c := range mi.Clocks {
			b.clockLocked(c.Name)
		}
		b.macs = append(b.macs, m)
	}
	if c, ok := b.clocks["enet_qos"]; ok {
		c.rate = 125_000_000
	}
	for _, m := range b.macs {
		driver := DriverFEC
		if m.info.Kind == EQOS {
			driver = DriverIMXDwmac
		}
		if err := b.bindLocked(m, driver); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// SoC is the board's SoC.
func (b *Board) SoC() SoC { return b.soc }

// MACs lists the SoC's MAC nodes.
func (b *Board) MACs() []MACInfo {
	out := make([]MACInfo, len(b.macs))
	for i, m := range b.macs {
		out[i] = m.info
	}
	return out
}

// MAC returns the node of the given kind (the first one).
func (b *Board) MAC(kind MACKind) (MACInfo, bool) {
	for _, m := range b.macs {
		if m.info.Kind == kind {
			return m.info, true
		}
	}
	return MACInfo{}, false
}

func (b *Board) clockLocked(name string) *boardClock {
	c := b.clocks[name]
	if c == nil {
		c = &boardClock{}
		b.clocks[name] = c
	}
	return c
}

func (b *Board) macLocked(unit string) (*boardMAC, error) {
	for _, m := range b.macs {
		if m.info.Unit == unit {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %s has no MAC node %q", ErrBoard, b.soc, unit)
}

// enableLocked is clk_prepare_enable: the clock and its parents count one
// more user.
func (b *Board) enableLocked(name string) {
	for name != "" {
		c := b.clockLocked(name)
		c.count++
		name = c.parent
	}
}

// disableLocked is clk_disable_unprepare (clk.c warns and does nothing on a
// clock whose count is already 0).
func (b *Board) disableLocked(name string) {
	if b.clockLocked(name).count == 0 {
		return
	}
	for name != "" {
		c := b.clockLocked(name)
		c.count--
		name = c.parent
	}
}

// setClocksLocked enables (on) or disables the node's clocks named by the
// clock-names entries cons, remembering which it holds.
func (b *Board) setClocksLocked(m *boardMAC, on bool, cons ...string) {
	for _, con := range cons {
		name := m.clockName(con)
		held := slices.Contains(m.enabled, con)
		switch {
		case on && !held:
			b.enableLocked(name)
			m.enabled = append(m.enabled, con)
		case !on && held:
			b.disableLocked(name)
			m.enabled = slices.DeleteFunc(m.enabled, func(s string) bool { return s == con })
		}
	}
}

func (m *boardMAC) clockName(con string) string {
	for _, c := range m.info.Clocks {
		if c.Con == con {
			return c.Name
		}
	}
	return ""
}

func (m *boardMAC) allCons() []string {
	var out []string
	for _, c := range m.info.Clocks {
		out = append(out, c.Con)
	}
	return out
}

// claims reports whether a driver requests the node's memory resource
// (devm_platform_ioremap_resource and friends): fec, imx-dwmac and NXP's
// fec-uio do; simple-pm-bus maps nothing.
func claims(driver string) bool {
	return driver == DriverFEC || driver == DriverIMXDwmac || driver == DriverFECUIO
}

// Driver is the driver bound to unit's node ("" for none).
func (b *Board) Driver(unit string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return "", err
	}
	return m.driver, nil
}

// Bind binds driver to unit's node, as a boot with that compatible (or a
// modprobe) does, running its probe's effects. A driver that claims the
// range revokes /dev/mem mappings of it (kernel/resource.c revoke_iomem).
func (b *Board) Bind(unit, driver string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if m.driver != DriverNone {
		return fmt.Errorf("%w: %s is bound to %s already", ErrBoard, unit, m.driver)
	}
	return b.bindLocked(m, driver)
}

func (b *Board) bindLocked(m *boardMAC, driver string) error {
	switch driver {
	case DriverFEC, DriverIMXDwmac:
		if (driver == DriverFEC) != (m.info.Kind == FEC) {
			return fmt.Errorf("%w: %s does not drive %s", ErrBoard, driver, m.info.Unit)
		}
		// Probe with the interface down: the PHY's reset line is requested
		// by the MDIO bus with the consumer label "PHY reset"
		// (mdio_bus.c mdiobus_register_gpiod) and asserted
		// (mdiobus_register_device: "Assert the reset signal"); the
		// clocks the probe enabled are then runtime suspended
		// (fec_runtime_suspend: ipg, ahb; stmmac_runtime_suspend ->
		// stmmac_bus_clks_config: stmmaceth, pclk, and through
		// clks_config = imx_dwmac_clks_config, tx).
		m.resetOn, m.resetBy = true, "PHY reset"
		m.active = false
		if driver == DriverFEC && m.supply != nil {
			m.supply.users++ // fec_probe: regulator_enable(reg_phy)
		}
	case DriverSimplePMBus:
		// simple-pm-bus.c: devm_clk_bulk_get_all, enabled in its runtime
		// resume; power/control "on" keeps the node resumed.
		m.active = m.control == "on"
		if m.active {
			b.setClocksLocked(m, true, m.allCons()...)
		}
	case DriverFECUIO:
		// NXP's fec_uio.c enables ipg, ahb, enet_clk_ref and enet_out (not ptp).
		b.setClocksLocked(m, true, "ipg", "ahb", "enet_clk_ref", "enet_out")
		m.active = true
	default:
		return fmt.Errorf("%w: driver %q: want fec, imx-dwmac, simple-pm-bus or fec-uio", ErrBoard, driver)
	}
	m.driver = driver
	if claims(driver) {
		m.revoked = true // any existing /dev/mem mapping is zapped
	}
	return nil
}

// Unbind removes unit's driver (rmmod fec: the fec driver has no unbind
// file; echo to imx-dwmac's unbind), running its remove path's effects:
// fec_drv_remove disables ahb and ipg and phy_detach asserts the PHY reset,
// which stays asserted after gpiod_put; stmmac_dvr_remove resumes the
// device (pm_runtime_get_sync: stmmaceth, pclk and imx-dwmac's tx on) and
// disables stmmaceth and pclk only, so "tx" keeps an enable nobody holds;
// simple-pm-bus's runtime suspend disables every clock.
func (b *Board) Unbind(unit string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	switch m.driver {
	case DriverNone:
		return fmt.Errorf("%w: %s has no driver bound", ErrBoard, unit)
	case DriverFEC, DriverIMXDwmac:
		leak := map[string]bool{"tx": m.driver == DriverIMXDwmac}
		if leak["tx"] {
			b.setClocksLocked(m, true, "tx") // the remove path's resume
		}
		for _, con := range slices.Clone(m.enabled) {
			if !leak[con] {
				b.setClocksLocked(m, false, con)
			}
		}
		m.enabled = nil // a leaked enable stays counted, held by nobody
		m.resetOn, m.resetBy = true, ""
		if m.driver == DriverFEC && m.supply != nil && m.supply.users > 0 {
			m.supply.users-- // fec_drv_remove: regulator_disable(reg_phy)
		}
	default:
		b.setClocksLocked(m, false, slices.Clone(m.enabled)...)
	}
	m.driver, m.active = DriverNone, false
	return nil
}

// SetControl writes power/control ("on" or "auto"). Only simple-pm-bus
// resumes or suspends on it here: fec and imx-dwmac do resume their bus
// clocks on "on" (runtime PM), which SetControl models too, but they keep
// the range claimed.
func (b *Board) SetControl(unit, control string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if control != "on" && control != "auto" {
		return fmt.Errorf("%w: power/control %q: want on or auto", ErrBoard, control)
	}
	m.control = control
	var bus []string
	switch m.driver {
	case DriverSimplePMBus:
		bus = m.allCons()
	case DriverFEC:
		bus = m.info.Gates // fec_runtime_resume: ipg, ahb
	case DriverIMXDwmac:
		bus = append(slices.Clone(m.info.Gates), "tx") // stmmac_bus_clks_config + imx_dwmac_clks_config
	default:
		return nil // no runtime PM without a driver: nothing changes
	}
	m.active = control == "on"
	b.setClocksLocked(m, m.active, bus...)
	return nil
}

// SetPHYReset drives unit's PHY reset line as a user-space process does
// through the GPIO character device (asserted true). It fails with EBUSY's
// meaning while a kernel driver holds the line.
func (b *Board) SetPHYReset(unit string, asserted bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if m.resetBy != "" && m.resetBy != "xnic" {
		return fmt.Errorf("%w: GPIO line %d of %s is held by the kernel (%q): the line request would fail with EBUSY",
			ErrBoard, m.info.PHYReset.Offset, m.info.PHYReset.ChipLabel, m.resetBy)
	}
	m.resetOn = asserted
	m.resetBy = "xnic"
	return nil
}

// ReleasePHYReset gives the line back (the GPIO file descriptor closed): it
// keeps its last value, as gpiolib leaves an output line.
func (b *Board) ReleasePHYReset(unit string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if m.resetBy == "xnic" {
		m.resetBy = ""
	}
	return nil
}

// PHYInReset reports whether unit's PHY is held in reset.
func (b *Board) PHYInReset(unit string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	return err == nil && m.resetOn
}

// SetLockdown sets the kernel's lockdown mode ("none", "integrity",
// "confidentiality"); any but none blocks /dev/mem (security/lockdown).
func (b *Board) SetLockdown(mode string) error {
	switch mode {
	case "none", "integrity", "confidentiality":
	default:
		return fmt.Errorf("%w: lockdown %q: want none, integrity or confidentiality", ErrBoard, mode)
	}
	b.mu.Lock()
	b.lockdown = mode
	b.mu.Unlock()
	return nil
}

// SetStrictDevmem sets whether /dev/mem refuses claimed ranges
// (CONFIG_IO_STRICT_DEVMEM without iomem=relaxed on the command line).
func (b *Board) SetStrictDevmem(on bool) {
	b.mu.Lock()
	b.strict = on
	b.mu.Unlock()
}

// ClockEnableCount is clk_enable_count of the named clock.
func (b *Board) ClockEnableCount(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clocks[name]; ok {
		return c.count
	}
	return 0
}

// SetClockRate sets a clock's rate (clk_set_rate; for the EQOS's "tx", what
// imx_dwmac_fix_speed does at each link change).
func (b *Board) SetClockRate(name string, hz uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.clocks[name]
	if !ok {
		return fmt.Errorf("%w: %s has no clock %q", ErrBoard, b.soc, name)
	}
	c.rate = hz
	return nil
}

// ClockRate is a clock's rate in Hz (0: unknown).
func (b *Board) ClockRate(name string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clocks[name]; ok {
		return c.rate
	}
	return 0
}

// Remap is a new /dev/mem mapping of the range: it clears the revoked state
// when the policy allows the mapping (Access then reports why not).
func (b *Board) Remap(unit string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return err
	}
	if err := b.mappableLocked(m); err != nil {
		return err
	}
	m.revoked = false
	return nil
}

// HandOver performs the hand-over that works on a stock kernel for unit:
// the driver removed (rmmod fec; imx-dwmac's unbind), simple-pm-bus bound
// (the DTB's compatible edited and the board rebooted), power/control "on"
// (simple-pm-bus's runtime resume enables every clock of the node), the PHY
// reset released and held by the user-space process, and /dev/mem mapped.
func (b *Board) HandOver(unit string) error {
	drv, err := b.Driver(unit)
	if err != nil {
		return err
	}
	if drv != DriverNone && drv != DriverSimplePMBus {
		if err := b.Unbind(unit); err != nil {
			return err
		}
		drv = DriverNone
	}
	if drv == DriverNone {
		if err := b.Bind(unit, DriverSimplePMBus); err != nil {
			return err
		}
	}
	if err := b.SetControl(unit, "on"); err != nil {
		return err
	}
	if err := b.SetPHYReset(unit, false); err != nil {
		return err
	}
	return b.Remap(unit)
}

// ErrBusError is wrapped by Access errors: on the SoC the access does not
// complete (a gated clock hangs the interconnect, kernel commit
// 6a4d7234ae9a; a revoked mapping is a SIGBUS).
var ErrBusError = errors.New("bus error")

// mappableLocked says whether /dev/mem maps the range now: not under
// lockdown (security/lockdown: LOCKDOWN_DEV_MEM), and not while a driver
// claims it on a strict kernel (drivers/char/mem.c, devmem_is_allowed with
// CONFIG_IO_STRICT_DEVMEM: iomem_is_exclusive).
func (b *Board) mappableLocked(m *boardMAC) error {
	switch {
	case b.lockdown != "none":
		return fmt.Errorf("%w: /dev/mem is blocked by lockdown (%s)", ErrBusError, b.lockdown)
	case b.strict && claims(m.driver):
		return fmt.Errorf("%w: %s claims %#x-%#x and /dev/mem is strict (CONFIG_IO_STRICT_DEVMEM): the mapping is refused or revoked",
			ErrBusError, m.driver, m.info.Base, m.info.Base+m.info.Size-1)
	}
	return nil
}

// devmemLocked says whether the existing mapping still works.
func (b *Board) devmemLocked(m *boardMAC) error {
	if err := b.mappableLocked(m); err != nil {
		return err
	}
	if m.revoked {
		return fmt.Errorf("%w: the /dev/mem mapping of %s was revoked when a driver claimed the range (kernel/resource.c revoke_iomem); map it again", ErrBusError, m.info.Unit)
	}
	return nil
}

// Access decides whether a CPU access to unit's registers completes: nil, or
// an error wrapping ErrBusError that says why not. A gated bus clock is the
// hang real hardware shows; a refused or revoked mapping a SIGBUS.
func (b *Board) Access(unit string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.macLocked(unit)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBusError, err)
	}
	if err := b.devmemLocked(m); err != nil {
		return err
	}
	var off []string
	for _, con := range m.info.Gates {
		if !b.runningLocked(m.clockName(con)) {
			off = append(off, fmt.Sprintf("%s (%s)", con, m.clockName(con)))
		}
	}
	if len(off) > 0 {
		return fmt.Errorf("%w: real hardware hangs here: %s's clock %v is gated (enable count 0)", ErrBusError, m.info.Unit, off)
	}
	return nil
}

// runningLocked reports whether a clock and its modelled parents are enabled.
func (b *Board) runningLocked(name string) bool {
	for name != "" {
		c, ok := b.clocks[name]
		if !ok {
			return true // above the modelled tree: always on
		}
		if c.count == 0 {
			return false
		}
		name = c.parent
	}
	return true
}

// LeftBoard is the private board of a model asked to start in kernel-left
// states without a board of its own: an i.MX8M Plus whose MAC of the kind
// is handed over (HandOver), then left as left says of the board's states
// (LeftClocksGated: power/control back to auto, the bus clocks off;
// LeftPHYInReset: the reset line asserted, as phy_detach leaves it).
func LeftBoard(kind MACKind, left KernelLeft) (*Board, error) {
	b, err := NewBoard(IMX8MP)
	if err != nil {
		return nil, err
	}
	mi, ok := b.MAC(kind)
	if !ok {
		return nil, fmt.Errorf("sim: the %v has no %v", b.SoC(), kind)
	}
	if err := b.HandOver(mi.Unit); err != nil {
		return nil, err
	}
	if left.Has(LeftClocksGated) {
		if err := b.SetControl(mi.Unit, "auto"); err != nil {
			return nil, err
		}
	}
	if left.Has(LeftPHYInReset) {
		if err := b.SetPHYReset(mi.Unit, true); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ModelUnit is the unit (the node name, "30be0000.ethernet") a model of
// the MAC kind sits at on b: unit when given, else the board's MAC of that
// kind; it must be a node of b.
func (b *Board) ModelUnit(kind MACKind, unit string) (string, error) {
	if unit == "" {
		mi, ok := b.MAC(kind)
		if !ok {
			return "", fmt.Errorf("sim: the %v board has no %v", b.SoC(), kind)
		}
		unit = mi.Unit
	}
	if _, err := b.Driver(unit); err != nil {
		return "", err
	}
	return unit, nil
}
