package preflight_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/preflight"
)

// The guest side of internal/vmtest's TestHandoverQEMU, on QEMU's imx8mp-evk
// with Debian's arm64 kernel. XNIC_HANDOVER_STAGE picks the boot:
//
//   - "kernel" (the stock DTB): the guest loads fec, which binds the FEC;
//     the interface goes up and down; then every xnic command on the MAC
//     must refuse with the reason, and Debian's /dev/mem must refuse the
//     range too (IO_STRICT_DEVMEM). After rmmod fec its clocks are gated
//     and xnic still refuses, for the clocks.
//   - "handover" (the DTB edited with fdtput: the node's compatible is
//     simple-pm-bus): xnic doctor passes, and a hand-over holds the clocks
//     on and the PHY out of reset for as long as it is open, then gives both
//     back. The fec package's xnic tests then pass frames with the host.
//
// XNIC_VMTEST_MODULES lists the modules to load, in order; XNIC_BIN is xnic.

const (
	vmDev      = "30be0000.ethernet"
	vmPlatform = "fec@0x30be0000"
	vmSysDev   = "/sys/bus/platform/devices/" + vmDev
)

func vmStage(t *testing.T, want string) {
	if os.Getenv("XNIC_VMTEST") != "1" || os.Getenv("XNIC_HANDOVER_STAGE") != want {
		t.Skipf("not the %q boot of internal/vmtest's TestHandoverQEMU", want)
	}
}

func loadModules(t *testing.T) {
	for _, m := range strings.Split(os.Getenv("XNIC_VMTEST_MODULES"), ":") {
		if m == "" {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			t.Fatalf("finit_module %s: %v", m, err)
		}
	}
}

// waitDriver waits until the MAC's node is bound to driver ("" for none).
func waitDriver(t *testing.T, driver string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, _ := os.Readlink(vmSysDev + "/driver")
		got := ""
		if l != "" {
			got = filepath.Base(l)
		}
		if got == driver {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: driver %q after %v, want %q", vmDev, got, timeout, driver)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountDebugfs mounts debugfs (the clocks' enable counts) and securityfs
// (lockdown), as systemd does on a board.
func mountDebugfs(t *testing.T) {
	for _, m := range []struct{ fs, dir string }{{"debugfs", "/sys/kernel/debug"}, {"securityfs", "/sys/kernel/security"}} {
		if err := unix.Mount(m.fs, m.dir, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			t.Fatalf("mount %s: %v", m.fs, err)
		}
	}
}

// setLink sets IFF_UP on the interface, as `ip link set up|down` does.
func setLink(t *testing.T, name string, up bool) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatalf("SIOCGIFFLAGS %s: %v", name, err)
	}
	flags := ifr.Uint16()
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("SIOCSIFFLAGS %s up=%v: %v", name, up, err)
	}
}

// runXnic runs XNIC_BIN and returns its exit code and both outputs.
func runXnic(t *testing.T, args ...string) (int, string) {
	t.Helper()
	bin := os.Getenv("XNIC_BIN")
	if bin == "" {
		t.Fatal("XNIC_BIN not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("xnic %s: %v", strings.Join(args, " "), err)
	return -1, ""
}

func vmRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// vmPlatformCommands are the commands that open a port, with what each needs.
var vmPlatformCommands = [][]string{
	{"info"}, {"regs"}, {"stats"}, {"link"}, {"phy"}, {"ptp", "get"}, {"reg", "0x4"}, {"selftest"},
	{"coalesce"}, {"hwmeta", "--count", "1", "--timeout", "1s"}, {"pktgen", "--count", "1"},
	{"run", "--prog", "/xdp/xdp_macswap_tx.o", "--duration", "1s"},
}

// refuseAll runs port commands on the MAC and wants each refused by the
// preflight with every string of want in its message.
func refuseAll(t *testing.T, cmds [][]string, want ...string) {
	t.Helper()
	for _, c := range cmds {
		args := append([]string{c[0], "--platform", vmPlatform}, c[1:]...)
		began := time.Now()
		code, out := runXnic(t, args...)
		t.Logf("xnic %s: exit %d in %v", c[0], code, time.Since(began).Round(time.Millisecond))
		ok := code == 1 && strings.Contains(out, "refused before touching a register")
		for _, w := range want {
			ok = ok && strings.Contains(out, w)
		}
		if !ok {
			t.Errorf("xnic %s: exit %d, want 1 and the preflight's refusal with %q:\n%s", strings.Join(args, " "), code, want, out)
		}
	}
}

func TestVMKernelHeld(t *testing.T) {
	vmStage(t, "kernel")
	loadModules(t)
	waitDriver(t, "fec", time.Minute)
	ents, err := os.ReadDir(vmSysDev + "/net")
	if err != nil || len(ents) != 1 {
		t.Fatalf("fec bound but %s/net lists %v (%v)", vmSysDev, ents, err)
	}
	ifname := ents[0].Name()
	// The kernel's driver touches the MAC: open (reset, rings, PHY out of
	// reset), link, close (phy_detach asserts the PHY reset).
	setLink(t, ifname, true)
	deadline := time.Now().Add(20 * time.Second)
	for vmRead(t, "/sys/class/net/"+ifname+"/operstate") != "up" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s up: operstate %s, carrier %s", ifname, vmRead(t, "/sys/class/net/"+ifname+"/operstate"),
		vmRead(t, "/sys/class/net/"+ifname+"/carrier"))
	setLink(t, ifname, false)
	time.Sleep(500 * time.Millisecond) // fec's runtime autosuspend is 100 ms (FEC_MDIO_PM_TIMEOUT)
	mountDebugfs(t)

	// Debian's kernel (IO_STRICT_DEVMEM) refuses the claimed range itself.
	if f, err := os.OpenFile("/dev/mem", os.O_RDWR|os.O_SYNC, 0); err == nil {
		_, merr := unix.Mmap(int(f.Fd()), 0x30be0000, 0x1000, unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if !errors.Is(merr, unix.EPERM) {
			t.Errorf("mmap of /dev/mem at the claimed FEC: %v, want EPERM (IO_STRICT_DEVMEM)", merr)
		}
	}
	refuseAll(t, vmPlatformCommands, "suppress_bind_attrs", "compatible simple-pm-bus")
	code, out := runXnic(t, "doctor", vmPlatform)
	t.Logf("xnic doctor, fec bound, interface down:\n%s", out)
	for _, w := range []string{"FAIL    driver", "FAIL    iomem", "PASS    soc", "fdtput -t s BOARD.dtb /soc@0/bus@30800000/ethernet@30be0000 compatible simple-pm-bus",
		"lockdown none; IO_STRICT_DEVMEM=y"} {
		if code != 1 || !strings.Contains(out, w) {
			t.Errorf("doctor (exit %d) lacks %q", code, w)
		}
	}

	// rmmod fec: the claim goes, the clocks stay gated (fec_drv_remove).
	if err := unix.DeleteModule("fec", unix.O_NONBLOCK); err != nil {
		t.Fatalf("delete_module fec: %v", err)
	}
	waitDriver(t, "", 10*time.Second)
	for _, c := range []string{"enet1_root_clk", "sim_enet_root_clk"} {
		if n := vmRead(t, "/sys/kernel/debug/clk/"+c+"/clk_enable_count"); n != "0" {
			t.Errorf("%s enable count %s after rmmod fec, want 0", c, n)
		}
	}
	refuseAll(t, vmPlatformCommands[:2], "enet1_root_clk", "enable count 0")
	code, out = runXnic(t, "doctor", vmPlatform)
	t.Logf("xnic doctor after rmmod fec:\n%s", out)
	if code != 1 || !strings.Contains(out, "PASS    driver") || !strings.Contains(out, "FAIL    clock ipg") {
		t.Errorf("doctor after rmmod (exit %d) does not pass the driver and fail the ipg clock", code)
	}
}

func TestVMHandedOver(t *testing.T) {
	vmStage(t, "handover")
	loadModules(t)
	waitDriver(t, "simple-pm-bus", time.Minute)
	mountDebugfs(t)
	count := func(c string) string { return vmRead(t, "/sys/kernel/debug/clk/"+c+"/clk_enable_count") }
	t.Logf("as booted: runtime_status %s, control %s, enet1_root_clk %s", vmRead(t, vmSysDev+"/power/runtime_status"),
		vmRead(t, vmSysDev+"/power/control"), count("enet1_root_clk"))
	code, out := runXnic(t, "doctor", vmPlatform)
	t.Logf("xnic doctor, handed over:\n%s", out)
	if code != 0 || !strings.Contains(out, "PASS    driver") || !strings.Contains(out, "simple-pm-bus") {
		t.Fatalf("doctor on the handed-over FEC: exit %d", code)
	}

	p := preflight.Platform{Phys: 0x30be0000, Kind: "fec"}
	h, err := p.Open()
	if err != nil {
		t.Fatalf("hand-over: %v", err)
	}
	if s := vmRead(t, vmSysDev+"/power/runtime_status"); s != "active" {
		t.Errorf("runtime_status %s while open, want active", s)
	}
	for _, c := range []string{"enet1_root_clk", "sim_enet_root_clk", "enet_timer", "enet_ref", "enet_phy_ref"} {
		if n := count(c); n == "0" {
			t.Errorf("clock %s off while the port is open", c)
		}
	}
	rc, _ := h.Report.Check("phy-reset")
	t.Logf("while open: %s %s", rc.Status, rc.Detail)
	if rc.Status != preflight.Pass || !strings.Contains(rc.Detail, "held released by xnic") {
		t.Errorf("PHY reset line while open: %s %s", rc.Status, rc.Detail)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if c := vmRead(t, vmSysDev+"/power/control"); c != "auto" {
		t.Errorf("power/control %s after Close, want auto back", c)
	}
	rc, _ = p.Inspect().Check("phy-reset")
	if !strings.Contains(rc.Detail, "free") {
		t.Errorf("PHY reset line after Close: %s", rc.Detail)
	}
	if code, out := runXnic(t, "info", "--platform", vmPlatform); code != 0 {
		t.Errorf("xnic info on the handed-over FEC: exit %d\n%s", code, out)
	}
}
