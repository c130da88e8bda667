package vmtest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/u-root/u-root/pkg/cpio"
)

// The module lines of Debian's 6.1 cloud kernel that matter, plus noise.
const modulesDep61 = `kernel/arch/x86/kvm/kvm.ko: kernel/virt/lib/irqbypass.ko
kernel/drivers/vfio/vfio.ko:
kernel/drivers/vfio/vfio_virqfd.ko:
kernel/drivers/vfio/vfio_iommu_type1.ko: kernel/drivers/vfio/vfio.ko
kernel/drivers/vfio/pci/vfio-pci-core.ko: kernel/drivers/vfio/vfio_virqfd.ko kernel/drivers/vfio/vfio.ko kernel/virt/lib/irqbypass.ko
kernel/drivers/vfio/pci/vfio-pci.ko: kernel/drivers/vfio/pci/vfio-pci-core.ko kernel/drivers/vfio/vfio_virqfd.ko kernel/drivers/vfio/vfio.ko kernel/virt/lib/irqbypass.ko
kernel/virt/lib/irqbypass.ko:
`

func writeDep(t *testing.T, s string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestModuleOrder(t *testing.T) {
	got, err := ModuleOrder(writeDep(t, modulesDep61), VFIOModules)
	if err != nil {
		t.Fatal(err)
	}
	base := make([]string, len(got))
	for i, g := range got {
		base[i] = modName(g)
	}
	want := []string{"vfio", "vfio_iommu_type1", "irqbypass", "vfio_virqfd", "vfio_pci_core", "vfio_pci"}
	if !slices.Equal(base, want) {
		t.Fatalf("order %v, want %v", base, want)
	}
	// Every module comes after all its dependencies.
	pos := map[string]int{}
	for i, g := range got {
		pos[g] = i
	}
	for _, line := range strings.Split(modulesDep61, "\n") {
		mod, deps, _ := strings.Cut(line, ":")
		if i, ok := pos[mod]; ok {
			for _, d := range strings.Fields(deps) {
				if pos[d] >= i {
					t.Errorf("%s loaded before its dependency %s", mod, d)
				}
			}
		}
	}
}

func TestModuleOrderErrors(t *testing.T) {
	if _, err := ModuleOrder(writeDep(t, modulesDep61), []string{"vfio_nope"}); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("missing module: %v", err)
	}
	cycle := "a.ko: b.ko\nb.ko: a.ko\n"
	if _, err := ModuleOrder(writeDep(t, cycle), []string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	dangling := "a.ko: gone.ko\n"
	if _, err := ModuleOrder(writeDep(t, dangling), []string{"a"}); err == nil {
		t.Error("dangling dependency accepted")
	}
	xz := "kernel/a.ko.xz:\n"
	if _, err := ModuleOrder(writeDep(t, xz), []string{"a"}); err == nil || !strings.Contains(err.Error(), "compressed") {
		t.Errorf("compressed module: %v", err)
	}
	if _, err := ModuleOrder(t.TempDir(), VFIOModules); err == nil || !strings.Contains(err.Error(), "depmod") {
		t.Errorf("no modules.dep: %v", err)
	}
}

func TestInitramfsRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(src, bytes.Repeat([]byte{0xAB}, 5000), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err := WriteInitramfs(&buf, []InitramfsFile{
		{Name: "init", Src: src, Mode: 0o755},
		{Name: "tests/igb.test", Src: src, Mode: 0o755},
		{Name: "vmtest.json", Data: []byte(`{"x":1}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(buf.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cpio.Record{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	for _, want := range []struct {
		name string
		mode uint64
		size int
	}{
		{"dev/console", cpio.S_IFCHR | 0o600, 0},
		{"init", cpio.S_IFREG | 0o755, 5000},
		{"tests", cpio.S_IFDIR, 0},
		{"tests/igb.test", cpio.S_IFREG | 0o755, 5000},
		{"vmtest.json", cpio.S_IFREG | 0o644, 7},
		{"proc", cpio.S_IFDIR, 0},
	} {
		r, ok := byName[want.name]
		if !ok {
			t.Errorf("%s missing from the archive", want.name)
			continue
		}
		if want.mode&^0o777 == cpio.S_IFDIR {
			if r.Mode&cpio.S_IFMT != cpio.S_IFDIR {
				t.Errorf("%s mode %o, want a directory", want.name, r.Mode)
			}
			continue
		}
		if r.Mode != want.mode || int(r.FileSize) != want.size {
			t.Errorf("%s: mode %o size %d, want %o %d", want.name, r.Mode, r.FileSize, want.mode, want.size)
		}
		if want.size > 0 {
			b, _ := io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
			if want.name == "init" && !bytes.Equal(b, bytes.Repeat([]byte{0xAB}, 5000)) {
				t.Errorf("init content differs")
			}
		}
	}
	if c := byName["dev/console"]; c.Rmajor != 5 || c.Rminor != 1 {
		t.Errorf("/dev/console is %d:%d, want 5:1", c.Rmajor, c.Rminor)
	}
	if err := WriteInitramfs(io.Discard, []InitramfsFile{{Name: "x", Src: "/nonexistent/file"}}); err == nil {
		t.Error("missing source file accepted")
	}
}

const sampleConsole = `[    0.000000] Linux version 6.1.0
@@xnic boot
@@xnic step mount ok /proc
@@xnic step module ok vfio.ko
@@xnic start igb
@@xnic out igb| === RUN   TestA
@@xnic out igb|     a_test.go:10: hello from A
@@xnic out igb| --- PASS: TestA (0.50s)
@@xnic out igb| === RUN   TestB
@@xnic out igb| === RUN   TestB/sub
@@xnic out igb|     b_test.go:3: boom
[    5.1] DMAR: DRHD: handling fault status reg 2
@@xnic out igb|     --- FAIL: TestB/sub (0.00s)
@@xnic out igb| --- FAIL: TestB (1.00s)
@@xnic out igb| === RUN   TestC
@@xnic out igb|     c_test.go:1: XNIC_IGB_BDF not set
@@xnic out igb| --- SKIP: TestC (0.00s)
@@xnic out igb| === RUN   TestD
@@xnic out igb| panic: oops
@@xnic out igb| FAIL
@@xnic exit igb 2 3.25
@@xnic start vfio
@@xnic step bind fail no IOMMU group
@@xnic dmesg| <6>[ 1.0] hi
@@xnic done 1
`

func TestParseConsole(t *testing.T) {
	r := ParseConsole(strings.ReplaceAll(sampleConsole, "\n", "\r\n"))
	if !r.Booted || !r.Done || r.Fatal != "" || len(r.Steps) != 3 || len(r.Failed) != 1 || len(r.Dmesg) != 1 {
		t.Fatalf("booted %v done %v fatal %q steps %q failed %q dmesg %q", r.Booted, r.Done, r.Fatal, r.Steps, r.Failed, r.Dmesg)
	}
	if !slices.Equal(r.Order, []string{"igb", "vfio"}) {
		t.Fatalf("binaries %v", r.Order)
	}
	b := r.Binaries["igb"]
	if !b.Started || !b.Exited || b.ExitCode != 2 || b.Seconds != "3.25" {
		t.Errorf("igb: %+v", b)
	}
	if !slices.Equal(b.Order, []string{"TestA", "TestB", "TestC", "TestD"}) {
		t.Fatalf("tests %v", b.Order)
	}
	for name, want := range map[string]Status{"TestA": StatusPass, "TestB": StatusFail, "TestC": StatusSkip, "TestD": StatusNotRun} {
		if got := b.Tests[name].Status; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if out := strings.Join(b.Tests["TestB"].Output, "\n"); !strings.Contains(out, "boom") || strings.Contains(out, "DMAR") {
		t.Errorf("TestB output %q", out)
	}
	if !slices.Contains(b.Tests["TestD"].Output, "panic: oops") {
		t.Errorf("TestD output %q", b.Tests["TestD"].Output)
	}
	if v := r.Binaries["vfio"]; !v.Started || v.Exited {
		t.Errorf("vfio: %+v", v)
	}
	if r := ParseConsole("[ 0.0] Kernel panic - not syncing: VFS: Unable to mount root\n"); r.Booted || len(r.Binaries) != 0 {
		t.Errorf("console without /init: %+v", r)
	}
}

func TestVMArgs(t *testing.T) {
	vm := &VM{Assets: Assets{QEMU: "q", Kernel: "/k"}, Initramfs: "/i", MAC: "52:54:00:12:34:56",
		PeerAddr: "127.0.0.1:4000", LocalPort: 4001, Pcap: "/p.pcap", Results: "/r.log"}
	args, err := vm.Args()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"-accel tcg", "q35", "intel-iommu,intremap=on", "igb,netdev=n0,mac=52:54:00:12:34:56",
		"local.port=4001", "remote.host=127.0.0.1,remote.port=4000", "filter-dump,id=dump0,netdev=n0,file=/p.pcap",
		"intel_iommu=on", "no_timer_check", "console=ttyS0", "-no-reboot", "-kernel /k", "-initrd /i",
		"-serial stdio", "-chardev file,id=results,path=/r.log -serial chardev:results"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args lack %q: %s", want, line)
		}
	}
	vm.PeerAddr = "nocolon"
	if _, err := vm.Args(); err == nil {
		t.Error("bad peer address accepted")
	}
}

func TestPcapCount(t *testing.T) {
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{60, 1514, 100} {
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: n, Length: n}, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "x.pcap")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	n, m, err := PcapCount(p)
	if err != nil || n != 3 || m != 1514 {
		t.Errorf("PcapCount = %d, %d, %v", n, m, err)
	}
	if err := os.WriteFile(p, b.Bytes()[:b.Len()-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := PcapCount(p); err == nil {
		t.Error("truncated pcap accepted")
	}
}

func TestLocateReportsMissing(t *testing.T) {
	t.Setenv("XNIC_VMTEST_CACHE", t.TempDir())
	t.Setenv("XNIC_VMTEST_QEMU", "/nonexistent/qemu")
	t.Setenv("XNIC_VMTEST_KERNEL", "/nonexistent/vmlinuz")
	t.Setenv("XNIC_VMTEST_MODULES", "/nonexistent")
	_, err := Locate()
	if err == nil || !strings.Contains(err.Error(), "setup.sh") {
		t.Fatalf("Locate with nothing there: %v", err)
	}
}
