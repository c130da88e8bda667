package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// mounts adds to the base /run and huge pages (the arm64 platform tier's
// DMA). A 32-bit ARM guest gets no hugetlbfs: its DMA memory is the uncached
// range above mem= (physmem has no cached DMA memory there), and Debian's
// non-LPAE armmp kernel has no hugetlbfs to mount.
var mounts = func() []guestrt.Mount {
	ms := append(append([]guestrt.Mount(nil), guestrt.BaseMounts...),
		guestrt.Mount{Src: "tmpfs", Dst: "/run", FSType: "tmpfs", Data: "mode=0755"})
	if runtime.GOARCH != "arm" {
		ms = append(ms, guestrt.Mount{Src: "hugetlbfs", Dst: "/dev/hugepages", FSType: "hugetlbfs"})
	}
	return ms
}()

func main() {
	guestrt.Program = "guestinit"
	guestrt.Say("boot")
	failures, err := run()
	if err != nil {
		guestrt.Say("fatal %v", err)
	} else {
		guestrt.Say("done %d", failures)
	}
	guestrt.PowerOff()
}

func run() (int, error) {
	if err := guestrt.MountAll(mounts); err != nil {
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
	err = guestrt.OpenResults(tty)
	guestrt.Step("results", err, tty)
	defer guestrt.DmesgTail(cfg.DmesgLines)
	if cfg.Vendor == 0 && cfg.Device == 0 {
		return runPlatform(cfg), nil
	}
	for _, m := range cfg.Modules {
		err := guestrt.LoadModule(m)
		guestrt.Step("module", err, filepath.Base(m.Path))
		if err != nil {
			return 0, err
		}
	}
	bdf, err := guestrt.FindDevice(guestrt.PCIDevices, cfg.Vendor, cfg.Device)
	guestrt.Step("find", err, fmt.Sprintf("%s %04x:%04x", bdf, cfg.Vendor, cfg.Device))
	if err != nil {
		return 0, err
	}
	group, err := guestrt.BindVFIO(guestrt.PCIDevices, bdf)
	guestrt.Step("bind", err, fmt.Sprintf("%s vfio-pci group %s", bdf, group))
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
		if drv, _ := os.Readlink(filepath.Join(guestrt.PCIDevices, bdf, "driver")); filepath.Base(drv) != "vfio-pci" {
			_, err := guestrt.BindVFIO(guestrt.PCIDevices, bdf)
			guestrt.Step("rebind", err, fmt.Sprintf("%s was on %q before %s; back on vfio-pci", bdf, filepath.Base(drv), t.Name))
		}
		if code := guestrt.RunTest(t, env); code != 0 {
			failures++
		}
	}
	return failures, nil
}
