package vmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

// The hand-over tier: the README's "Running on real hardware" on QEMU's
// imx8mp-evk with Debian's arm64 kernel, two boots.
//
//   - kernel: the stock imx8mp-evk.dtb. The guest loads fec (and what it
//     needs), which binds the FEC; it brings the interface up and down, so
//     the kernel's own driver has touched the MAC and left it as it leaves
//     it. Then every xnic command on the MAC must be refused by the preflight
//     with the reason, and Debian's /dev/mem refuses the claimed range too;
//     after rmmod fec the clocks are gated and xnic still refuses
//     (package preflight's TestVMKernelHeld).
//   - handover: the same DTB edited at setup with fdtput, the FEC node's
//     compatible set to simple-pm-bus. xnic doctor passes; a hand-over holds
//     the five clocks on and the PHY out of reset while open and gives both
//     back (TestVMHandedOver); then xnic passes frames with the host peer:
//     `xnic pktgen` frames byte-exact in the capture, `xnic run` with the
//     MAC-swapping XDP program echoing the peer's frames (fec's TestVMPktgen
//     and TestVMXnicRun).

// handoverModules are the modules of each boot; setup-arm64.sh keeps them.
var handoverModules = map[string][]string{
	"kernel":   {"nvmem-imx-ocotp", "fec"},
	"handover": {"nvmem-imx-ocotp"}, // the node's nvmem-cells supplier: fw_devlink waits for it
}

// fecNodePath is the FEC's node in imx8mp-evk.dtb (imx8mp.dtsi).
const fecNodePath = "/soc@0/bus@30800000/ethernet@30be0000"

// locateHandover finds the kept modules and fdtput (XNIC_VMTEST_ARM64_MODULES,
// XNIC_VMTEST_FDTPUT, else vmtest-arm64.env, else PATH for fdtput).
func locateHandover() (modDir, fdtput string, err error) {
	modDir, fdtput = os.Getenv("XNIC_VMTEST_ARM64_MODULES"), os.Getenv("XNIC_VMTEST_FDTPUT")
	for _, dir := range CacheDirs() {
		if env, e := readEnvFile(filepath.Join(dir, "vmtest-arm64.env")); e == nil {
			modDir, fdtput = orElse(modDir, env["XNIC_VMTEST_ARM64_MODULES"]), orElse(fdtput, env["XNIC_VMTEST_FDTPUT"])
			break
		}
	}
	if fdtput == "" {
		fdtput, _ = exec.LookPath("fdtput")
	}
	if modDir == "" || !isFile(filepath.Join(modDir, "modules.dep")) || fdtput == "" {
		return "", "", fmt.Errorf("%w (the hand-over tier needs the kept fec modules and fdtput: modules %q, fdtput %q)", ErrNoARM64Assets, modDir, fdtput)
	}
	return modDir, fdtput, nil
}

func TestHandoverQEMU(t *testing.T) {
	root, dir := vmTier(t, "handover")
	begin := time.Now()
	assets, err := LocateARM64()
	if err != nil {
		t.Fatal(err)
	}
	modDir, fdtput, err := locateHandover()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The README's DTB edit, with the tool it names.
	dtb := filepath.Join(dir, "imx8mp-evk-handover.dtb")
	orig, err := os.ReadFile(assets.DTB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dtb, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, fdtput, "-t", "s", dtb, fecNodePath, "compatible", "simple-pm-bus").CombinedOutput(); err != nil {
		t.Fatalf("fdtput: %v\n%s", err, out)
	}

	initPath, xnicPath := buildGuestTools(ctx, t, BuildARM64, root, dir)
	pre, err := BuildTestARM64(ctx, root, "./preflight", "^TestVM", dir)
	if err != nil {
		t.Fatal(err)
	}
	fecTB, err := BuildTestARM64(ctx, root, "./fec", "^TestVM(Pktgen|XnicRun)$", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pre.Tests, "TestVMKernelHeld") || !slices.Contains(pre.Tests, "TestVMHandedOver") || len(fecTB.Tests) != 2 {
		t.Fatalf("guest tests: preflight %q, fec %q", pre.Tests, fecTB.Tests)
	}
	t.Logf("built /init, preflight.test, fec.test and xnic for arm64 in %v", time.Since(begin).Round(time.Millisecond))

	seed := guestSeed()
	only := func(tb *TestBinary, name string) *TestBinary {
		c := *tb
		c.Tests = []string{name}
		return &c
	}
	t.Run("kernel", func(t *testing.T) {
		runHandoverBoot(ctx, t, handoverBoot{Stage: "kernel", Assets: assets, ModDir: modDir, Dir: filepath.Join(dir, "kernel"),
			Init: initPath, Xnic: xnicPath, Root: root, Seed: seed,
			Tests: []*TestBinary{only(pre, "TestVMKernelHeld")}})
	})
	t.Run("handover", func(t *testing.T) {
		a := assets
		a.DTB = dtb
		runHandoverBoot(ctx, t, handoverBoot{Stage: "handover", Assets: a, ModDir: modDir, Dir: filepath.Join(dir, "handover"),
			Init: initPath, Xnic: xnicPath, Root: root, Seed: seed, Wire: true,
			Tests: []*TestBinary{only(pre, "TestVMHandedOver"), fecTB}})
	})
	t.Logf("hand-over tier took %v", time.Since(begin).Round(time.Millisecond))
}

// handoverBoot is one boot of the hand-over tier.
type handoverBoot struct {
	Stage      string // XNIC_HANDOVER_STAGE
	Assets     ARM64Assets
	ModDir     string
	Dir        string
	Init, Xnic string
	Root       string // module root
	Seed       int64
	Tests      []*TestBinary // run in order; each lists the tests it must pass
	Wire       bool          // check the pktgen frames and the peer's sessions
}

func runHandoverBoot(ctx context.Context, t *testing.T, b handoverBoot) {
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	order, err := ModuleOrder(b.ModDir, handoverModules[b.Stage])
	if err != nil {
		t.Fatal(err)
	}
	files := []InitramfsFile{
		{Name: "init", Src: b.Init, Mode: 0o755},
		{Name: "bin/xnic", Src: b.Xnic, Mode: 0o755},
		{Name: "xdp/xdp_macswap_tx.o", Src: filepath.Join(b.Root, "examples", "xdp", "xdp_macswap_tx.o")},
	}
	// The kernel's configuration where a board has it, for the preflight's
	// IO_STRICT_DEVMEM check: modDir is KROOT/lib/modules/KVER.
	kver := filepath.Base(b.ModDir)
	if cfgFile := filepath.Join(b.ModDir, "..", "..", "..", "boot", "config-"+kver); isFile(cfgFile) {
		files = append(files, InitramfsFile{Name: "boot/config-" + kver, Src: cfgFile})
	}
	var mods []string
	for _, m := range order {
		files = append(files, InitramfsFile{Name: "modules/" + filepath.Base(m), Src: filepath.Join(b.ModDir, m)})
		mods = append(mods, "/modules/"+filepath.Base(m))
	}
	peer, err := traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	cfg := guestproto.Config{
		ResultsTTY: IMXResultsTTY,
		Env: map[string]string{
			"XNIC_HANDOVER_STAGE":      b.Stage,
			"XNIC_VMTEST_MODULES":      strings.Join(mods, ":"),
			"XNIC_FEC_PLATFORM":        fmt.Sprintf("fsl,imx8mp-fec@%#x", fecPhys),
			"XNIC_VMTEST_MAC":          fecGuestMAC,
			"XNIC_VMTEST_PEER_MAC":     peer.MAC().String(),
			"XNIC_VMTEST_SEED":         strconv.FormatInt(b.Seed, 10),
			"XNIC_VMTEST_PKTGEN_COUNT": strconv.Itoa(fecPktgenCount),
			"XNIC_VMTEST_PKTGEN_SIZE":  strconv.Itoa(fecPktgenSize),
			"XNIC_BIN":                 "/bin/xnic",
			"XNIC_XDP_MACSWAP":         "/xdp/xdp_macswap_tx.o",
		},
		DmesgLines: 40,
	}
	for _, tb := range b.Tests {
		files = append(files, InitramfsFile{Name: "tests/" + tb.Name + ".test", Src: tb.Path, Mode: 0o755})
		cfg.Tests = append(cfg.Tests, guestproto.Test{Name: tb.Name, Path: "/tests/" + tb.Name + ".test",
			Args:       []string{"-test.v", "-test.timeout=" + fecGuestTime.String(), "-test.run=^(" + strings.Join(tb.Tests, "|") + ")$"},
			TimeoutSec: int(fecGuestTime/time.Second) + 30})
	}
	initrd := filepath.Join(b.Dir, "initramfs.cpio")
	writeGuestInitramfs(t, initrd, cfg, files)
	logger := &lineLogger{t: t}
	vm := &IMXVM{Assets: b.Assets, Initramfs: initrd, MAC: fecGuestMAC, PeerAddr: peer.Addr().String(),
		Pcap: filepath.Join(b.Dir, "fec.pcap"), Results: filepath.Join(b.Dir, "results.log"), Console: logger}
	res, _ := bootGuest(ctx, t, vm, logger, vm.Results, b.Dir, b.Stage+" boot", fecGuestTime+time.Minute)
	for _, tb := range b.Tests {
		t.Run(tb.Name, func(t *testing.T) { checkBinary(t, tb, res.Binaries[tb.Name], res) })
	}
	if !b.Wire {
		return
	}
	t.Run("peer", func(t *testing.T) { checkPeer(t, peer.Report()) })
	t.Run("pktgen", func(t *testing.T) {
		checkPktgen(t, vm.Pcap, fecGuestMAC, peer.MAC().String(), fecPktgenCount, fecPktgenSize)
	})
}
