package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xnic-dev/xnic/vfio"
)

// PCI names a PCI function to inspect.
type PCI struct {
	// Sysfs is where to read (vfio.Default on a host; a vfiotest tree in
	// tests). Its StateDir holds `xnic bind`'s record of the old driver.
	Sysfs vfio.Sysfs
	Addr  string // "0000:03:00.0" or "03:00.0"
	// Driver names xnic's driver family for a vendor and device ID, false
	// when xnic has none; nil skips the check.
	Driver func(vendor, device uint16) (string, bool)
}

// PCI configuration space (PCI Local Bus 3.0 §6.2): the Command register's
// Bus Master Enable, the Status register's Capabilities List bit, the
// capability pointer, and the MSI-X capability ID (§6.8.2).
const (
	cfgCommand      = 0x04
	cfgStatus       = 0x06
	cfgCapPtr       = 0x34
	cmdBusMaster    = 1 << 2
	statusCapList   = 1 << 4
	capIDMSIX       = 0x11
	capWalkMaxSteps = 48
)

// Inspect reads what sysfs says of the function: IOMMU group, whether the
// group is viable, vfio-pci bound, the driver `xnic bind` took it from, and
// from its config file the MSI-X capability and bus mastering. It opens no
// VFIO file and writes nothing.
func (p PCI) Inspect() *Report {
	r := &Report{Bus: "pci", Port: p.Addr}
	d, err := p.Sysfs.Device(p.Addr)
	if err != nil {
		r.add("device", Fail, err.Error(), "list network devices with `xnic list`")
		return r
	}
	r.Port = d.Addr
	r.What = fmt.Sprintf("%04x:%04x", d.Vendor, d.Device)
	r.add("device", Pass, fmt.Sprintf("%04x:%04x class %06x", d.Vendor, d.Device, d.Class), "")
	if p.Driver != nil {
		if fam, ok := p.Driver(d.Vendor, d.Device); ok {
			r.add("xnic-driver", Pass, "xnic's "+fam+" driver", "")
		} else {
			r.add("xnic-driver", Fail, fmt.Sprintf("xnic has no driver for %04x:%04x", d.Vendor, d.Device), "`xnic list` shows the devices xnic drives")
		}
	}
	if d.IOMMUGroup < 0 {
		r.add("iommu", Fail, "no IOMMU group: the kernel has no IOMMU enabled for it",
			"boot with intel_iommu=on (Intel) or amd_iommu=on (AMD), usually with iommu=pt, and enable VT-d / AMD-Vi in the firmware")
	} else {
		r.add("iommu", Pass, fmt.Sprintf("IOMMU group %d", d.IOMMUGroup), "")
		p.checkGroup(r, d)
	}
	switch d.Driver {
	case "vfio-pci":
		r.add("vfio-pci", Pass, "bound to vfio-pci", "")
	case "":
		r.add("vfio-pci", Fail, "no driver bound", "xnic bind "+d.Addr)
	default:
		r.add("vfio-pci", Fail, fmt.Sprintf("bound to the kernel driver %q", d.Driver), "xnic bind "+d.Addr+" (xnic unbind gives it back)")
	}
	p.checkPrevious(r, d)
	p.checkConfig(r, d)
	return r
}

func (p PCI) checkGroup(r *Report, d vfio.PCIDevice) {
	ms, err := p.Sysfs.GroupMembers(d.IOMMUGroup)
	if err != nil {
		r.add("group", Unknown, err.Error(), "")
		return
	}
	var blockers []string
	for _, m := range ms {
		if m.Addr != d.Addr && !m.Harmless() {
			blockers = append(blockers, fmt.Sprintf("%s (%s)", m.Addr, m.Driver))
		}
	}
	if len(blockers) > 0 {
		r.add("group", Fail, fmt.Sprintf("group %d also holds devices bound to host drivers: %s; VFIO gives out a group only whole",
			d.IOMMUGroup, strings.Join(blockers, ", ")), "xnic bind each of them, or unbind them")
		return
	}
	r.add("group", Pass, fmt.Sprintf("group %d viable (%d device(s))", d.IOMMUGroup, len(ms)), "")
}

// checkPrevious reports the driver the function had before `xnic bind`, from
// the record vfio.Sysfs.Bind leaves in StateDir.
func (p PCI) checkPrevious(r *Report, d vfio.PCIDevice) {
	if p.Sysfs.StateDir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(p.Sysfs.StateDir, d.Addr+".json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if d.Driver == "vfio-pci" {
			r.add("previous-driver", Unknown, "bound to vfio-pci, but not by `xnic bind`: the driver it had is not recorded", "")
		}
		return
	case err != nil:
		r.add("previous-driver", Unknown, err.Error(), "")
		return
	}
	var st struct {
		Driver string `json:"driver"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		r.add("previous-driver", Unknown, "corrupt record: "+err.Error(), "")
		return
	}
	had := st.Driver
	if had == "" {
		had = "no driver"
	}
	r.add("previous-driver", Pass, fmt.Sprintf("%s before `xnic bind` (its close and remove paths left the device as xnic finds it; `xnic unbind` gives it back)", had), "")
}

func (p PCI) checkConfig(r *Report, d vfio.PCIDevice) {
	path := filepath.Join(p.Sysfs.Root, "bus", "pci", "devices", d.Addr, "config")
	cfg, err := os.ReadFile(path)
	if err != nil || len(cfg) < 64 {
		r.add("msix", Unknown, fmt.Sprintf("config space unreadable (%v, %d bytes)", err, len(cfg)), "run as root")
		return
	}
	le16 := func(off int) uint16 { return uint16(cfg[off]) | uint16(cfg[off+1])<<8 }
	// Without root sysfs returns only the first 64 bytes (the header).
	found, walked := false, false
	if le16(cfgStatus)&statusCapList != 0 && len(cfg) > 64 {
		walked = true
		for ptr, n := int(cfg[cfgCapPtr]&^3), 0; ptr >= 0x40 && ptr+1 < len(cfg) && n < capWalkMaxSteps; n++ {
			if cfg[ptr] == capIDMSIX {
				found = true
				break
			}
			ptr = int(cfg[ptr+1] &^ 3)
		}
	}
	switch {
	case found:
		r.add("msix", Pass, "MSI-X capability present", "")
	case !walked && le16(cfgStatus)&statusCapList != 0:
		r.add("msix", Unknown, "only the 64-byte header is readable (not root)", "run as root")
	default:
		r.add("msix", Fail, "no MSI-X capability: xnic's drivers take their interrupts as MSI-X vectors", "")
	}
	if le16(cfgCommand)&cmdBusMaster != 0 {
		r.add("bus-master", Pass, "bus mastering on", "")
	} else {
		r.add("bus-master", Pass, "bus mastering off, as a kernel driver's remove path or vfio-pci leaves it; xnic sets it when it opens the device", "")
	}
}
