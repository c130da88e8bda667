package vmtest

import (
	"strings"
	"testing"
)

func TestUserVMArgs(t *testing.T) {
	vm := &UserVM{Assets: Assets{QEMU: "q", Kernel: "/k"}, Initramfs: "/i", Socket: "/s.sock", Results: "/r"}
	args, err := vm.Args()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"q35,memory-backend=ram0", "memory-backend-memfd,id=ram0,size=512M,share=on", "-m 512",
		`{"driver":"vfio-user-pci","socket":{"path":"/s.sock","type":"unix"}}`, "-kernel /k", "-initrd /i",
		"-smp 1", "-chardev file,id=results,path=/r -serial chardev:results"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args lack %q: %s", want, line)
		}
	}
	if strings.Contains(line, "intel-iommu") {
		t.Errorf("intel-iommu without IOMMU: %s", line)
	}
	vm.IOMMU, vm.MemMB = true, 768
	args, _ = vm.Args()
	line = strings.Join(args, " ")
	for _, want := range []string{"intel-iommu,intremap=on,caching-mode=on", "intel_iommu=on", "kernel-irqchip=split", "size=768M", "-m 768"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args with IOMMU lack %q: %s", want, line)
		}
	}
	vm.NoShare = true
	args, _ = vm.Args()
	line = strings.Join(args, " ")
	if !strings.Contains(line, "-object memory-backend-ram,id=ram0,size=768M ") || strings.Contains(line, "memfd") {
		t.Errorf("NoShare: want private RAM, no memfd: %s", line)
	}
	if _, err := (&UserVM{Initramfs: "/i"}).Args(); err == nil {
		t.Error("no socket accepted")
	}
}

func TestParseNetStats(t *testing.T) {
	m, ok, err := ParseNetStats("x\r\n@@xnic netstats rx_packets=3 tx_bytes=1514\r\n@@xnic done 0\n")
	if err != nil || !ok || m["rx_packets"] != 3 || m["tx_bytes"] != 1514 || len(m) != 2 {
		t.Fatalf("ParseNetStats = %v, %v, %v", m, ok, err)
	}
	m, ok, err = ParseNetStats("@@xnic netstats rx_packets=3 tx_bytes=1514\n@@xnic netstats rx_packets=2 tx_bytes=60\n")
	if err != nil || !ok || m["rx_packets"] != 5 || m["tx_bytes"] != 1574 {
		t.Fatalf("two lines (a reloaded driver) are summed: %v, %v, %v", m, ok, err)
	}
	if _, ok, _ := ParseNetStats("@@xnic done 0\n"); ok {
		t.Error("stats found where there are none")
	}
	if _, _, err := ParseNetStats("@@xnic netstats rx_packets=x\n"); err == nil {
		t.Error("bad value accepted")
	}
}

func TestLocateVFIOUserReportsMissing(t *testing.T) {
	t.Setenv("XNIC_VMTEST_CACHE", t.TempDir())
	t.Setenv("XNIC_VFIOUSER_QEMU", "/nonexistent/qemu")
	t.Setenv("XNIC_VFIOUSER_KERNEL", "/nonexistent/vmlinuz")
	t.Setenv("XNIC_VFIOUSER_MODULES", "/nonexistent")
	if _, err := LocateVFIOUser(); err == nil || !strings.Contains(err.Error(), "setup-vfiouser.sh") {
		t.Fatalf("LocateVFIOUser with nothing there: %v", err)
	}
}
