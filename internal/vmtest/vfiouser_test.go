package vmtest

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/vfiouser"
)

// TestVFIOUser runs xnic's own dwmac driver through real VFIO in a guest
// against dwmacsim served over vfio-user: QEMU's vfio-user-pci client behind
// the guest's intel-iommu, the device bound to vfio-pci in the guest, and
// dwmac's TestVM* tests (link, MAC, traffic both ways, an MSI-X vector waking a
// blocked receive, close and reopen) run there as the igb tier runs igb's.
func TestVFIOUser(t *testing.T) {
	vmtestRequested(t)
	assets, err := LocateVFIOUser()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("dwmac", func(t *testing.T) { runVFIOUserDWMAC(t, assets, root) })
}

func runVFIOUserDWMAC(t *testing.T, assets Assets, root string) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), *flagTimeout)
	defer cancel()
	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, "vfiouser-dwmac")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	initPath := filepath.Join(dir, "netinit")
	if err := BuildCommand(ctx, root, "./internal/vmtest/netinit", initPath); err != nil {
		t.Fatal(err)
	}
	tb, why, err := BuildTest(ctx, root, "./dwmac", dir)
	if err != nil || tb == nil {
		t.Fatalf("dwmac test binary: %v %s", err, why)
	}
	// Only the tests against a device run in the guest; the others run on the
	// model in the unit tier already.
	tb.Tests = slices.DeleteFunc(tb.Tests, func(n string) bool { return !strings.HasPrefix(n, "TestVM") })
	tb.Pkg = ""
	if len(tb.Tests) == 0 {
		t.Fatal("dwmac has no TestVM* tests")
	}
	mods, err := ModuleOrder(assets.Modules, VFIOModules)
	if err != nil {
		t.Fatal(err)
	}

	m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IntelMGbE, PCIDevice: ehlRGMII1G, Channels: 8,
		MAC: net.HardwareAddr{0x02, 0x58, 0x4e, 0x00, 0x00, 0x03}, Name: "dwmacsim-ehl"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	peer, err := traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	ipp, err := NewIPPeer(peer.MAC(), netip.MustParseAddr(linuxPeerIP), peer.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ipp.Close()
	m.Attach(ipp)

	sock := filepath.Join(dir, "dwmac.sock")
	os.Remove(sock)
	srvCtx, stopSrv := context.WithCancel(ctx)
	srvDone := make(chan error, 1)
	stats := &vfiouser.Stats{}
	listening := make(chan struct{})
	go func() {
		srvDone <- vfiouser.ListenAndServe(srvCtx, sock, m.SimDevice(), vfiouser.Options{Once: true, Logf: t.Logf, Stats: stats,
			Listening: func() { close(listening) }})
	}()
	defer func() { t.Logf("vfio-user server: %s", stats) }()
	defer func() {
		stopSrv()
		select {
		case err := <-srvDone:
			if err != nil && srvCtx.Err() == nil {
				t.Errorf("vfio-user server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("vfio-user server did not stop")
		}
	}()
	if err := waitListening(listening, srvDone, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	cfg := guestproto.Config{
		Vendor: 0x8086, Device: ehlRGMII1G, DmesgLines: 40,
		Env: map[string]string{
			guestproto.EnvNetMode: "vfio",
			"XNIC_DWMAC_MAC":      m.MAC().String(),
			// No XNIC_DWMAC_HUGEPAGE (vmOpts in dwmac/vm_test.go): the
			// driver's DMA memory is in 4 KiB pages, so QEMU sends one
			// DMA_MAP per page at unrelated memfd offsets and the server's
			// arenas (vfiouser/arena.go) make rings and buffers that span
			// pages one view for the model.
		},
	}
	files := []InitramfsFile{{Name: "init", Src: initPath, Mode: 0o755}}
	for _, mod := range mods {
		p := "lib/modules/" + filepath.Base(mod)
		files = append(files, InitramfsFile{Name: p, Src: filepath.Join(assets.Modules, mod)})
		cfg.Modules = append(cfg.Modules, guestproto.Module{Path: "/" + p})
	}
	files = append(files, InitramfsFile{Name: "tests/dwmac.test", Src: tb.Path, Mode: 0o755})
	run := "^TestVM"
	if *flagRun != "" {
		run = *flagRun
		tb.Tests = slices.DeleteFunc(tb.Tests, func(n string) bool { return !regexp.MustCompile(run).MatchString(n) })
	}
	cfg.Tests = []guestproto.Test{{Name: tb.Name, Path: "/tests/dwmac.test",
		Args:       []string{"-test.v", "-test.run=" + run, "-test.timeout=" + guestTestTime.String()},
		TimeoutSec: int(guestTestTime/time.Second) + 30}}
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, InitramfsFile{Name: strings.TrimPrefix(guestproto.ConfigPath, "/"), Data: cj})
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := writeInitramfsFile(initrd, files); err != nil {
		t.Fatal(err)
	}
	t.Logf("built netinit, dwmac.test (%d TestVM tests) and the initramfs in %v", len(tb.Tests), time.Since(begin).Round(time.Millisecond))

	logger := &lineLogger{t: t}
	vm := &UserVM{Assets: assets, Initramfs: initrd, Socket: sock, IOMMU: true, MemMB: 768,
		Results: filepath.Join(dir, "results.log"), Console: logger}
	bootAt := time.Now()
	console, runErr := vm.Run(ctx)
	logger.stop()
	_ = os.WriteFile(filepath.Join(dir, "console.log"), []byte(console), 0o644)
	t.Logf("guest ran %v (QEMU exit: %v)", time.Since(bootAt).Round(time.Millisecond), runErr)
	results, err := os.ReadFile(vm.Results)
	if err != nil || !strings.Contains(string(results), guestproto.Prefix+"boot") {
		results = []byte(console)
	}
	res := ParseConsole(string(results))
	switch {
	case !res.Booted:
		t.Fatalf("the guest never reached /init (QEMU: %v); console tail:\n%s", runErr, Tail(console, 60))
	case runErr != nil:
		t.Errorf("QEMU: %v; console tail:\n%s", runErr, Tail(console, 40))
	}
	if res.Fatal != "" || len(res.Failed) > 0 {
		t.Errorf("guest /init: fatal %q, failed steps %q\nkernel log tail:\n%s", res.Fatal, res.Failed, strings.Join(res.Dmesg, "\n"))
	}
	t.Run("guest", func(t *testing.T) { checkBinary(t, tb, res.Binaries[tb.Name], res) })
	t.Run("peer", func(t *testing.T) { checkPeer(t, peer.Report()) })
	t.Run("faults", func(t *testing.T) {
		for i, f := range m.Faults() {
			if i == 20 {
				t.Errorf("... and more")
				break
			}
			t.Errorf("model fault: %v", f)
		}
	})
	t.Logf("TestVFIOUser/dwmac took %v", time.Since(begin).Round(time.Millisecond))
}
