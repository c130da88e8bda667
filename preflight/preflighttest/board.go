package preflighttest

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/xnic-dev/xnic/preflight"
)

// The i.MX8M Plus EVK as Debian's imx8mp-evk.dtb describes it: the FEC at
// 0x30be0000 (node /soc@0/bus@30800000/ethernet@30be0000), its PHY at MDIO
// address 1 held in reset by GPIO4 line 2 (active low, 80 ms deassert), the
// EQOS at 0x30bf0000 with its PHY on GPIO4 line 22.
const (
	FECNode    = "/soc@0/bus@30800000/ethernet@30be0000"
	EQOSNode   = "/soc@0/bus@30800000/ethernet@30bf0000"
	GPIO4Node  = "/soc@0/bus@30200000/gpio@30230000"
	GPIOChip   = "gpiochip3"
	FECResetLn = 2
	EQOSReset  = 22
	phGPIO4    = 0x21
	phFECPHY   = 0x40
	phEQOSPHY  = 0x41
	phCCM      = 0x02
	release    = "6.12.95+deb12-arm64"
)

// Board is a fake i.MX8M Plus board under Root.
type Board struct {
	Root string
	GPIO *GPIO
	t    testing.TB
	mu   sync.Mutex
	// claims are /proc/iomem lines of drivers, by device.
	claims map[string]string
	// clocks are the enable counts, by debugfs name.
	clocks map[string]int
	// noDebugfs: debugfs is not mounted.
	noDebugfs bool
	// txRate is enet_qos's rate; rateWritable a kernel built with
	// CLOCK_ALLOW_WRITE_DEBUGFS (clk_rate 0644, else 0444).
	txRate       uint64
	rateWritable bool
}

// MAC is one MAC of the board.
type MAC struct {
	Dev    string // "30be0000.ethernet"
	Node   string // devicetree path
	Kernel string // "fec" or "imx-dwmac"
	Clocks []string
	Line   uint32
}

// FEC and EQOS are the board's MACs; clock names as clk-imx8mp.c.
var (
	FEC  = MAC{"30be0000.ethernet", FECNode, "fec", []string{"enet1_root_clk", "sim_enet_root_clk", "enet_timer", "enet_ref", "enet_phy_ref"}, FECResetLn}
	EQOS = MAC{"30bf0000.ethernet", EQOSNode, "imx-dwmac", []string{"enet_qos_root_clk", "qos_enet_root_clk", "enet_qos_timer", "enet_qos"}, EQOSReset}
)

// NewIMX8MP makes the board as the stock DTB boots with no MAC driver loaded:
// both nodes unbound, every MAC clock gated (clk_disable_unused), both PHY
// reset lines free and asserted.
func NewIMX8MP(t testing.TB) *Board {
	t.Helper()
	b := &Board{Root: t.TempDir(), t: t, GPIO: NewGPIO(), claims: map[string]string{}, clocks: map[string]int{}, txRate: 125_000_000}
	dt := "sys/firmware/devicetree/base"
	b.file(dt+"/compatible", "fsl,imx8mp-evk\x00fsl,imx8mp\x00")
	b.cells(dt+GPIO4Node+"/phandle", phGPIO4)
	for _, m := range []struct {
		mac     MAC
		compat  string
		mode    string
		ph      uint32
		phyNode string
	}{
		{FEC, "fsl,imx8mp-fec\x00fsl,imx8mq-fec\x00fsl,imx6sx-fec\x00", "rgmii-id", phFECPHY, "/mdio/ethernet-phy@1"},
		{EQOS, "nxp,imx8mp-dwmac-eqos\x00snps,dwmac-5.10a\x00", "rgmii-id", phEQOSPHY, "/mdio/ethernet-phy@1"},
	} {
		n := dt + m.mac.Node
		b.file(n+"/compatible", m.compat)
		b.file(n+"/phy-mode", m.mode+"\x00")
		b.cells(n+"/phy-handle", m.ph)
		b.cells(n+m.phyNode+"/phandle", m.ph)
		b.cells(n+m.phyNode+"/reset-gpios", phGPIO4, m.mac.Line, 1)
		b.cells(n+m.phyNode+"/reset-deassert-us", 80000)
		dev := "sys/devices/platform/soc@0/30800000.bus/" + m.mac.Dev
		b.mkdir(dev + "/power")
		b.symlink(b.path(n), dev+"/of_node")
		b.symlink("../../../devices/platform/soc@0/30800000.bus/"+m.mac.Dev, "sys/bus/platform/devices/"+m.mac.Dev)
		b.file(dev+"/power/runtime_status", "unsupported\n")
		b.file(dev+"/power/control", "auto\n")
		for _, c := range m.mac.Clocks {
			b.clocks[c] = 0
		}
		b.GPIO.set(m.mac.Line, Line{Value: 0}) // pin low: in reset (active low)
	}
	gdev := "sys/devices/platform/soc@0/30200000.bus/30230000.gpio"
	b.mkdir(gdev + "/" + GPIOChip)
	b.symlink(b.path(dt+GPIO4Node), gdev+"/of_node")
	b.symlink("../../../devices/platform/soc@0/30200000.bus/30230000.gpio/"+GPIOChip, "sys/bus/gpio/devices/"+GPIOChip)
	b.file("dev/"+GPIOChip, "")
	b.file("sys/kernel/security/lockdown", "[none] integrity confidentiality\n")
	b.file("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "32\n")
	b.file("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "32\n")
	// imx8mp.dtsi's EQOS clock assignments: ENET_AXI (94), ENET_QOS_TIMER
	// (130), ENET_QOS (129) of the CCM (phandle phCCM), at 0, 100 MHz, 125 MHz.
	b.cells(dt+EQOSNode+"/assigned-clocks", phCCM, 94, phCCM, 130, phCCM, 129)
	b.cells(dt+EQOSNode+"/assigned-clock-rates", 0, 100_000_000, 125_000_000)
	b.file("proc/sys/kernel/osrelease", release+"\n")
	b.file("proc/cmdline", "console=ttymxc1,115200 hugepages=32\n")
	b.file("boot/config-"+release, "CONFIG_STRICT_DEVMEM=y\nCONFIG_IO_STRICT_DEVMEM=y\nCONFIG_FEC=m\n")
	b.flush()
	return b
}

// Options the tests pass around.

// Preflight returns a preflight.Platform for m on this board.
func (b *Board) Preflight(m MAC) preflight.Platform {
	var phys uint64
	fmt.Sscanf(m.Dev, "%x.", &phys)
	return preflight.Platform{Root: b.Root, Phys: phys, GPIO: b.GPIO, Write: b.Write}
}

func (b *Board) path(rel string) string { return filepath.Join(b.Root, filepath.FromSlash(rel)) }

func (b *Board) mkdir(rel string) {
	b.t.Helper()
	if err := os.MkdirAll(b.path(rel), 0o755); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Board) file(rel, content string) {
	b.t.Helper()
	b.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(b.path(rel), []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Board) cells(rel string, v ...uint32) {
	b.t.Helper()
	buf := make([]byte, 4*len(v))
	for i, c := range v {
		binary.BigEndian.PutUint32(buf[4*i:], c)
	}
	b.file(rel, string(buf))
}

func (b *Board) symlink(target, rel string) {
	b.t.Helper()
	b.mkdir(filepath.Dir(rel))
	os.Remove(b.path(rel))
	if err := os.Symlink(target, b.path(rel)); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Board) dev(m MAC) string { return "sys/bus/platform/devices/" + m.Dev }

// bind links m's device to driver ("" unbinds).
func (b *Board) bind(m MAC, driver string) {
	os.Remove(b.path(b.dev(m) + "/driver"))
	if driver != "" {
		b.mkdir("sys/bus/platform/drivers/" + driver)
		b.symlink("../../../../../bus/platform/drivers/"+driver, "sys/devices/platform/soc@0/30800000.bus/"+m.Dev+"/driver")
	}
}

func (b *Board) setClocks(m MAC, n int) {
	for _, c := range m.Clocks {
		b.clocks[c] = n
	}
}

func (b *Board) power(m MAC, status, control string) {
	b.file(b.dev(m)+"/power/runtime_status", status+"\n")
	b.file(b.dev(m)+"/power/control", control+"\n")
}

// BindKernel binds m's stock kernel driver (fec or imx-dwmac), which claims
// its registers and holds the PHY's reset line. With up, the interface is
// up: every clock on, the PHY out of reset; otherwise it is down, runtime
// suspended with every clock off and the PHY held in reset (phy_detach).
func (b *Board) BindKernel(m MAC, up bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bind(m, m.Kernel)
	b.claims[m.Dev] = fmt.Sprintf("%s-%x : %s %s", strings.TrimSuffix(m.Dev, ".ethernet"), phys(m)+0xffff, m.Dev, filepath.Base(m.Node))
	if up {
		b.setClocks(m, 1)
		b.power(m, "active", "auto")
		b.GPIO.set(m.Line, Line{Used: true, Consumer: "reset", Output: true, Value: 1})
	} else {
		b.setClocks(m, 0)
		b.power(m, "suspended", "auto")
		b.GPIO.set(m.Line, Line{Used: true, Consumer: "reset", Output: true, Value: 0})
	}
	b.flush()
}

// RemoveKernel is rmmod of m's driver: the claim and the line's request go,
// the clocks stay off, and the PHY stays in reset (gpiod_put leaves the line).
func (b *Board) RemoveKernel(m MAC) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bind(m, "")
	delete(b.claims, m.Dev)
	b.setClocks(m, 0)
	b.power(m, "unsupported", "auto")
	b.GPIO.set(m.Line, Line{Value: 0})
	b.flush()
}

// HandOver boots the DTB edited as the README says: m's node has compatible
// "simple-pm-bus", which binds it, enables runtime PM and leaves it
// suspended (clocks off) with power/control at auto.
func (b *Board) HandOver(m MAC) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file("sys/firmware/devicetree/base"+m.Node+"/compatible", "simple-pm-bus\x00")
	b.bind(m, "simple-pm-bus")
	delete(b.claims, m.Dev)
	b.setClocks(m, 0)
	b.power(m, "suspended", "auto")
	b.GPIO.set(m.Line, Line{Value: 0})
	b.flush()
}

// NoDebugfs unmounts debugfs.
func (b *Board) NoDebugfs() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noDebugfs = true
	os.RemoveAll(b.path("sys/kernel/debug"))
}

// Lockdown sets the lockdown mode ("none", "integrity", "confidentiality").
func (b *Board) Lockdown(mode string) {
	s := "none integrity confidentiality"
	b.file("sys/kernel/security/lockdown", strings.Replace(s, mode, "["+mode+"]", 1)+"\n")
}

// PHYSupply gives m's node a phy-supply: a fixed regulator
// (/regulator-phy, phandle 0x60) shown as regulator.3 in state ("enabled",
// "disabled").
func (b *Board) PHYSupply(m MAC, state string) {
	dt := "sys/firmware/devicetree/base"
	b.cells(dt+m.Node+"/phy-supply", 0x60)
	b.cells(dt+"/regulator-phy/phandle", 0x60)
	dir := "sys/devices/platform/regulator-phy/regulator/regulator.3"
	b.file(dir+"/name", "phy-supply-3v3\n")
	b.file(dir+"/state", state+"\n")
	b.file(dir+"/num_users", "0\n")
	b.symlink(b.path(dt+"/regulator-phy"), dir+"/of_node")
	b.symlink("../../devices/platform/regulator-phy/regulator/regulator.3", "sys/class/regulator/regulator.3")
}

// SetFile writes any file of the tree (relative to Root).
func (b *Board) SetFile(rel, content string) { b.file(rel, content) }

// ClockCount is the enable count of a clock.
func (b *Board) ClockCount(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clocks[name]
}

// Control is m's power/control.
func (b *Board) Control(m MAC) string {
	v, _ := os.ReadFile(b.path(b.dev(m) + "/power/control"))
	return strings.TrimSpace(string(v))
}

func phys(m MAC) uint64 {
	var p uint64
	fmt.Sscanf(m.Dev, "%x.", &p)
	return p
}

// flush writes /proc/iomem and the debugfs clock counts. Called with mu held.
func (b *Board) flush() {
	var io strings.Builder
	io.WriteString("30000000-30ffffff : 30000000.bus\n")
	for _, m := range []MAC{FEC, EQOS} {
		if c, ok := b.claims[m.Dev]; ok {
			fmt.Fprintf(&io, "  %s\n", c)
		}
	}
	io.WriteString("40000000-7fffffff : System RAM\n  40210000-41ffffff : Kernel code\n")
	b.file("proc/iomem", io.String())
	if !b.noDebugfs {
		for c, n := range b.clocks {
			b.file("sys/kernel/debug/clk/"+c+"/clk_enable_count", fmt.Sprintf("%d\n", n))
		}
		rate := "sys/kernel/debug/clk/enet_qos/clk_rate"
		b.file(rate, fmt.Sprintf("%d\n", b.txRate))
		mode := os.FileMode(0o444)
		if b.rateWritable {
			mode = 0o644
		}
		if err := os.Chmod(b.path(rate), mode); err != nil {
			b.t.Fatal(err)
		}
	}
}

// Write is the fake kernel's sysfs write: it stores data and reacts to
// power/control as Linux's runtime PM does for simple-pm-bus (on: resume,
// clk_bulk_prepare_enable of the node's clocks; auto: suspend, disable).
func (b *Board) Write(path string, data []byte) error {
	rel, err := filepath.Rel(b.Root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("preflighttest: write outside the fake tree: %s", path)
	}
	rel = filepath.ToSlash(rel)
	if _, err := os.Stat(path); err != nil {
		return &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	}
	v := strings.TrimSpace(string(data))
	b.mu.Lock()
	defer b.mu.Unlock()
	if rel == "sys/kernel/debug/clk/enet_qos/clk_rate" {
		return b.writeRate(path, v)
	}
	for _, m := range []MAC{FEC, EQOS} {
		if rel != b.dev(m)+"/power/control" {
			continue
		}
		if v != "on" && v != "auto" {
			return &os.PathError{Op: "write", Path: path, Err: syscall.EINVAL}
		}
		drv, _ := os.Readlink(b.path(b.dev(m) + "/driver"))
		if filepath.Base(drv) == "simple-pm-bus" {
			if v == "on" {
				b.setClocks(m, 1)
				b.power(m, "active", "on")
			} else {
				b.setClocks(m, 0)
				b.power(m, "suspended", "auto")
			}
			b.flush()
			return nil
		}
	}
	return os.WriteFile(path, data, 0o644)
}

// writeRate is a write to enet_qos's clk_rate: EACCES unless the kernel
// allows it (debugfs's simple_attr_write without a set handler), else
// clk_set_rate. Called with mu held.
func (b *Board) writeRate(path, v string) error {
	if !b.rateWritable {
		return &os.PathError{Op: "write", Path: path, Err: syscall.EACCES}
	}
	hz, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: syscall.EINVAL}
	}
	b.txRate = hz
	b.flush()
	return nil
}

// SetRateWritable makes clk_rate writable (a kernel built with
// CLOCK_ALLOW_WRITE_DEBUGFS) or read-only (every stock kernel).
func (b *Board) SetRateWritable(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rateWritable = on
	b.flush()
}

// SetTxRate sets enet_qos's rate, as the devicetree's assigned-clock-rates
// would at boot.
func (b *Board) SetTxRate(hz uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.txRate = hz
	b.flush()
}

// TxRate is enet_qos's rate.
func (b *Board) TxRate() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.txRate
}

// Line is one fake GPIO line.
type Line struct {
	Used     bool
	Consumer string
	Output   bool
	Value    int // the pin's level
}

// GPIO is a fake GPIO character device for every chip of the board.
type GPIO struct {
	mu    sync.Mutex
	lines map[uint32]Line
	holds int // requests made through Hold
}

// NewGPIO makes a chip whose lines are all free inputs.
func NewGPIO() *GPIO { return &GPIO{lines: map[uint32]Line{}} }

func (g *GPIO) set(n uint32, l Line) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines[n] = l
}

// Line returns the state of line n.
func (g *GPIO) Line(n uint32) Line {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lines[n]
}

// Holds is the number of line requests made.
func (g *GPIO) Holds() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holds
}

// Info implements preflight.GPIO.
func (g *GPIO) Info(chip string, line uint32) (preflight.LineInfo, error) {
	if _, err := os.Stat(chip); err != nil {
		return preflight.LineInfo{}, err
	}
	l := g.Line(line)
	return preflight.LineInfo{Used: l.Used, Consumer: l.Consumer, Output: l.Output}, nil
}

// Hold implements preflight.GPIO: EBUSY when the line is requested.
func (g *GPIO) Hold(chip string, line uint32, activeLow bool, value int, consumer string) (io.Closer, error) {
	if _, err := os.Stat(chip); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lines[line]
	if l.Used {
		return nil, syscall.EBUSY
	}
	level := value & 1
	if activeLow {
		level ^= 1
	}
	g.lines[line] = Line{Used: true, Consumer: consumer, Output: true, Value: level}
	g.holds++
	return closer(func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		l := g.lines[line]
		l.Used, l.Consumer = false, ""
		g.lines[line] = l // a freed line keeps its level
		return nil
	}), nil
}

type closer func() error

func (c closer) Close() error { return c() }
