package vmtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The arm64 tier: QEMU's imx8mp-evk machine (TCG) with its imx.enet model,
// booted on Debian's generic arm64 kernel and the device tree that kernel
// package ships for the board. The guest's /init and tests are linux/arm64
// binaries; the fec driver reaches the ENET through /dev/mem (registers) and
// huge pages (DMA memory), as on a real i.MX8M Plus.

// ARM64Assets are what the arm64 VM needs from the host.
type ARM64Assets struct {
	QEMU   string // qemu-system-aarch64 with the imx8mp-evk machine
	Kernel string // vmlinuz of a kernel with i.MX8M support (not the cloud flavour)
	DTB    string // that kernel's freescale/imx8mp-evk.dtb
}

// ErrNoARM64Assets says qemu-system-aarch64, the arm64 kernel or its dtb is
// missing.
var ErrNoARM64Assets = fmt.Errorf("arm64 VM tier assets missing: run internal/vmtest/setup-arm64.sh (as root) to install qemu-system-arm from bookworm-backports and download the arm64 kernel")

// LocateARM64 finds QEMU, the kernel and the device tree: XNIC_VMTEST_ARM64_QEMU,
// XNIC_VMTEST_ARM64_KERNEL and XNIC_VMTEST_ARM64_DTB first, then the
// vmtest-arm64.env file setup-arm64.sh writes in its cache directory, then
// PATH for QEMU.
func LocateARM64() (ARM64Assets, error) {
	q, k, d, err := locateBoard("XNIC_VMTEST_ARM64", "vmtest-arm64.env", "qemu-system-aarch64",
		"arm64 kernel", "imx8mp-evk.dtb", ErrNoARM64Assets)
	return ARM64Assets{QEMU: q, Kernel: k, DTB: d}, err
}

// locateBoard finds an ARM board VM's QEMU, kernel and device tree: the
// environment's PREFIX_QEMU, PREFIX_KERNEL and PREFIX_DTB first, then the
// same names in envFile (written by the tier's setup script in its cache
// directory), then PATH for qemuBin. The error wraps missingErr and names
// what is missing.
func locateBoard(prefix, envFile, qemuBin, kernelWhat, dtbWhat string, missingErr error) (qemu, kernel, dtb string, err error) {
	qemu, kernel, dtb = os.Getenv(prefix+"_QEMU"), os.Getenv(prefix+"_KERNEL"), os.Getenv(prefix+"_DTB")
	for _, dir := range CacheDirs() {
		env, err := readEnvFile(filepath.Join(dir, envFile))
		if err != nil {
			continue
		}
		qemu = orElse(qemu, env[prefix+"_QEMU"])
		kernel = orElse(kernel, env[prefix+"_KERNEL"])
		dtb = orElse(dtb, env[prefix+"_DTB"])
		break
	}
	if qemu == "" {
		qemu, _ = exec.LookPath(qemuBin)
	}
	var missing []string
	for _, f := range []struct{ path, what string }{
		{qemu, qemuBin},
		{kernel, kernelWhat + " (" + prefix + "_KERNEL)"},
		{dtb, dtbWhat + " (" + prefix + "_DTB)"},
	} {
		if f.path == "" || !isFile(f.path) {
			missing = append(missing, f.what)
		}
	}
	if len(missing) > 0 {
		return qemu, kernel, dtb, fmt.Errorf("%w (missing: %s)", missingErr, strings.Join(missing, ", "))
	}
	return qemu, kernel, dtb, nil
}

// orElse returns a, or b when a is empty.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// armEnv is the environment for building guest binaries: static, linux/arm64.
func armEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
}

// BuildARM64 builds the command pkg (relative to root) for linux/arm64 into out.
func BuildARM64(ctx context.Context, root, pkg, out string) error {
	return buildFor(ctx, root, pkg, out, armEnv(), "arm64")
}

// BuildTestARM64 builds the test binary of pkg for linux/arm64 into outDir and
// lists its top-level tests matching run (with the host's go test -list: the
// test files are the same on both architectures).
func BuildTestARM64(ctx context.Context, root, pkg, run, outDir string) (*TestBinary, error) {
	return buildTestFor(ctx, root, pkg, run, outDir, armEnv(), "arm64")
}

// buildFor builds the command pkg into out with env (a GOARCH's); arch names
// it in errors.
func buildFor(ctx context.Context, root, pkg, out string, env []string, arch string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s for %s: %w\n%s", pkg, arch, err, b)
	}
	return nil
}

// buildTestFor builds pkg's test binary with env into outDir as
// NAME.ARCH.test and lists its top-level tests matching run, with the
// host's go test -list (the test files are the same on every GOARCH).
func buildTestFor(ctx context.Context, root, pkg, run, outDir string, env []string, arch string) (*TestBinary, error) {
	name := filepath.Base(filepath.Join(root, filepath.FromSlash(pkg)))
	out := filepath.Join(outDir, name+"."+arch+".test")
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go test -c %s for %s: %w\n%s", pkg, arch, err, b)
	}
	list := exec.CommandContext(ctx, "go", "test", "-list", run, pkg)
	list.Dir = root
	list.Env = append(os.Environ(), "XNIC_VMTEST_LIST=1")
	b, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -list %s: %w", pkg, err)
	}
	tb := &TestBinary{Name: name, Pkg: pkg, Path: out}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "Test") {
			tb.Tests = append(tb.Tests, l)
		}
	}
	return tb, nil
}

// IMXVM describes one run of QEMU's imx8mp-evk machine.
type IMXVM struct {
	Assets    ARM64Assets
	Initramfs string
	// Cmdline is appended to the kernel command line the harness always sets
	// (the console on ttymxc1, huge pages, quiet).
	Cmdline string
	// MemMB is the RAM (default 1024). The ENET's descriptors hold 32-bit
	// addresses; with more than 3 GiB the huge pages may land above 4 GiB,
	// which the driver refuses.
	MemMB int
	// HugePages is the number of 2 MiB huge pages the kernel reserves at boot
	// (default 32).
	HugePages int
	// MAC, LocalPort and PeerAddr are the ENET's address and its -netdev
	// dgram link (from 127.0.0.1:LocalPort, 0 for an ephemeral port, to
	// PeerAddr, "127.0.0.1:port").
	MAC       string
	LocalPort int
	PeerAddr  string
	// Pcap, when set, records the ENET's traffic both ways (filter-dump).
	Pcap string
	// Results, when set, is a file that receives the third UART (ttymxc2):
	// /init's lines without kernel messages.
	Results string
	// Console receives the serial console as it arrives (may be nil).
	Console io.Writer
}

// IMXResultsTTY is the guest device of IMXVM.Results: QEMU connects -serial
// options to the machine's UARTs in order, UART1 (ttymxc0) first.
const IMXResultsTTY = "/dev/ttymxc2"

// Args returns QEMU's command line.
func (vm *IMXVM) Args() ([]string, error) {
	host, port, ok := strings.Cut(vm.PeerAddr, ":")
	if !ok {
		return nil, fmt.Errorf("peer address %q is not host:port", vm.PeerAddr)
	}
	mem, huge := vm.MemMB, vm.HugePages
	if mem == 0 {
		mem = 1024
	}
	if huge == 0 {
		huge = 32
	}
	// The EVK's console is UART2 (ttymxc1), QEMU's second -serial. No kernel
	// driver claims the ENET (fec is a module, never loaded: the initramfs has
	// no udev), so /dev/mem may map its registers.
	cmdline := fmt.Sprintf("console=ttymxc1,115200 panic=-1 quiet loglevel=4 hugepages=%d %s", huge, vm.Cmdline)
	results := "null"
	if vm.Results != "" {
		results = "file:" + vm.Results
	}
	args := []string{
		"-nodefaults", "-display", "none", "-monitor", "none", "-no-reboot",
		"-machine", "imx8mp-evk",
		"-accel", "tcg",
		"-smp", "1",
		"-m", strconv.Itoa(mem),
		"-serial", "null", "-serial", "stdio", "-serial", results,
		"-netdev", fmt.Sprintf("dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=%d,remote.type=inet,remote.host=%s,remote.port=%s",
			vm.LocalPort, host, port),
		"-net", "nic,netdev=n0,macaddr=" + vm.MAC,
		"-kernel", vm.Assets.Kernel,
		"-dtb", vm.Assets.DTB,
		"-initrd", vm.Initramfs,
		"-append", strings.TrimSpace(cmdline),
	}
	if vm.Pcap != "" {
		args = append(args, "-object", "filter-dump,id=dump0,netdev=n0,file="+vm.Pcap)
	}
	return args, nil
}

// Run boots the VM and waits until QEMU exits or ctx ends (then QEMU is killed
// and Run returns ErrVMTimeout). It returns the whole console output either way.
func (vm *IMXVM) Run(ctx context.Context) (string, error) {
	args, err := vm.Args()
	if err != nil {
		return "", err
	}
	return runQEMU(ctx, vm.Assets.QEMU, args, vm.Console)
}
