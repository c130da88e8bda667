package vmtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The 32-bit ARM guest: QEMU's mcimx6ul-evk (an i.MX6UL: one Cortex-A7,
// ARMv7-A, two imx.enet), booted on Debian's armhf multiplatform kernel
// (linux-image-*-armmp) with the imx6ul-14x14-evk.dtb that package ships. The
// guest's /init, tests and xnic are linux/arm GOARM=7 binaries; the ENET is
// reached through /dev/mem, its DMA memory is RAM above the kernel's mem=
// limit, mapped uncached (physmem.Uncached: no cache maintenance from ARMv7
// user mode), as a real i.MX6/7 board needs it.

// ARMHFAssets are what the 32-bit ARM VM needs from the host.
type ARMHFAssets struct {
	QEMU   string // qemu-system-arm with the mcimx6ul-evk machine
	Kernel string // vmlinuz of Debian's armmp kernel
	DTB    string // that kernel's imx6ul-14x14-evk.dtb
}

// ErrNoARMHFAssets says qemu-system-arm, the armhf kernel or its dtb is missing.
var ErrNoARMHFAssets = fmt.Errorf("32-bit ARM VM assets missing: run internal/vmtest/setup-armhf.sh (as root; scripts/setup.sh runs it) to download Debian's armmp kernel")

// LocateARMHF finds QEMU, the kernel and the device tree:
// XNIC_VMTEST_ARMHF_QEMU, _KERNEL and _DTB first, then the vmtest-armhf.env
// file setup-armhf.sh writes in its cache directory, then PATH for QEMU.
func LocateARMHF() (ARMHFAssets, error) {
	q, k, d, err := locateBoard("XNIC_VMTEST_ARMHF", "vmtest-armhf.env", "qemu-system-arm",
		"armhf kernel", "imx6ul-14x14-evk.dtb", ErrNoARMHFAssets)
	return ARMHFAssets{QEMU: q, Kernel: k, DTB: d}, err
}

// armhfEnv is the environment for building 32-bit guest binaries.
func armhfEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm", "GOARM=7")
}

// BuildARMHF builds the command pkg for linux/arm (ARMv7) into out.
func BuildARMHF(ctx context.Context, root, pkg, out string) error {
	return buildFor(ctx, root, pkg, out, armhfEnv(), "arm")
}

// BuildTestARMHF builds pkg's test binary for linux/arm (ARMv7) into outDir
// and lists its top-level tests matching run (with the host's go test -list).
func BuildTestARMHF(ctx context.Context, root, pkg, run, outDir string) (*TestBinary, error) {
	return buildTestFor(ctx, root, pkg, run, outDir, armhfEnv(), "arm")
}

// i.MX6UL guest memory: RAM starts at 0x80000000 (imx6ul.dtsi, the MMDC
// window); the kernel gets IMX6ULKernelMB of IMX6ULMemMB through mem=, and the
// rest, outside its map (not "System RAM" in /proc/iomem, so STRICT_DEVMEM
// allows it, and /dev/mem maps it Strongly-ordered: pgprot_noncached in
// arch/arm/mm/mmu.c phys_mem_access_prot for a pfn the kernel does not map),
// is the ENET's DMA memory.
const (
	IMX6ULMemMB    = 512
	IMX6ULKernelMB = 448
	// IMX6ULUncached is the reserved range: PHYS+SIZE for --platform's
	// uncached= and XNIC_FEC_UNCACHED.
	IMX6ULUncachedPhys uint64 = 0x80000000 + IMX6ULKernelMB<<20
	IMX6ULUncachedSize        = (IMX6ULMemMB - IMX6ULKernelMB) << 20
)

// IMX6ULResultsTTY is the guest device of IMX6ULVM.Results: UART2 (the EVK's
// device tree enables UART1 and UART2), QEMU's second -serial.
const IMX6ULResultsTTY = "/dev/ttymxc1"

// IMX6ULVM describes one run of QEMU's mcimx6ul-evk machine.
type IMX6ULVM struct {
	Assets    ARMHFAssets
	Initramfs string
	// MAC and PeerAddr are the address and -netdev dgram link of the ENET
	// the test drives (the first -nic: ENET1, ethernet@2188000).
	MAC      string
	PeerAddr string
	// Pcap, when set, records that ENET's traffic both ways.
	Pcap string
	// Results, when set, receives UART2: /init's lines without kernel
	// messages.
	Results string
	// Console receives the serial console (UART1) as it arrives.
	Console io.Writer
}

// Args returns QEMU's command line.
func (vm *IMX6ULVM) Args() ([]string, error) {
	host, port, ok := strings.Cut(vm.PeerAddr, ":")
	if !ok {
		return nil, fmt.Errorf("peer address %q is not host:port", vm.PeerAddr)
	}
	// No kernel driver claims the ENETs (fec is a module, never loaded: the
	// initramfs has no udev), so /dev/mem may map their registers.
	cmdline := fmt.Sprintf("console=ttymxc0,115200 panic=-1 quiet loglevel=4 mem=%dM", IMX6ULKernelMB)
	results := "null"
	if vm.Results != "" {
		results = "file:" + vm.Results
	}
	args := []string{
		"-nodefaults", "-display", "none", "-monitor", "none", "-no-reboot",
		"-machine", "mcimx6ul-evk",
		"-accel", "tcg",
		"-m", strconv.Itoa(IMX6ULMemMB),
		"-serial", "stdio", "-serial", results,
		"-netdev", fmt.Sprintf("dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=0,remote.type=inet,remote.host=%s,remote.port=%s",
			host, port),
		"-net", "nic,netdev=n0,macaddr=" + vm.MAC,
		"-kernel", vm.Assets.Kernel,
		"-dtb", vm.Assets.DTB,
		"-initrd", vm.Initramfs,
		"-append", cmdline,
	}
	if vm.Pcap != "" {
		args = append(args, "-object", "filter-dump,id=dump0,netdev=n0,file="+vm.Pcap)
	}
	return args, nil
}

// Run boots the VM and waits until QEMU exits or ctx ends.
func (vm *IMX6ULVM) Run(ctx context.Context) (string, error) {
	args, err := vm.Args()
	if err != nil {
		return "", err
	}
	return runQEMU(ctx, vm.Assets.QEMU, args, vm.Console)
}
