package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// runVFIO is netinit's other plan (guestproto.EnvNetMode = "vfio"): bind the
// device to vfio-pci and run the test binaries the host listed against it, with
// XNIC_VFIO_BDF and XNIC_DWMAC_BDF naming it. It returns how many binaries
// failed.
func runVFIO(p *plan) (int, error) {
	bdf, err := findDevice(p.cfg.Vendor, p.cfg.Device)
	step("find", err, bdf)
	if err != nil {
		return 0, err
	}
	group, err := bindVFIO(bdf)
	step("bind", err, fmt.Sprintf("%s vfio-pci group %s", bdf, group))
	if err != nil {
		return 0, err
	}
	env := append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp", "PATH=/bin:/", "XNIC_VMTEST=1",
		"XNIC_VFIO_BDF="+bdf, "XNIC_DWMAC_BDF="+bdf)
	for k, v := range p.cfg.Env {
		env = append(env, k+"="+v)
	}
	failed := 0
	for _, t := range p.cfg.Tests {
		if code := runTest(t, env); code != 0 {
			failed++
		}
	}
	return failed, nil
}

// bindVFIO hands the device to vfio-pci (driver_override, then
// drivers_probe) and returns its IOMMU group once /dev/vfio/<group> exists.
func bindVFIO(bdf string) (string, error) {
	dev := filepath.Join("/sys/bus/pci/devices", bdf)
	g, err := os.Readlink(filepath.Join(dev, "iommu_group"))
	if err != nil {
		return "", fmt.Errorf("%s has no IOMMU group (intel_iommu=on and QEMU's intel-iommu?): %w", bdf, err)
	}
	group := filepath.Base(g)
	if err := os.WriteFile(filepath.Join(dev, "driver_override"), []byte("vfio-pci"), 0); err != nil {
		return group, fmt.Errorf("driver_override: %w", err)
	}
	if drv, err := os.Readlink(filepath.Join(dev, "driver")); err == nil && filepath.Base(drv) != "vfio-pci" {
		if err := os.WriteFile(filepath.Join(dev, "driver", "unbind"), []byte(bdf), 0); err != nil {
			return group, fmt.Errorf("unbind from %s: %w", filepath.Base(drv), err)
		}
	}
	if err := os.WriteFile("/sys/bus/pci/drivers_probe", []byte(bdf), 0); err != nil {
		return group, fmt.Errorf("drivers_probe: %w", err)
	}
	if drv, err := os.Readlink(filepath.Join(dev, "driver")); err != nil || filepath.Base(drv) != "vfio-pci" {
		return group, fmt.Errorf("%s not on vfio-pci after drivers_probe (driver %q, %v)", bdf, drv, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/dev/vfio/" + group); err == nil {
			return group, nil
		}
		if time.Now().After(deadline) {
			return group, fmt.Errorf("/dev/vfio/%s did not appear within 5 s", group)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runTest runs one test binary, relaying its output as the host's line
// protocol expects, and returns its exit code (-1: could not run, killed).
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
	cmd.Env, cmd.Dir, cmd.WaitDelay = env, "/tmp", 5*time.Second
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	pr, pw, err := os.Pipe()
	if err != nil {
		say("out %s| netinit: pipe: %v", t.Name, err)
		say("exit %s -1 0", t.Name)
		return -1
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		say("out %s| netinit: start: %v", t.Name, err)
		say("exit %s -1 0", t.Name)
		return -1
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		say("out %s| %s", t.Name, sc.Text())
	}
	pr.Close()
	code := 0
	if err := cmd.Wait(); err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			say("out %s| netinit: killed after %v", t.Name, timeout)
			code = -1
		}
	}
	say("exit %s %d %.2f", t.Name, code, time.Since(begin).Seconds())
	return code
}
