package vmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIMXVMArgs(t *testing.T) {
	vm := &IMXVM{Assets: ARM64Assets{QEMU: "q", Kernel: "/k", DTB: "/evk.dtb"}, Initramfs: "/i", MAC: "52:54:00:12:34:57",
		PeerAddr: "127.0.0.1:4000", LocalPort: 4001, Pcap: "/p.pcap", Results: "/r.log", HugePages: 16, MemMB: 768}
	args, err := vm.Args()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"-machine imx8mp-evk", "-accel tcg", "-m 768", "-dtb /evk.dtb", "-kernel /k", "-initrd /i",
		"-serial null -serial stdio -serial file:/r.log", "console=ttymxc1,115200", "hugepages=16", "-no-reboot",
		"local.port=4001", "remote.host=127.0.0.1,remote.port=4000", "-net nic,netdev=n0,macaddr=52:54:00:12:34:57",
		"filter-dump,id=dump0,netdev=n0,file=/p.pcap"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args lack %q: %s", want, line)
		}
	}
	vm.Results, vm.Pcap = "", ""
	if args, _ = vm.Args(); !strings.Contains(strings.Join(args, " "), "-serial stdio -serial null") || strings.Contains(strings.Join(args, " "), "filter-dump") {
		t.Errorf("without results and pcap: %s", strings.Join(args, " "))
	}
	vm.PeerAddr = "nocolon"
	if _, err := vm.Args(); err == nil {
		t.Error("bad peer address accepted")
	}
}

func TestLocateARM64(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XNIC_VMTEST_CACHE", cache)
	t.Setenv("XNIC_VMTEST_ARM64_QEMU", "/nonexistent/qemu")
	t.Setenv("XNIC_VMTEST_ARM64_KERNEL", "")
	t.Setenv("XNIC_VMTEST_ARM64_DTB", "")
	// An env file in the first cache directory stops the search there.
	if err := os.WriteFile(filepath.Join(cache, "vmtest-arm64.env"), []byte("# nothing yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LocateARM64()
	if err == nil || !strings.Contains(err.Error(), "setup-arm64.sh") || !strings.Contains(err.Error(), "imx8mp-evk.dtb") {
		t.Fatalf("LocateARM64 with nothing there: %v", err)
	}
	// The env file setup-arm64.sh writes fills in what the variables leave out.
	files := map[string]string{}
	for _, n := range []string{"qemu", "vmlinuz", "evk.dtb"} {
		files[n] = filepath.Join(cache, n)
		if err := os.WriteFile(files[n], []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := "XNIC_VMTEST_ARM64_QEMU=/nonexistent/other\nXNIC_VMTEST_ARM64_KERNEL=" + files["vmlinuz"] + "\nXNIC_VMTEST_ARM64_DTB=" + files["evk.dtb"] + "\n"
	if err := os.WriteFile(filepath.Join(cache, "vmtest-arm64.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XNIC_VMTEST_ARM64_QEMU", files["qemu"])
	a, err := LocateARM64()
	if err != nil {
		t.Fatal(err)
	}
	if a.QEMU != files["qemu"] || a.Kernel != files["vmlinuz"] || a.DTB != files["evk.dtb"] {
		t.Errorf("LocateARM64 = %+v, want the variable's QEMU and the file's kernel and dtb", a)
	}
}
