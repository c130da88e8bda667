package guestrt

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

// Mount is one file system /init mounts.
type Mount struct{ Src, Dst, FSType, Data string }

// BaseMounts are what every guest needs: proc, sysfs, devtmpfs and /tmp.
var BaseMounts = []Mount{
	{"proc", "/proc", "proc", ""},
	{"sysfs", "/sys", "sysfs", ""},
	{"devtmpfs", "/dev", "devtmpfs", ""},
	{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
}

// MountAll mounts ms in order, each reported as a step.
func MountAll(ms []Mount) error {
	for _, m := range ms {
		if err := os.MkdirAll(m.Dst, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.Dst, err)
		}
		err := unix.Mount(m.Src, m.Dst, m.FSType, 0, m.Data)
		if errors.Is(err, unix.EBUSY) {
			err = nil // devtmpfs may be automounted
		}
		Step("mount", err, m.Dst)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.FSType, m.Dst, err)
		}
	}
	return nil
}

// LoadModule loads the module m names with its parameters; one already
// loaded (or built in) is no error.
func LoadModule(m guestproto.Module) error {
	f, err := os.Open(m.Path)
	if err != nil {
		return fmt.Errorf("open module: %w", err)
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), m.Params, 0)
	if errors.Is(err, unix.EEXIST) {
		return nil // already loaded (or built in)
	}
	if err != nil {
		return fmt.Errorf("finit_module %s: %w", m.Path, err)
	}
	return nil
}

// DmesgTail says the last n lines of the kernel log.
func DmesgTail(n int) {
	if n <= 0 {
		return
	}
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil || size <= 0 {
		size = 1 << 20
	}
	buf := make([]byte, size)
	k, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		Say("dmesg| (klogctl: %v)", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(buf[:k]), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		Say("dmesg| %s", l)
	}
}

// PowerOff flushes the console and powers the VM off. It does not return:
// should the power-off fail, returning from PID 1 would panic the kernel,
// and panic=-1 with QEMU's -no-reboot ends the VM as well.
func PowerOff() {
	Flush()
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Fprintf(os.Stderr, "%s: power off: %v\n", Program, err)
	}
	select {}
}
