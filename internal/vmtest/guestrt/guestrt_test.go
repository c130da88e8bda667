package guestrt

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// captureOut redirects Say into a buffer for the test.
func captureOut(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	t.Cleanup(SetConsole(&buf))
	return &buf
}

func fakeDevice(t *testing.T, root, bdf, vendor, device string, group string) string {
	d := filepath.Join(root, bdf)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"vendor": vendor + "\n", "device": device + "\n", "driver_override": "(null)\n"} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if group != "" {
		if err := os.Symlink("../../../kernel/iommu_groups/"+group, filepath.Join(d, "iommu_group")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestFindDevice(t *testing.T) {
	root := filepath.Join(t.TempDir(), "devices")
	fakeDevice(t, root, "0000:00:00.0", "0x8086", "0x29c0", "0")
	fakeDevice(t, root, "0000:00:01.0", "0x8086", "0x10c9", "1")
	bdf, err := FindDevice(root, 0x8086, 0x10c9)
	if err != nil || bdf != "0000:00:01.0" {
		t.Fatalf("findDevice = %q, %v", bdf, err)
	}
	_, err = FindDevice(root, 0x8086, 0x1533)
	if err == nil || !strings.Contains(err.Error(), "0000:00:01.0 8086:10c9") {
		t.Fatalf("absent device: %v, want an error listing what is there", err)
	}
}

func TestBindVFIOErrors(t *testing.T) {
	root := filepath.Join(t.TempDir(), "devices")
	fakeDevice(t, root, "0000:00:02.0", "0x8086", "0x10c9", "")
	if _, err := BindVFIO(root, "0000:00:02.0"); err == nil || !strings.Contains(err.Error(), "intel_iommu=on") {
		t.Errorf("device without IOMMU group: %v, want a hint about intel_iommu=on", err)
	}
	d := fakeDevice(t, root, "0000:00:03.0", "0x8086", "0x10c9", "7")
	// drivers_probe exists but nothing binds: the check afterwards must notice.
	if err := os.WriteFile(filepath.Join(filepath.Dir(root), "drivers_probe"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	group, err := BindVFIO(root, "0000:00:03.0")
	if group != "7" || err == nil || !strings.Contains(err.Error(), "not bound to vfio-pci") {
		t.Errorf("bind that does not take: group %q, %v", group, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "driver_override")); string(b) != "vfio-pci" {
		t.Errorf("driver_override = %q, want vfio-pci", b)
	}
}

func TestRunTestRelaysOutputAndExitCode(t *testing.T) {
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		t.Skip("no /bin/sh")
	}
	buf := captureOut(t)
	code := RunTest(guestproto.Test{Name: "fake", Path: sh, Args: []string{"-c", "echo '--- PASS: TestX (0.01s)'; echo oops >&2; exit 3"}}, nil)
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	got := buf.String()
	for _, want := range []string{"@@xnic start fake\n", "@@xnic out fake| --- PASS: TestX (0.01s)\n", "@@xnic out fake| oops\n", "@@xnic exit fake 3 "} {
		if !strings.Contains(got, want) {
			t.Errorf("console lacks %q:\n%s", want, got)
		}
	}

	buf.Reset()
	code = RunTest(guestproto.Test{Name: "slow", Path: sh, Args: []string{"-c", "sleep 30"}, TimeoutSec: 1}, nil)
	if code != -1 || !strings.Contains(buf.String(), "killed after 1s") {
		t.Errorf("timeout: code %d, console:\n%s", code, buf.String())
	}

	buf.Reset()
	if code := RunTest(guestproto.Test{Name: "missing", Path: "/nonexistent/x.test"}, nil); code != -1 {
		t.Errorf("missing binary: code %d", code)
	}
	if !strings.Contains(buf.String(), "@@xnic exit missing -1") {
		t.Errorf("missing binary console:\n%s", buf.String())
	}
}
