package main

import (
	"fmt"
	"os"

	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// runVFIO is netinit's other plan (guestproto.EnvNetMode = "vfio"): bind the
// device to vfio-pci and run the test binaries the host listed against it, with
// XNIC_VFIO_BDF and XNIC_DWMAC_BDF naming it. It returns how many binaries
// failed.
func runVFIO(p *plan) (int, error) {
	bdf, err := guestrt.FindDevice(guestrt.PCIDevices, p.cfg.Vendor, p.cfg.Device)
	guestrt.Step("find", err, bdf)
	if err != nil {
		return 0, err
	}
	group, err := guestrt.BindVFIO(guestrt.PCIDevices, bdf)
	guestrt.Step("bind", err, fmt.Sprintf("%s vfio-pci group %s", bdf, group))
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
		if code := guestrt.RunTest(t, env); code != 0 {
			failed++
		}
	}
	return failed, nil
}
