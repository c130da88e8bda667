package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Render writes the board's state under root as the files Linux shows, at
// their real paths (root stands for /), so that a tool reading them under a
// configurable root sees this board:
//
//	sys/bus/platform/devices/<unit>/driver          symlink to ../../drivers/<driver>, absent when unbound
//	sys/bus/platform/devices/<unit>/power/runtime_status   active, suspended, or unsupported (no driver)
//	sys/bus/platform/devices/<unit>/power/control   auto or on
//	sys/bus/platform/devices/<unit>/of_node         symlink to sys/firmware/devicetree/base/<node>
//	sys/firmware/devicetree/base/compatible         the machine: the SoC's EVK ("fsl,imx8mp-evk", "fsl,imx8mp")
//	sys/firmware/devicetree/base/<node>/compatible  NUL-separated strings
//	proc/iomem                                      "30be0000-30beffff : 30be0000.ethernet" per claimed range
//	proc/cmdline                                    with iomem=relaxed when /dev/mem is not strict
//	sys/kernel/debug/clk/<name>/clk_enable_count    (and clk_prepare_count, clk_rate: mode 0444, 0644 when writable)
//	sys/firmware/devicetree/base/<node>/phy-mode    the MAC's interface mode
//	sys/kernel/debug/gpio                           the requested lines of each gpiochip (gpiolib_dbg_show)
//	sys/kernel/security/lockdown                    "[none] integrity confidentiality"
//	sys/class/regulator/regulator.N/{name,state,num_users}  declared phy-supply regulators
//
// Render replaces root/sys and root/proc; root must be a directory other than
// "/". The GPIO character device itself (/dev/gpiochipN) cannot be faked in a
// file tree: Board.GPIOChip (board_gpio.go) is its model.
func (b *Board) Render(root string) error {
	if root == "" || filepath.Clean(root) == "/" {
		return fmt.Errorf("%w: render root %q: want a scratch directory, never /", ErrBoard, root)
	}
	for _, d := range []string{"sys", "proc"} {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			return fmt.Errorf("%w: render: %w", ErrBoard, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := &treeWriter{root: root}
	w.file("sys/firmware/devicetree/base/compatible", b.machineCompatible())
	for _, m := range b.macs {
		b.renderMACLocked(w, m)
	}
	w.file("proc/iomem", b.iomemLocked())
	cmdline := "console=ttymxc1,115200 root=/dev/mmcblk2p2 rootwait"
	if !b.strict {
		cmdline += " iomem=relaxed"
	}
	w.file("proc/cmdline", cmdline+"\n")
	names := make([]string, 0, len(b.clocks))
	for n := range b.clocks {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := b.clocks[n]
		dir := "sys/kernel/debug/clk/" + n
		w.file(dir+"/clk_enable_count", fmt.Sprintf("%d\n", c.count))
		w.file(dir+"/clk_prepare_count", fmt.Sprintf("%d\n", c.count))
		w.file(dir+"/clk_rate", fmt.Sprintf("%d\n", c.rate))
		w.chmod(dir+"/clk_rate", b.rateModeLocked())
	}
	w.file("sys/kernel/debug/gpio", b.gpioLocked())
	b.renderSuppliesLocked(w)
	lock := "[none] integrity confidentiality"
	switch b.lockdown {
	case "integrity":
		lock = "none [integrity] confidentiality"
	case "confidentiality":
		lock = "none integrity [confidentiality]"
	}
	w.file("sys/kernel/security/lockdown", lock+"\n")
	return w.err
}

func (b *Board) renderMACLocked(w *treeWriter, m *boardMAC) {
	dev := "sys/bus/platform/devices/" + m.info.Unit
	w.dir(dev)
	if m.driver != DriverNone {
		w.dir("sys/bus/platform/drivers/" + m.driver)
		w.symlink("../../drivers/"+m.driver, dev+"/driver")
	}
	status := "unsupported" // runtime PM is enabled by the driver's probe
	if m.driver != DriverNone {
		status = "suspended"
		if m.active {
			status = "active"
		}
	}
	w.file(dev+"/power/runtime_status", status+"\n")
	w.file(dev+"/power/control", m.control+"\n")
	node := "sys/firmware/devicetree/base" + m.info.Node
	w.file(node+"/compatible", strings.Join(b.compatibleLocked(m), "\x00")+"\x00")
	w.file(node+"/phy-mode", m.phyMode+"\x00")
	if m.info.Kind == EQOS {
		w.file(node+"/assigned-clocks", cells(eqosAssignedClocks...))
		w.file(node+"/assigned-clock-rates", cells(eqosAssignedRates...))
	}
	rel, err := filepath.Rel(filepath.Join(w.root, dev), filepath.Join(w.root, node))
	if err == nil {
		w.symlink(rel, dev+"/of_node")
	}
}

// machineCompatible is the root node's compatible: the SoC's EVK
// (imx8mp-evk.dts, imx8mm-evk.dts, imx8mn-evk.dtsi).
func (b *Board) machineCompatible() string {
	soc := map[SoC]string{IMX8MP: "imx8mp", IMX8MM: "imx8mm", IMX8MN: "imx8mn"}[b.soc]
	return "fsl," + soc + "-evk\x00fsl," + soc + "\x00"
}

// compatibleLocked is the node's compatible property: imx8mp.dtsi's (or
// imx8mm.dtsi's), or "simple-pm-bus" once the DTB was edited to bind that.
func (b *Board) compatibleLocked(m *boardMAC) []string {
	switch {
	case m.driver == DriverSimplePMBus:
		return []string{"simple-pm-bus"}
	case m.driver == DriverFECUIO:
		return []string{"fsl,imx8mm-fec-uio"}
	case m.info.Kind == EQOS:
		return []string{"nxp,imx8mp-dwmac-eqos", "snps,dwmac-5.10a"}
	case b.soc == IMX8MP:
		return []string{"fsl,imx8mp-fec", "fsl,imx8mq-fec", "fsl,imx6sx-fec"}
	case b.soc == IMX8MN:
		return []string{"fsl,imx8mn-fec", "fsl,imx8mq-fec", "fsl,imx6sx-fec"}
	}
	return []string{"fsl,imx8mm-fec", "fsl,imx8mq-fec", "fsl,imx6sx-fec"}
}

// iomemLocked is /proc/iomem: the claimed MAC ranges among the SoC's other
// top-level claims, in address order (kernel/resource.c r_show, as root sees
// it).
func (b *Board) iomemLocked() string {
	type claim struct {
		lo, hi uint64
		name   string
	}
	cl := []claim{
		{0x30890000, 0x3089ffff, "30890000.serial"},
		{0x40000000, 0xbfffffff, "System RAM"},
	}
	for _, m := range b.macs {
		if claims(m.driver) {
			cl = append(cl, claim{m.info.Base, m.info.Base + m.info.Size - 1, m.info.Unit})
		}
	}
	slices.SortFunc(cl, func(a, b claim) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var s strings.Builder
	for _, c := range cl {
		fmt.Fprintf(&s, "%08x-%08x : %s\n", c.lo, c.hi, c.name)
	}
	return s.String()
}

// gpioLocked is /sys/kernel/debug/gpio: per gpiochip a header and one line
// per requested GPIO (gpiolib.c gpiolib_seq_show / gpiolib_dbg_show); the
// value is the line's level, so an asserted active-low reset reads "lo".
func (b *Board) gpioLocked() string {
	var s strings.Builder
	chips := map[int][]*boardMAC{}
	var order []int
	for _, m := range b.macs {
		c := m.info.PHYReset.Chip
		if _, ok := chips[c]; !ok {
			order = append(order, c)
		}
		chips[c] = append(chips[c], m)
	}
	slices.Sort(order)
	for _, c := range order {
		l := chips[c][0].info.PHYReset
		fmt.Fprintf(&s, "gpiochip%d: GPIOs %d-%d, parent: platform/%s, %s:\n", c, l.Base, l.Base+31, l.ChipLabel, l.ChipLabel)
		for _, m := range chips[c] {
			if m.resetBy == "" {
				continue // only requested lines are listed
			}
			pl := m.info.PHYReset
			level := m.resetOn != pl.ActiveLow
			v := "lo"
			if level {
				v = "hi"
			}
			al := ""
			if pl.ActiveLow {
				al = "ACTIVE LOW"
			}
			fmt.Fprintf(&s, " gpio-%-3d (%-20.20s|%-20.20s) out %s %s\n", pl.Base+pl.Offset, "", m.resetBy, v, al)
		}
		s.WriteString("\n")
	}
	return s.String()
}

// treeWriter writes files under root, keeping the first error.
type treeWriter struct {
	root string
	err  error
}

func (w *treeWriter) dir(rel string) {
	if w.err == nil {
		w.err = os.MkdirAll(filepath.Join(w.root, rel), 0o755)
	}
}

func (w *treeWriter) file(rel, content string) {
	w.dir(filepath.Dir(rel))
	if w.err == nil {
		w.err = os.WriteFile(filepath.Join(w.root, rel), []byte(content), 0o644)
	}
}

func (w *treeWriter) chmod(rel string, mode os.FileMode) {
	if w.err == nil {
		w.err = os.Chmod(filepath.Join(w.root, rel), mode)
	}
}

func (w *treeWriter) symlink(target, rel string) {
	w.dir(filepath.Dir(rel))
	if w.err == nil {
		w.err = os.Symlink(target, filepath.Join(w.root, rel))
	}
}
