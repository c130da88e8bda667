package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Platform names a platform MAC to inspect or hand over, and where the
// kernel's files are.
type Platform struct {
	// Root is where Linux's /sys, /proc, /dev and /boot are: "/" on a board,
	// a fake tree in tests. Empty means "/".
	Root string
	// Phys is the MAC's register window; Name its platform device
	// ("30be0000.ethernet"; empty: derived from Phys as the kernel names it).
	Phys uint64
	Name string
	// Kind is the xnic driver family that will drive it ("fec", "dwmac"), to
	// catch a NAME@ADDR that names the other MAC; empty skips the check.
	Kind string
	// UncachedPhys and UncachedSize are the ring memory given with
	// ,uncached= (Size 0: none).
	UncachedPhys uint64
	UncachedSize uint64
	// GPIO is the GPIO character device; nil means RealGPIO.
	GPIO GPIO
	// GPR, when set, is IOMUXC_GPR1's page (0x30340000) mapped for the
	// hand-over of an EQOS (its interface mode).
	GPR Reg32
	// Write writes a sysfs attribute; nil is the real write(2). Tests plug
	// in a fake kernel that reacts (power/control=on resumes the device).
	Write func(path string, data []byte) error
}

// Reg32 is a mapped 32-bit register window (nic.Regs satisfies it).
type Reg32 interface {
	Read32(off uint32) uint32
	Write32(off uint32, val uint32)
}

func (p Platform) tree() tree {
	if p.Root == "" {
		return tree{root: "/"}
	}
	return tree{root: p.Root}
}

func (p Platform) name() string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprintf("%x.ethernet", p.Phys)
}

func (p Platform) gpio() GPIO {
	if p.GPIO == nil {
		return RealGPIO{}
	}
	return p.GPIO
}

func (p Platform) devPath(rel string) string {
	return "sys/bus/platform/devices/" + p.name() + "/" + rel
}

// state is what Inspect learned that the hand-over needs again.
type state struct {
	mac     MAC
	known   bool
	driver  string
	nodeDir string
	dtPath  string
	control string
	reset   *PHYReset
	dtb     string // the board's DTB file as the system installed it, "" when not found
}

// Inspect makes every check of a platform MAC, reading files only: it maps
// nothing and touches no register.
func (p Platform) Inspect() *Report {
	r, _ := p.inspect(false)
	return r
}

func (p Platform) inspect(holdingLine bool) (*Report, state) {
	t := p.tree()
	r := &Report{Port: p.name(), Bus: "platform"}
	var st state
	if _, err := os.Stat(t.path(p.devPath(""))); err != nil {
		if _, e := os.Stat(t.path("sys/bus/platform/devices")); e != nil {
			r.add("device", Unknown, "no /sys/bus/platform/devices: sysfs is not mounted", "mount -t sysfs sysfs /sys")
		} else {
			r.add("device", Fail, fmt.Sprintf("no platform device %s: the devicetree has no enabled node at %#x", p.name(), p.Phys),
				"check the address against the SoC's reference manual, and that the node's status is \"okay\" in the DTB")
		}
		return r, st
	}
	st.mac, st.known = LookupMAC(t.machine(), p.Phys)
	st.nodeDir, st.dtPath, _ = t.nodeDir(p.name())
	st.dtb = t.boardDTB()
	p.checkSoC(r, &st)
	p.checkDriver(r, &st)
	p.checkIOMem(r)
	p.checkRuntimePM(r, &st)
	p.checkClocks(r, &st)
	p.checkPHYReset(r, &st, holdingLine)
	p.checkPHYSupply(r, &st)
	p.checkDevMem(r)
	p.checkHugePages(r, &st)
	p.checkUncached(r)
	return r, st
}

func (p Platform) checkSoC(r *Report, st *state) {
	t := p.tree()
	m := t.machine()
	switch {
	case st.known:
		r.What = fmt.Sprintf("%s %s", st.mac.SoC, strings.ToUpper(st.mac.Kind))
		r.add("soc", Pass, fmt.Sprintf("%s %s at %#x (machine %s)", st.mac.SoC, strings.ToUpper(st.mac.Kind), p.Phys, m[0]), "")
		if p.Kind != "" && !sameKind(p.Kind, st.mac.Kind) {
			r.add("family", Fail, fmt.Sprintf("%#x is the %s's %s, not a %s", p.Phys, st.mac.SoC, strings.ToUpper(st.mac.Kind), p.Kind),
				fmt.Sprintf("name it %s@%#x", st.mac.Kind, p.Phys))
		}
	case len(m) == 0:
		r.add("soc", Unknown, "no devicetree (/sys/firmware/devicetree/base): the MAC's clocks cannot be named", "")
	default:
		r.add("soc", Unknown, fmt.Sprintf("machine %q has no MAC at %#x that xnic knows: its clocks cannot be checked", strings.Join(m, ", "), p.Phys), "")
	}
}

func sameKind(family, kind string) bool {
	return family == kind || (family == "dwmac" && kind == "eqos")
}

// fdtput is the DTB edit that hands the node to simple-pm-bus.
func (st *state) fdtput() string {
	node := st.dtPath
	if node == "" {
		node = "NODE"
	}
	if st.dtb != "" {
		return fmt.Sprintf("fdtput -t s %s %s compatible %s (if that is the DTB your bootloader loads; then reboot)", st.dtb, node, compatPMBus)
	}
	return fmt.Sprintf("fdtput -t s BOARD.dtb %s compatible %s (BOARD.dtb: the DTB your bootloader loads; then reboot)", node, compatPMBus)
}

func (p Platform) checkDriver(r *Report, st *state) {
	var err error
	st.driver, err = p.tree().link(p.devPath("driver"))
	switch {
	case err != nil:
		r.add("driver", Unknown, err.Error(), "")
	case st.driver == drvFEC:
		r.add("driver", Fail, "the kernel's fec driver holds the MAC (its rings, interrupts and PHY); it has no unbind file (fec_main.c sets suppress_bind_attrs), and removing it gates the MAC's clocks (fec_drv_remove)",
			"hand the node to simple-pm-bus in the DTB: "+st.fdtput()+"; on NXP BSP kernels use NXP's fec-uio DTB instead")
	case st.driver == drvDWMAC:
		r.add("driver", Fail, "the kernel's imx-dwmac driver holds the MAC; unbinding it gates stmmaceth and pclk",
			"hand the node to simple-pm-bus in the DTB: "+st.fdtput())
	case st.driver == drvSimplePMBus:
		r.add("driver", Pass, "simple-pm-bus: it enables the node's clocks on runtime resume and claims no registers", "")
	case st.driver == drvFECUIO:
		r.add("driver", Pass, "NXP's fec-uio holds the MAC's clocks on (BSP kernel)", "")
	case st.driver == "":
		r.add("driver", Pass, "no kernel driver: nothing holds the MAC, and nothing holds its clocks on either (see the clock checks)", "")
	default:
		r.add("driver", Fail, fmt.Sprintf("bound to the kernel driver %q", st.driver),
			fmt.Sprintf("echo %s > /sys/bus/platform/drivers/%s/unbind, or hand the node to simple-pm-bus: %s", p.name(), st.driver, st.fdtput()))
	}
}

func (p Platform) checkIOMem(r *Report) {
	lines, err := p.tree().iomem()
	if err != nil {
		r.add("iomem", Unknown, err.Error(), "")
		return
	}
	var claims []string
	zero := true
	for _, l := range lines {
		if l.Lo != 0 || l.Hi != 0 {
			zero = false
		}
		if l.Lo <= p.Phys && p.Phys <= l.Hi && strings.Contains(l.Name, p.name()) {
			claims = append(claims, fmt.Sprintf("%x-%x : %s", l.Lo, l.Hi, l.Name))
		}
	}
	switch {
	case zero && len(lines) > 0:
		r.add("iomem", Unknown, "/proc/iomem shows no addresses (not root)", "run as root")
	case len(claims) > 0:
		r.add("iomem", Fail, "a kernel driver claims the registers: "+strings.Join(claims, "; ")+
			" (with CONFIG_IO_STRICT_DEVMEM /dev/mem refuses the range with EPERM, and revoke_iomem unmaps it from anyone who mapped it before)",
			"free the range: the driver that claims it must go (see the driver check)")
	default:
		r.add("iomem", Pass, "no driver claims the registers", "")
	}
}

func (p Platform) checkRuntimePM(r *Report, st *state) {
	t := p.tree()
	status, err := t.read(p.devPath("power/runtime_status"))
	if err != nil {
		r.add("runtime-pm", Unknown, err.Error(), "")
		return
	}
	st.control, _ = t.read(p.devPath("power/control"))
	detail := fmt.Sprintf("runtime_status %s, control %s", status, st.control)
	switch {
	case st.driver != drvSimplePMBus:
		r.add("runtime-pm", Unknown, detail+" (only simple-pm-bus turns runtime PM into the MAC's clocks)", "")
	case status == "active" && st.control == "on":
		r.add("runtime-pm", Pass, detail, "")
	case st.control != "on":
		r.add("runtime-pm", Pass, detail+": xnic sets power/control=on while a port is open, which resumes the device and so enables every clock of the node", "")
	default:
		r.add("runtime-pm", Fail, detail+": simple-pm-bus gates the clocks when the device suspends",
			fmt.Sprintf("echo on > /sys/bus/platform/devices/%s/power/control (xnic does it while a port is open)", p.name()))
	}
}

func (p Platform) checkClocks(r *Report, st *state) {
	if !st.known {
		return
	}
	t := p.tree()
	debugfs := false
	if fi, err := os.Stat(t.path("sys/kernel/debug/clk")); err == nil && fi.IsDir() {
		debugfs = true
	}
	for _, c := range st.mac.Clocks {
		name := "clock " + c.Con
		what := c.Debugfs
		if c.Bus {
			what += ", a bus gate: a register access with it off hangs the SoC"
		}
		if !debugfs {
			if st.driver == drvSimplePMBus && r.status("runtime-pm") == Pass {
				r.add(name, Pass, what+": on (simple-pm-bus holds every clock of the node while runtime-active)", "")
				continue
			}
			r.add(name, Unknown, what+": /sys/kernel/debug/clk is not there to say",
				"mount -t debugfs none /sys/kernel/debug (as root)")
			continue
		}
		v, err := t.read("sys/kernel/debug/clk/" + c.Debugfs + "/clk_enable_count")
		n, perr := strconv.Atoi(v)
		switch {
		case err != nil || perr != nil:
			r.add(name, Unknown, fmt.Sprintf("%s: enable count unreadable (%v)", what, errors.Join(err, perr)), "")
		case n > 0:
			r.add(name, Pass, fmt.Sprintf("%s: enable count %d", what, n), "")
		case st.driver == drvSimplePMBus && st.control != "on":
			r.add(name, Pass, what+": gated now; simple-pm-bus enables it when xnic sets power/control=on", "")
		default:
			r.add(name, Fail, what+": enable count 0, the clock is gated (clk_ignore_unused does not change this: it only skips the boot-time sweep)",
				p.clockFix(st))
		}
	}
	if st.mac.Kind == "eqos" && debugfs {
		p.checkTxClock(r, st)
	}
}

func (p Platform) clockFix(st *state) string {
	if st.driver == drvSimplePMBus {
		return fmt.Sprintf("echo on > /sys/bus/platform/devices/%s/power/control", p.name())
	}
	return "hand the node to simple-pm-bus, which holds its clocks on: " + st.fdtput() + "; then xnic sets power/control itself"
}

// status is the status of the first check named name (Unknown if none).
func (r *Report) status(name string) Status {
	c, _ := r.Check(name)
	return c.Status
}

func (p Platform) checkDevMem(r *Report) {
	t := p.tree()
	lock, err := t.read("sys/kernel/security/lockdown")
	if err == nil && !strings.Contains(lock, "[none]") {
		r.add("devmem", Fail, "kernel lockdown is on ("+lock+"): /dev/mem is closed to everyone",
			"boot without lockdown (Secure Boot enables it: lockdown=none is refused then)")
		return
	}
	var notes []string
	if err != nil {
		notes = append(notes, "lockdown unknown (no securityfs)")
	} else {
		notes = append(notes, "lockdown none")
	}
	v, found := t.kernelConfig("IO_STRICT_DEVMEM")
	cmdline, _ := t.read("proc/cmdline")
	switch {
	case !found:
		notes = append(notes, "kernel config not found: IO_STRICT_DEVMEM unknown")
	case v == "y" && strings.Contains(" "+cmdline+" ", " iomem=relaxed "):
		notes = append(notes, "IO_STRICT_DEVMEM=y relaxed by iomem=relaxed")
	case v == "y":
		notes = append(notes, "IO_STRICT_DEVMEM=y: only ranges no driver claims may be mapped")
	default:
		notes = append(notes, "IO_STRICT_DEVMEM off")
	}
	r.add("devmem", Pass, strings.Join(notes, "; "), "")
}

func (p Platform) checkHugePages(r *Report, st *state) {
	t := p.tree()
	dir := "sys/kernel/mm/hugepages/hugepages-2048kB/"
	total, e1 := t.read(dir + "nr_hugepages")
	free, e2 := t.read(dir + "free_hugepages")
	if e1 != nil || e2 != nil {
		r.add("hugepages", Unknown, "no 2 MiB huge page pool in sysfs", "")
		return
	}
	if n, _ := strconv.Atoi(free); n == 0 {
		r.add("hugepages", Fail, fmt.Sprintf("%s reserved, none free", total),
			"boot with hugepages=64, or echo 64 > /proc/sys/vm/nr_hugepages")
		return
	}
	limit := uint64(1 << 32)
	if st.known {
		limit = st.mac.DMALimit
	}
	lines, err := t.iomem()
	var high uint64
	for _, l := range lines {
		if err == nil && l.Depth == 0 && l.Name == "System RAM" && l.Hi >= limit {
			high += l.Hi - max(l.Lo, limit) + 1
		}
	}
	if high > 0 {
		r.add("hugepages", Unknown, fmt.Sprintf("%s free of %s, but %d MiB of RAM lie above the MAC's reach (%#x): a page there is refused at allocation",
			free, total, high>>20, limit), "reserve the pages early (hugepages= on the kernel command line) or limit RAM with mem=")
		return
	}
	r.add("hugepages", Pass, fmt.Sprintf("%s free of %s, all RAM below %#x", free, total, limit), "")
}

func (p Platform) checkUncached(r *Report) {
	if p.UncachedSize == 0 {
		return
	}
	lines, err := p.tree().iomem()
	if err != nil {
		r.add("uncached", Unknown, err.Error(), "")
		return
	}
	lo, hi := p.UncachedPhys, p.UncachedPhys+p.UncachedSize-1
	for _, l := range lines {
		if l.Depth != 0 || l.Lo > hi || l.Hi < lo {
			continue
		}
		if l.Name == "System RAM" {
			if l.Lo <= lo && hi <= l.Hi {
				r.add("uncached", Fail, fmt.Sprintf("%#x+%#x is System RAM the kernel uses", lo, p.UncachedSize),
					"reserve it (a reserved-memory node with no-map, or RAM above mem=)")
				return
			}
		}
	}
	r.add("uncached", Pass, fmt.Sprintf("%#x+%#x is not RAM the kernel hands out", lo, p.UncachedSize), "")
}

// phyReset finds the PHY's reset line: the node's phy-handle, that PHY's
// reset-gpios, and the gpiochip whose controller has that phandle.
func (p Platform) phyReset(st *state) (*PHYReset, error) {
	if st.nodeDir == "" {
		return nil, errors.New("the device has no of_node")
	}
	ph, err := dtCells(filepath.Join(st.nodeDir, "phy-handle"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil || len(ph) != 1 {
		return nil, fmt.Errorf("phy-handle: %v", err)
	}
	t := p.tree()
	phy := t.findPhandle(st.nodeDir, ph[0])
	if phy == "" {
		return nil, fmt.Errorf("no node has phandle %#x (the phy-handle)", ph[0])
	}
	cells, err := dtCells(filepath.Join(phy, "reset-gpios"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil || len(cells) < 3 {
		return nil, fmt.Errorf("%s/reset-gpios: want <&gpio LINE FLAGS> (%v)", phy, err)
	}
	rs := &PHYReset{Line: cells[1], ActiveLow: cells[2]&1 != 0, PHYNode: phy}
	if us, err := dtCells(filepath.Join(phy, "reset-deassert-us")); err == nil && len(us) == 1 {
		rs.Deassert = time.Duration(us[0]) * time.Microsecond
	}
	chips, _ := os.ReadDir(t.path("sys/bus/gpio/devices"))
	for _, c := range chips {
		dev, err := filepath.EvalSymlinks(t.path("sys/bus/gpio/devices/" + c.Name()))
		if err != nil {
			continue
		}
		if v, err := dtCells(filepath.Join(dev, "..", "of_node", "phandle")); err == nil && len(v) == 1 && v[0] == cells[0] {
			rs.ChipName, rs.Chip = c.Name(), t.path("dev/"+c.Name())
			return rs, nil
		}
	}
	return nil, fmt.Errorf("no gpiochip in /sys/bus/gpio/devices belongs to the controller with phandle %#x (is its driver loaded?)", cells[0])
}

func (p Platform) checkPHYReset(r *Report, st *state, holding bool) {
	rs, err := p.phyReset(st)
	switch {
	case err != nil:
		r.add("phy-reset", Unknown, err.Error(), "")
		return
	case rs == nil:
		r.add("phy-reset", Pass, "the PHY has no reset-gpios in the devicetree", "")
		return
	}
	st.reset = rs
	where := fmt.Sprintf("%s line %d (%s)", rs.ChipName, rs.Line, filepath.Base(rs.PHYNode))
	info, err := p.gpio().Info(rs.Chip, rs.Line)
	switch {
	case err != nil:
		r.add("phy-reset", Unknown, where+": "+err.Error(), "")
	case holding && info.Used && info.Consumer == consumerName:
		r.add("phy-reset", Pass, where+": held released by xnic", "")
	case info.Used:
		r.add("phy-reset", Fail, fmt.Sprintf("%s: held by %q, so xnic cannot release it", where, info.Consumer),
			"the kernel holds it while its MAC driver or PHY is bound (see the driver check); phy_detach leaves the PHY in reset on every close")
	default:
		r.add("phy-reset", Pass, where+": free; xnic drives it inactive (PHY out of reset) while the port is open", "")
	}
}

// checkPHYSupply follows the node's phy-supply to its regulator in
// /sys/class/regulator (matched by the of_node's phandle). fec enables it in
// probe and disables it in fec_drv_remove and suspend; simple-pm-bus never
// touches it, and the regulator core turns off unused regulators late in
// boot (regulator_late_cleanup) unless the DT says regulator-always-on.
func (p Platform) checkPHYSupply(r *Report, st *state) {
	if st.nodeDir == "" {
		return
	}
	ph, err := dtCells(filepath.Join(st.nodeDir, "phy-supply"))
	if err != nil || len(ph) != 1 {
		return // no phy-supply: the PHY's power is not the MAC node's business
	}
	t := p.tree()
	regs, _ := os.ReadDir(t.path("sys/class/regulator"))
	for _, e := range regs {
		dir := "sys/class/regulator/" + e.Name()
		v, err := dtCells(t.path(dir + "/of_node/phandle"))
		if err != nil || len(v) != 1 || v[0] != ph[0] {
			continue
		}
		name, _ := t.read(dir + "/name")
		state, _ := t.read(dir + "/state")
		users, _ := t.read(dir + "/num_users")
		detail := fmt.Sprintf("%s (%s): %s, %s user(s)", name, e.Name(), state, users)
		if state == "enabled" {
			r.add("phy-supply", Pass, detail, "")
			return
		}
		node, _ := filepath.EvalSymlinks(t.path(dir + "/of_node"))
		path := "REGULATOR_NODE"
		if base := t.dtBase(); base != "" {
			if b, e := filepath.EvalSymlinks(base); e == nil {
				if rel, e := filepath.Rel(b, node); e == nil && !strings.HasPrefix(rel, "..") {
					path = "/" + filepath.ToSlash(rel)
				}
			}
		}
		r.add("phy-supply", Fail, detail+": the PHY has no power, and user space cannot turn a regulator on",
			fmt.Sprintf("keep it on from boot: fdtput -t s BOARD.dtb %s regulator-always-on \"\" (then reboot)", path))
		return
	}
	r.add("phy-supply", Unknown, fmt.Sprintf("the node's phy-supply (phandle %#x) matches no regulator in /sys/class/regulator", ph[0]), "")
}
