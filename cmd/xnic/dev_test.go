package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/vfio/vfiotest"
)

// devTree is a fake machine: an 82576 on igb (group 7), a virtio NIC without an
// IOMMU group, a GPU, and an I210 sharing group 9 with an audio function.
func devTree(t *testing.T) (*vfiotest.Sysfs, []string) {
	t.Helper()
	f := vfiotest.New(t)
	f.AddDriver("vfio-pci", "igb", "virtio-pci", "snd_hda_intel")
	f.AddDevice(vfiotest.Device{Addr: "0000:03:00.0", Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: "igb", Group: 7, Native: "igb"})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:03.0", Vendor: 0x1af4, Device: 0x1000, Class: 0x020000, NUMANode: -1, Driver: "virtio-pci", Group: -1})
	f.AddDevice(vfiotest.Device{Addr: "0000:00:02.0", Vendor: 0x1234, Device: 0x1111, Class: 0x030000, Group: 3})
	f.AddDevice(vfiotest.Device{Addr: "0000:04:00.0", Vendor: 0x8086, Device: 0x1533, Class: 0x020000, NUMANode: 1, Driver: "igb", Group: 9, Native: "igb"})
	f.AddDevice(vfiotest.Device{Addr: "0000:04:00.1", Vendor: 0x8086, Device: 0x1234, Class: 0x040300, Driver: "snd_hda_intel", Group: 9})
	devSysfsWrite = f.Write
	t.Cleanup(func() { devSysfsWrite = nil })
	return f, []string{"--sysfs", f.Root, "--state-dir", filepath.Join(t.TempDir(), "state")}
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestListTable(t *testing.T) {
	_, flags := devTree(t)
	code, out, errs := runCmd(append([]string{"list"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and 3 rows:\n%s", out)
	}
	want := [][]string{
		{"BDF", "VENDOR:DEVICE", "DRIVER", "IOMMU", "NUMA", "XNIC"},
		{"0000:00:03.0", "1af4:1000", "virtio-pci", "-", "-", "-"},
		{"0000:03:00.0", "8086:10c9", "igb", "7", "0", "igb"},
		{"0000:04:00.0", "8086:1533", "igb", "9", "1", "igb"},
	}
	for i, l := range lines {
		if got := strings.Fields(l); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d: %q, want %q", i, got, want[i])
		}
	}
	if strings.Contains(out, "0000:00:02.0") {
		t.Error("a display controller was listed")
	}
}

func TestListJSON(t *testing.T) {
	_, flags := devTree(t)
	code, out, errs := runCmd(append([]string{"list", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got []listEntry
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 3 {
		t.Fatalf("%d entries", len(got))
	}
	e := got[1]
	if e.Address != "0000:03:00.0" || e.Vendor != "0x8086" || e.Device != "0x10c9" || e.Class != "0x020000" ||
		e.Driver != "igb" || e.IOMMUGroup == nil || *e.IOMMUGroup != 7 || e.Xnic != "igb" {
		t.Fatalf("%+v", e)
	}
	if got[0].IOMMUGroup != nil || got[0].Xnic != "" || got[0].NUMANode != -1 {
		t.Fatalf("virtio %+v", got[0])
	}
	if !strings.Contains(out, `"iommu_group": null`) {
		t.Fatalf("a device without a group should say null:\n%s", out)
	}
}

func TestListEmptyAndErrors(t *testing.T) {
	empty := vfiotest.New(t)
	code, out, errs := runCmd("list", "--sysfs", empty.Root)
	if code != 0 || out != "" || !strings.Contains(errs, "no PCI network controllers") {
		t.Fatalf("empty: %d %q %q", code, out, errs)
	}
	code, out, _ = runCmd("list", "--json", "--sysfs", empty.Root)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty JSON: %d %q", code, out)
	}
	code, _, errs = runCmd("list", "--sysfs", filepath.Join(t.TempDir(), "nope"))
	if code != 1 || !strings.Contains(errs, "xnic list:") {
		t.Fatalf("missing sysfs: %d %q", code, errs)
	}
	code, _, errs = runCmd("list", "extra")
	if code != 2 || !strings.Contains(errs, "usage: xnic list") {
		t.Fatalf("extra argument: %d %q", code, errs)
	}
	code, _, errs = runCmd("list", "--bogus")
	if code != 2 {
		t.Fatalf("unknown flag: %d %q", code, errs)
	}
	code, _, errs = runCmd("list", "-h")
	if code != 0 || !strings.Contains(errs, "--json") || strings.Contains(errs, "sysfs") {
		t.Fatalf("help: %d %q (the --sysfs flag is hidden)", code, errs)
	}
}

func TestBindUnbindCommands(t *testing.T) {
	f, flags := devTree(t)
	code, out, errs := runCmd(append([]string{"bind", "03:00.0"}, flags...)...)
	if code != 0 {
		t.Fatalf("bind: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "0000:03:00.0: bound to vfio-pci (was igb)") || f.Driver("0000:03:00.0") != "vfio-pci" {
		t.Fatalf("bind: %q, driver %q", out, f.Driver("0000:03:00.0"))
	}
	if errs != "" {
		t.Fatalf("bind of a device alone in its group warned: %q", errs)
	}
	code, out, _ = runCmd(append([]string{"bind", "0000:03:00.0"}, flags...)...)
	if code != 0 || !strings.Contains(out, "already bound") {
		t.Fatalf("second bind: %d %q", code, out)
	}
	// Flags may come first.
	code, out, errs = runCmd(append(append([]string{"unbind"}, flags...), "0000:03:00.0")...)
	if code != 0 || !strings.Contains(out, "0000:03:00.0: bound to igb") || f.Driver("0000:03:00.0") != "igb" {
		t.Fatalf("unbind: %d %q %q", code, out, errs)
	}
	code, _, errs = runCmd(append([]string{"unbind", "0000:03:00.0"}, flags...)...)
	if code != 1 || !strings.Contains(errs, "not bound to vfio-pci") {
		t.Fatalf("second unbind: %d %q", code, errs)
	}
}

func TestBindWarnsAboutGroup(t *testing.T) {
	f, flags := devTree(t)
	code, _, errs := runCmd(append([]string{"bind", "0000:04:00.0"}, flags...)...)
	if code != 0 || f.Driver("0000:04:00.0") != "vfio-pci" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "warning: IOMMU group 9 also holds 0000:04:00.1 (bound to snd_hda_intel)") {
		t.Fatalf("no group warning: %q", errs)
	}
}

func TestBindBadInput(t *testing.T) {
	f, flags := devTree(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bind"}, 2, "usage: xnic bind BDF"},
		{[]string{"bind", "0000:03:00.0", "0000:04:00.0"}, 2, "got 2 arguments"},
		{[]string{"bind", "03:00"}, 2, "malformed PCI address"},
		{[]string{"bind", "0000:03:00.9"}, 2, "function must be 0-7"},
		{[]string{"unbind", "zz"}, 2, "usage: xnic unbind"},
		{[]string{"bind", "0000:05:00.0"}, 1, "no such PCI device"},
		{[]string{"bind", "0000:00:03.0"}, 1, "intel_iommu=on"},
		{[]string{"unbind", "0000:04:00.0"}, 1, "has igb"},
	} {
		code, _, errs := runCmd(append(tc.args, flags...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
	if len(f.Writes()) != 0 {
		t.Fatalf("bad input wrote to sysfs: %v", f.Writes())
	}
	// vfio-pci not loaded: exit 1, and say how to load it.
	os.RemoveAll(filepath.Join(f.Root, "bus/pci/drivers/vfio-pci"))
	code, _, errs := runCmd(append([]string{"bind", "0000:03:00.0"}, flags...)...)
	if code != 1 || !strings.Contains(errs, "modprobe vfio-pci") {
		t.Fatalf("without vfio-pci: %d %q", code, errs)
	}
}
