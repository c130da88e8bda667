package vmtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Assets are what the VM needs from the host.
type Assets struct {
	QEMU    string // qemu-system-x86_64 with the igb model
	Kernel  string // vmlinuz
	Modules string // /lib/modules/<version> of that kernel (with modules.dep)
	// Ethtool is a root with the guest's ethtool and its libraries
	// (setup-vfiouser.sh step 3; "" when not set up): see GuestEthtool.
	Ethtool string
}

// CacheDirs are where setup.sh may have put things, first match wins.
func CacheDirs() []string {
	var dirs []string
	if d := os.Getenv("XNIC_VMTEST_CACHE"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "/var/cache/xnic-vmtest")
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "xnic-vmtest"))
	}
	return dirs
}

// ErrNoAssets says QEMU or the guest kernel is missing.
var ErrNoAssets = errors.New("VM tier assets missing: run internal/vmtest/setup.sh (as root) to install QEMU from bookworm-backports and download the kernel")

// Locate finds QEMU, the kernel and its modules: the XNIC_VMTEST_QEMU,
// XNIC_VMTEST_KERNEL and XNIC_VMTEST_MODULES variables first, then the
// vmtest.env file setup.sh writes in its cache directory, then PATH for QEMU.
func Locate() (Assets, error) {
	a := Assets{
		QEMU:    os.Getenv("XNIC_VMTEST_QEMU"),
		Kernel:  os.Getenv("XNIC_VMTEST_KERNEL"),
		Modules: os.Getenv("XNIC_VMTEST_MODULES"),
	}
	for _, dir := range CacheDirs() {
		env, err := readEnvFile(filepath.Join(dir, "vmtest.env"))
		if err != nil {
			continue
		}
		if a.QEMU == "" {
			a.QEMU = env["XNIC_VMTEST_QEMU"]
		}
		if a.Kernel == "" {
			a.Kernel = env["XNIC_VMTEST_KERNEL"]
		}
		if a.Modules == "" {
			a.Modules = env["XNIC_VMTEST_MODULES"]
		}
		break
	}
	if a.QEMU == "" {
		a.QEMU, _ = exec.LookPath("qemu-system-x86_64")
	}
	var missing []string
	if a.QEMU == "" || !isFile(a.QEMU) {
		missing = append(missing, "qemu-system-x86_64")
	}
	if a.Kernel == "" || !isFile(a.Kernel) {
		missing = append(missing, "kernel (XNIC_VMTEST_KERNEL)")
	}
	if a.Modules == "" || !isFile(filepath.Join(a.Modules, "modules.dep")) {
		missing = append(missing, "kernel modules with modules.dep (XNIC_VMTEST_MODULES)")
	}
	if len(missing) > 0 {
		return a, fmt.Errorf("%w (missing: %s)", ErrNoAssets, strings.Join(missing, ", "))
	}
	return a, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func readEnvFile(p string) (map[string]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return m, sc.Err()
}
