package vmtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

const (
	// imx6ulENET1 is ENET1's register window (imx6ul.dtsi ethernet@2188000);
	// its PHY sits on ENET2's MDIO bus (imx6ul-14x14-evk.dtsi), which xnic
	// finds in the guest's /proc/device-tree.
	imx6ulENET1     = 0x02188000
	imx6ulGuestTime = 6 * time.Minute
)

// TestFECIMX6UL is the fec on a real 32-bit machine: QEMU's mcimx6ul-evk
// (i.MX6UL, Cortex-A7) with Debian's armhf kernel and the board's own
// device tree, xnic and the fec tests built for GOARCH=arm GOARM=7, the ENET
// reached through physmem with every DMA buffer and ring in RAM above mem=,
// mapped uncached. The guest runs fec's TestVMInfo, TestVMRegs, TestVMXnicRun
// (xnic run with the MAC-swap XDP_TX program, the host peer counting the
// replies) and TestVMStats; the host checks the peer's sessions.
func TestFECIMX6UL(t *testing.T) {
	root, dir := vmTier(t, "imx6ul")
	begin := time.Now()
	assets, err := LocateARMHF()
	if err != nil {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), imx6ulGuestTime+4*time.Minute)
	defer cancel()

	initPath, xnicPath := buildGuestTools(ctx, t, BuildARMHF, root, dir)
	const run = "^TestVM(Info|Regs|XnicRun|Stats)$"
	tb, err := BuildTestARMHF(ctx, root, "./fec", run, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Tests) != 4 {
		t.Fatalf("the fec package lists %q for %s, want 4 tests", tb.Tests, run)
	}
	obj := filepath.Join(root, "examples", "xdp", "xdp_macswap_tx.o")
	if !isFile(obj) {
		t.Fatalf("no %s", obj)
	}
	t.Logf("built /init, fec.test and xnic for arm (GOARM=7) in %v", time.Since(begin).Round(time.Millisecond))

	peer, err := traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	seed := guestSeed()
	uncached := fmt.Sprintf("%#x+%#x", IMX6ULUncachedPhys, IMX6ULUncachedSize)
	cfg := guestproto.Config{
		ResultsTTY: IMX6ULResultsTTY,
		Env: map[string]string{
			// A short name: the variant, the PHY address and its MDIO bus
			// come from the guest's devicetree.
			"XNIC_FEC_PLATFORM":    fmt.Sprintf("fec@%#x,uncached=%s", imx6ulENET1, uncached),
			"XNIC_FEC_UNCACHED":    uncached,
			"XNIC_VMTEST_VARIANT":  "fsl,imx6ul-fec", // what the devicetree's node must select
			"XNIC_VMTEST_MAC":      fecGuestMAC,
			"XNIC_VMTEST_PEER_MAC": peer.MAC().String(),
			"XNIC_VMTEST_SEED":     strconv.FormatInt(seed, 10),
			"XNIC_BIN":             "/bin/xnic",
			"XNIC_XDP_MACSWAP":     "/xdp/xdp_macswap_tx.o",
		},
		Tests: []guestproto.Test{{Name: tb.Name, Path: "/tests/fec.test",
			Args:       []string{"-test.v", "-test.timeout=" + imx6ulGuestTime.String(), "-test.run=" + run},
			TimeoutSec: int(imx6ulGuestTime/time.Second) + 30}},
		DmesgLines: 30,
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	writeGuestInitramfs(t, initrd, cfg, []InitramfsFile{
		{Name: "init", Src: initPath, Mode: 0o755},
		{Name: "bin/xnic", Src: xnicPath, Mode: 0o755},
		{Name: "tests/fec.test", Src: tb.Path, Mode: 0o755},
		{Name: "xdp/xdp_macswap_tx.o", Src: obj},
	})
	logger := &lineLogger{t: t}
	vm := &IMX6ULVM{Assets: assets, Initramfs: initrd, MAC: fecGuestMAC, PeerAddr: peer.Addr().String(),
		Pcap: filepath.Join(dir, "fec.pcap"), Results: filepath.Join(dir, "results.log"), Console: logger}
	res, _ := bootGuest(ctx, t, vm, logger, vm.Results, dir, "guest", imx6ulGuestTime+time.Minute)
	t.Run("guest", func(t *testing.T) { checkBinary(t, tb, res.Binaries[tb.Name], res) })
	t.Run("peer", func(t *testing.T) { checkPeer(t, peer.Report()) })
	t.Logf("i.MX6UL (32-bit ARM) fec test took %v", time.Since(begin).Round(time.Millisecond))
}
