package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

var (
	outMu sync.Mutex
	// out is the console (ttyS0), for people; the kernel prints there too.
	out = bufio.NewWriterSize(os.Stdout, 64<<10)
	// res is guestproto.ResultsTTY, the host's channel: nothing else writes
	// there, so no kernel message can split a line. nil until opened; lines
	// said before that wait in early.
	res   io.Writer
	early []byte
)

// say prints one line for the host, on the results port and the console.
func say(format string, args ...any) {
	line := guestproto.Prefix + fmt.Sprintf(format, args...) + "\n"
	outMu.Lock()
	defer outMu.Unlock()
	out.WriteString(line)
	out.Flush()
	if res != nil {
		io.WriteString(res, line)
	} else {
		early = append(early, line...)
	}
}

// openResults opens the results port and sends it what was said before.
func openResults(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	res = f
	_, err = f.Write(early)
	early = nil
	return err
}

func main() {
	say("boot")
	failures, err := run()
	if err != nil {
		say("fatal %v", err)
	} else {
		say("done %d", failures)
	}
	powerOff()
}

func powerOff() {
	outMu.Lock()
	out.Flush()
	outMu.Unlock()
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Fprintf(os.Stderr, "guestinit: power off: %v\n", err)
	}
	// Not reached on success; if it fails, returning from PID 1 panics the
	// kernel, and panic=-1 with QEMU's -no-reboot ends the VM as well.
	select {}
}

func step(name string, err error, detailOK string) {
	if err != nil {
		say("step %s fail %v", name, err)
		return
	}
	say("step %s ok %s", name, detailOK)
}

func run() (int, error) {
	if err := mountAll(); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(guestproto.ConfigPath)
	if err != nil {
		return 0, fmt.Errorf("read config: %w", err)
	}
	var cfg guestproto.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return 0, fmt.Errorf("parse %s: %w", guestproto.ConfigPath, err)
	}
	tty := guestproto.ResultsTTY
	if cfg.ResultsTTY != "" {
		tty = cfg.ResultsTTY
	}
	err = openResults(tty)
	step("results", err, tty)
	defer dmesgTail(cfg.DmesgLines)
	if cfg.Vendor == 0 && cfg.Device == 0 {
		return runPlatform(cfg), nil
	}
	for _, m := range cfg.Modules {
		err := loadModule(m)
		step("module", err, filepath.Base(m.Path))
		if err != nil {
			return 0, err
		}
	}
	bdf, err := findDevice(pciDevices, cfg.Vendor, cfg.Device)
	step("find", err, fmt.Sprintf("%s %04x:%04x", bdf, cfg.Vendor, cfg.Device))
	if err != nil {
		return 0, err
	}
	group, err := bindVFIO(pciDevices, bdf)
	step("bind", err, fmt.Sprintf("%s vfio-pci group %s", bdf, group))
	if err != nil {
		return 0, err
	}

	failures := 0
	if !smoke(bdf, group, cfg) {
		failures++
	}
	env := append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp", "PATH=/bin:/", "XNIC_VMTEST=1",
		"XNIC_VFIO_BDF="+bdf, "XNIC_IGB_BDF="+bdf)
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	for _, t := range cfg.Tests {
		// A binary that unbinds the device (to test giving it back) might
		// leave it so; every binary starts with the device on vfio-pci.
		if drv, _ := os.Readlink(filepath.Join(pciDevices, bdf, "driver")); filepath.Base(drv) != "vfio-pci" {
			_, err := bindVFIO(pciDevices, bdf)
			step("rebind", err, fmt.Sprintf("%s was on %q before %s; back on vfio-pci", bdf, filepath.Base(drv), t.Name))
		}
		if code := runTest(t, env); code != 0 {
			failures++
		}
	}
	return failures, nil
}

func mountAll() error {
	mounts := []struct{ src, dst, fstype, data string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
		{"tmpfs", "/run", "tmpfs", "mode=0755"},
		{"hugetlbfs", "/dev/hugepages", "hugetlbfs", ""},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.dst, err)
		}
		err := unix.Mount(m.src, m.dst, m.fstype, 0, m.data)
		if errors.Is(err, unix.EBUSY) {
			err = nil // devtmpfs may be automounted
		}
		step("mount", err, m.dst)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	return nil
}

func loadModule(m guestproto.Module) error {
	f, err := os.Open(m.Path)
	if err != nil {
		return fmt.Errorf("open module: %w", err)
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), m.Params, 0)
	if errors.Is(err, unix.EEXIST) {
		return nil // already loaded (or built in)
	}
	if err != nil {
		return fmt.Errorf("finit_module %s: %w", m.Path, err)
	}
	return nil
}

func readHex(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
}

// pciDevices is where sysfs lists PCI devices; drivers_probe is one up.
const pciDevices = "/sys/bus/pci/devices"

// findDevice returns the PCI address of the first device under root (a sysfs
// devices directory) with the given IDs.
func findDevice(root string, vendor, device uint16) (string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	var seen []string
	for _, e := range ents {
		v, err1 := readHex(filepath.Join(root, e.Name(), "vendor"))
		d, err2 := readHex(filepath.Join(root, e.Name(), "device"))
		if err1 != nil || err2 != nil {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %04x:%04x", e.Name(), v, d))
		if uint16(v) == vendor && uint16(d) == device {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no PCI device %04x:%04x; devices: %s", vendor, device, strings.Join(seen, ", "))
}

// bindVFIO hands the device to vfio-pci and returns its IOMMU group. root is
// the sysfs devices directory; drivers_probe is in its parent.
func bindVFIO(root, bdf string) (string, error) {
	dev := filepath.Join(root, bdf)
	g, err := os.Readlink(filepath.Join(dev, "iommu_group"))
	if err != nil {
		return "", fmt.Errorf("%s has no IOMMU group (is intel_iommu=on on the kernel command line and QEMU's intel-iommu device present?): %w", bdf, err)
	}
	group := filepath.Base(g)
	if err := os.WriteFile(filepath.Join(dev, "driver_override"), []byte("vfio-pci"), 0); err != nil {
		return group, fmt.Errorf("driver_override: %w", err)
	}
	if drv, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		if filepath.Base(drv) == "vfio-pci" {
			return group, nil
		}
		if err := os.WriteFile(filepath.Join(dev, "driver", "unbind"), []byte(bdf), 0); err != nil {
			return group, fmt.Errorf("unbind from %s: %w", filepath.Base(drv), err)
		}
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(root), "drivers_probe"), []byte(bdf), 0); err != nil {
		return group, fmt.Errorf("drivers_probe: %w", err)
	}
	drv, err := os.Readlink(filepath.Join(dev, "driver"))
	if err != nil || filepath.Base(drv) != "vfio-pci" {
		return group, fmt.Errorf("%s not bound to vfio-pci after drivers_probe (driver %q, %v)", bdf, drv, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/dev/vfio/" + group); err == nil {
			return group, nil
		}
		if time.Now().After(deadline) {
			return group, fmt.Errorf("/dev/vfio/%s did not appear within 5s", group)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runTest runs one test binary, relaying its output, and returns its exit code
// (-1 when it could not run or was killed).
func runTest(t guestproto.Test, env []string) int {
	say("start %s", t.Name)
	begin := time.Now()
	timeout := time.Duration(t.TimeoutSec) * time.Second
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.Path, t.Args...)
	cmd.Env = env
	cmd.Dir = "/tmp"
	cmd.WaitDelay = 5 * time.Second
	// Its own process group, killed whole on timeout: a child it left behind
	// would hold the output pipe open.
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	pr, pw, err := os.Pipe()
	if err != nil {
		say("out %s| guestinit: pipe: %v", t.Name, err)
		say("exit %s -1 0", t.Name)
		return -1
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		say("out %s| guestinit: start: %v", t.Name, err)
		say("exit %s -1 0", t.Name)
		return -1
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		say("out %s| %s", t.Name, sc.Text())
	}
	pr.Close()
	err = cmd.Wait()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			say("out %s| guestinit: killed after %v", t.Name, timeout)
			code = -1
		}
	}
	say("exit %s %d %.2f", t.Name, code, time.Since(begin).Seconds())
	return code
}

func dmesgTail(n int) {
	if n <= 0 {
		return
	}
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil || size <= 0 {
		size = 1 << 20
	}
	buf := make([]byte, size)
	k, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		say("dmesg| (klogctl: %v)", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(buf[:k]), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		say("dmesg| %s", l)
	}
}
