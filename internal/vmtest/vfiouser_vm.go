package vmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// ErrNoVFIOUserAssets says the guest tier's QEMU or kernel is missing.
var ErrNoVFIOUserAssets = errors.New("guest tier assets missing: run internal/vmtest/setup-vfiouser.sh (as root) for QEMU >= 10.1 with vfio-user-pci and Debian's generic kernel")

// LocateVFIOUser finds the guest tier's QEMU (>= 10.1, with vfio-user-pci),
// the generic kernel and its modules: the XNIC_VFIOUSER_QEMU,
// XNIC_VFIOUSER_KERNEL and XNIC_VFIOUSER_MODULES variables first, then the
// vfiouser.env that setup-vfiouser.sh writes in its cache directory.
func LocateVFIOUser() (Assets, error) {
	a := Assets{
		QEMU:    os.Getenv("XNIC_VFIOUSER_QEMU"),
		Kernel:  os.Getenv("XNIC_VFIOUSER_KERNEL"),
		Modules: os.Getenv("XNIC_VFIOUSER_MODULES"),
		Ethtool: os.Getenv("XNIC_VFIOUSER_ETHTOOL_ROOT"),
	}
	for _, dir := range CacheDirs() {
		env, err := readEnvFile(filepath.Join(dir, "vfiouser.env"))
		if err != nil {
			continue
		}
		a.QEMU = cmp(a.QEMU, env["XNIC_VFIOUSER_QEMU"])
		a.Kernel = cmp(a.Kernel, env["XNIC_VFIOUSER_KERNEL"])
		a.Modules = cmp(a.Modules, env["XNIC_VFIOUSER_MODULES"])
		a.Ethtool = cmp(a.Ethtool, env["XNIC_VFIOUSER_ETHTOOL_ROOT"])
		break
	}
	var missing []string
	if a.QEMU == "" || !isFile(a.QEMU) {
		missing = append(missing, "QEMU (XNIC_VFIOUSER_QEMU)")
	}
	if a.Kernel == "" || !isFile(a.Kernel) {
		missing = append(missing, "kernel (XNIC_VFIOUSER_KERNEL)")
	}
	if a.Modules == "" || !isFile(filepath.Join(a.Modules, "modules.dep")) {
		missing = append(missing, "modules with modules.dep (XNIC_VFIOUSER_MODULES)")
	}
	if len(missing) > 0 {
		return a, fmt.Errorf("%w (missing: %s)", ErrNoVFIOUserAssets, strings.Join(missing, ", "))
	}
	return a, nil
}

func cmp(have, alt string) string {
	if have != "" {
		return have
	}
	return alt
}

// UserVM is a guest whose NIC is a device model served over vfio-user: guest
// RAM is a shared memfd (so the server can map what the guest's driver hands
// the device) and the NIC is QEMU's vfio-user-pci client on Socket.
type UserVM struct {
	Assets    Assets
	Initramfs string
	Socket    string // the vfio-user server's Unix socket
	// Sockets are more vfio-user servers, a vfio-user-pci device each, after
	// Socket's (Socket may then be empty).
	Sockets []string
	// ExtraArgs are more QEMU arguments (e.g. another NIC), after the
	// devices.
	ExtraArgs []string
	Cmdline   string // appended to the harness's kernel command line
	MemMB     int    // default 512
	CPUs      int    // default 1
	IOMMU     bool   // add intel-iommu (and intel_iommu=on)
	Results   string // file for the guest's second serial port
	Console   io.Writer
	// NoShare puts guest RAM in private anonymous memory (memory-backend-ram)
	// instead of a shared memfd: QEMU then passes DMA_MAP without a
	// descriptor and the server reaches guest memory by DMA_READ/DMA_WRITE.
	NoShare bool
}

// Args returns QEMU's command line.
func (vm *UserVM) Args() ([]string, error) {
	sockets := vm.Sockets
	if vm.Socket != "" {
		sockets = append([]string{vm.Socket}, sockets...)
	}
	if (len(sockets) == 0 && len(vm.ExtraArgs) == 0) || vm.Initramfs == "" {
		return nil, errors.New("vmtest: UserVM needs a device (a socket or extra arguments) and an initramfs")
	}
	mem, cpus := vm.MemMB, vm.CPUs
	if mem == 0 {
		mem = 512
	}
	if cpus == 0 {
		cpus = 1
	}
	// See VM.Args for no_timer_check and the log level.
	cmdline := "console=ttyS0 no_timer_check panic=-1 quiet loglevel=4 sysctl.kernel.hung_task_timeout_secs=30 "
	machine := "q35,memory-backend=ram0"
	if vm.IOMMU {
		cmdline += "intel_iommu=on "
		machine += ",kernel-irqchip=split"
	}
	args := []string{
		"-nodefaults", "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-machine", machine,
		"-accel", "tcg,thread=single",
		"-smp", strconv.Itoa(cpus),
		"-m", strconv.Itoa(mem),
		"-object", fmt.Sprintf("memory-backend-memfd,id=ram0,size=%dM,share=on", mem),
	}
	if vm.NoShare {
		args[len(args)-1] = fmt.Sprintf("memory-backend-ram,id=ram0,size=%dM", mem)
	}
	if vm.IOMMU {
		// caching-mode=on: QEMU's VFIO devices, vfio-user-pci among them,
		// refuse a vIOMMU without it ("requires caching mode"); with it the
		// guest's IOTLB invalidations tell QEMU of every new mapping, which
		// it passes to the server as DMA_MAP with the guest's IOVA.
		args = append(args, "-device", "intel-iommu,intremap=on,caching-mode=on")
	}
	for _, sock := range sockets {
		dev, err := json.Marshal(map[string]any{
			"driver": "vfio-user-pci",
			"socket": map[string]string{"type": "unix", "path": sock},
		})
		if err != nil {
			return nil, err
		}
		args = append(args, "-device", string(dev))
	}
	args = append(args, vm.ExtraArgs...)
	args = append(args,
		"-kernel", vm.Assets.Kernel,
		"-initrd", vm.Initramfs,
		"-append", strings.TrimSpace(cmdline+vm.Cmdline),
	)
	if vm.Results != "" {
		args = append(args, "-chardev", "file,id=results,path="+vm.Results, "-serial", "chardev:results")
	}
	// XNIC_VFIOUSER_QEMU_ARGS adds arguments for debugging (e.g.
	// "-trace vfio_user_dma_map"), split at spaces.
	args = append(args, strings.Fields(os.Getenv("XNIC_VFIOUSER_QEMU_ARGS"))...)
	return args, nil
}

// Run boots the VM and waits until QEMU exits or ctx ends (QEMU is then killed
// and Run returns ErrVMTimeout); it returns the console output either way.
func (vm *UserVM) Run(ctx context.Context) (string, error) {
	args, err := vm.Args()
	if err != nil {
		return "", err
	}
	return runQEMU(ctx, vm.Assets.QEMU, args, vm.Console)
}

// ParseNetStats reads netinit's guestproto.StatsLine lines ("netstats k=v
// ...") and sums them: one line per driver instance (the reloaded driver's
// interface counts from 0). ok is false when there is no line.
func ParseNetStats(results string) (map[string]uint64, bool, error) {
	lines, err := NetStatsLines(results)
	if err != nil || len(lines) == 0 {
		return nil, len(lines) > 0, err
	}
	sum := map[string]uint64{}
	for _, l := range lines {
		for k, v := range l {
			sum[k] += v
		}
	}
	return sum, true, nil
}

// NetStatsLines returns each StatsLine line's counters, in order.
func NetStatsLines(results string) ([]map[string]uint64, error) { return NetStatsLinesOf(results, "") }

// NetStatsLinesOf returns device name's statistics lines
// (guestproto.NetDeviceStats), in order.
func NetStatsLinesOf(results, name string) ([]map[string]uint64, error) {
	prefix := guestproto.Prefix + guestproto.NetDeviceStats(name) + " "
	var lines []map[string]uint64
	for _, line := range strings.Split(results, "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		m := map[string]uint64{}
		for _, kv := range strings.Fields(line[len(prefix):]) {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("netstats field %q", kv)
			}
			m[k] = n
		}
		lines = append(lines, m)
	}
	return lines, nil
}
