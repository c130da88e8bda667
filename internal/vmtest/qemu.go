package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// VM describes one guest run.
type VM struct {
	Assets    Assets
	Initramfs string
	// Cmdline is appended to the kernel command line the harness always sets
	// (console=ttyS0 intel_iommu=on panic=-1 ...).
	Cmdline string
	MemMB   int // default 1024
	CPUs    int // default 2
	// TCGThread is QEMU's tcg thread= setting: "multi" (a host thread per
	// vCPU), "single" (one thread runs all vCPUs round-robin) or "" (QEMU's
	// default, multi on x86 hosts). With multi, 2 vCPUs and intel-iommu, about
	// one boot in five here lost vCPU 1's timer interrupt: RCU stalls ("timer
	// wakeup didn't happen"), tasks blocked for good, the run killed at its
	// deadline. With single it did not happen in a dozen runs, and runs were no
	// slower (the host has 2 busy cores), so the harness uses single.
	TCGThread string
	// NIC: QEMU's igb with this MAC, its -netdev dgram from LocalPort (0: an
	// ephemeral port) on 127.0.0.1 to PeerAddr ("127.0.0.1:port").
	MAC       string
	LocalPort int
	PeerAddr  string
	// Pcap, when set, records the NIC's traffic both ways (filter-dump).
	Pcap string
	// Results, when set, is a file that receives the guest's second serial
	// port (guestproto.ResultsTTY): /init's lines without kernel messages.
	Results string
	// Console receives the serial console as it arrives (may be nil).
	Console io.Writer
}

// Args returns QEMU's command line for the VM.
func (vm *VM) Args() ([]string, error) {
	host, port, ok := strings.Cut(vm.PeerAddr, ":")
	if !ok {
		return nil, fmt.Errorf("peer address %q is not host:port", vm.PeerAddr)
	}
	mem, cpus := vm.MemMB, vm.CPUs
	if mem == 0 {
		mem = 1024
	}
	if cpus == 0 {
		cpus = 2
	}
	// no_timer_check: under TCG on a busy host the kernel's check that the
	// timer interrupt comes through the interrupt-remapped IO-APIC can time
	// out, and the kernel panics ("timer doesn't work through
	// Interrupt-remapped IO-APIC"); seen here.
	// loglevel=4: kernel errors (DMAR faults, hung tasks, lockups) show on the
	// console as they happen, warnings and chatter do not. The hung-task timeout
	// is short so a task stuck in the kernel is reported before the deadline.
	cmdline := "console=ttyS0 intel_iommu=on no_timer_check panic=-1 quiet loglevel=4 hugepages=64 " +
		"sysctl.kernel.hung_task_timeout_secs=30 " + vm.Cmdline
	accel := "tcg"
	if vm.TCGThread != "" {
		accel += ",thread=" + vm.TCGThread
	}
	args := []string{
		"-nodefaults", "-display", "none", "-serial", "stdio", "-monitor", "none",
		"-no-reboot",
		"-machine", "q35,kernel-irqchip=split",
		"-accel", accel,
		"-smp", strconv.Itoa(cpus),
		"-m", strconv.Itoa(mem),
		"-device", "intel-iommu,intremap=on",
		"-netdev", fmt.Sprintf("dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=%d,remote.type=inet,remote.host=%s,remote.port=%s",
			vm.LocalPort, host, port),
		"-device", "igb,netdev=n0,mac=" + vm.MAC + ",romfile=",
		"-kernel", vm.Assets.Kernel,
		"-initrd", vm.Initramfs,
		"-append", strings.TrimSpace(cmdline),
	}
	if vm.Results != "" {
		args = append(args, "-chardev", "file,id=results,path="+vm.Results, "-serial", "chardev:results")
	}
	if vm.Pcap != "" {
		args = append(args, "-object", "filter-dump,id=dump0,netdev=n0,file="+vm.Pcap)
	}
	return args, nil
}

// ErrVMTimeout reports a guest that did not power off in time.
var ErrVMTimeout = errors.New("VM did not power off before the deadline (QEMU killed)")

// Run boots the VM and waits until QEMU exits or ctx ends (then QEMU is
// killed and Run returns ErrVMTimeout). It returns the whole console output
// either way.
func (vm *VM) Run(ctx context.Context) (string, error) {
	args, err := vm.Args()
	if err != nil {
		return "", err
	}
	return runQEMU(ctx, vm.Assets.QEMU, args, vm.Console)
}

// runQEMU runs QEMU in its own process group (so nothing it starts outlives
// the test), with no standard input, collecting its output (and copying it to
// console when set), until it exits or ctx ends; then it is killed and the
// error is ErrVMTimeout. It returns the output either way.
func runQEMU(ctx context.Context, qemu string, args []string, console io.Writer) (string, error) {
	cmd := exec.Command(qemu, args...)
	var buf bytes.Buffer
	var mu sync.Mutex
	w := io.Writer(&lockedWriter{mu: &mu, w: &buf})
	if console != nil {
		w = io.MultiWriter(w, console)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", qemu, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case err := <-done:
		if err != nil {
			runErr = fmt.Errorf("qemu: %w", err)
		}
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
			runErr = ErrVMTimeout
		case <-time.After(10 * time.Second):
			runErr = fmt.Errorf("qemu (pid %d) did not die after SIGKILL", cmd.Process.Pid)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return buf.String(), runErr
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
