package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
)

var (
	outMu sync.Mutex
	out   = bufio.NewWriterSize(os.Stdout, 64<<10) // the console, for people
	res   io.Writer                                // guestproto.ResultsTTY, for the host
	early []byte                                   // lines said before res opened
)

// say prints one line for the host on the results port and the console.
func say(format string, args ...any) {
	line := guestproto.Prefix + fmt.Sprintf(format, args...) + "\n"
	outMu.Lock()
	defer outMu.Unlock()
	out.WriteString(line)
	out.Flush()
	if res != nil {
		io.WriteString(res, line)
	} else {
		early = append(early, line...)
	}
}

func openResults(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	res = f
	_, err = f.Write(early)
	early = nil
	return err
}

func step(name string, err error, detailOK string) {
	if err != nil {
		say("step %s fail %v", name, err)
		return
	}
	say("step %s ok %s", name, detailOK)
}

func main() {
	say("boot")
	failures, err := run()
	if err != nil {
		say("fatal %v", err)
	} else {
		say("done %d", failures)
	}
	outMu.Lock()
	out.Flush()
	outMu.Unlock()
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Fprintf(os.Stderr, "netinit: power off: %v\n", err)
	}
	select {} // returning from PID 1 panics the kernel; panic=-1 ends the VM too
}

// plan is what the host asked for, from guestproto.Config and its Env.
type plan struct {
	cfg    guestproto.Config
	mode   string // guestproto.EnvNetMode: "" (Linux's driver) or "vfio"
	driver string
	addr   [4]byte
	prefix int
	peerIP [4]byte
	frames int
	seed   int64
}

func readPlan() (*plan, error) {
	b, err := os.ReadFile(guestproto.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	p := &plan{}
	if err := json.Unmarshal(b, &p.cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", guestproto.ConfigPath, err)
	}
	env := p.cfg.Env
	if p.mode = env[guestproto.EnvNetMode]; p.mode == "vfio" {
		return p, nil // the rest is for the Linux-driver plan
	}
	p.driver = env[guestproto.EnvNetDriver]
	if p.driver == "" {
		return nil, fmt.Errorf("config has no %s", guestproto.EnvNetDriver)
	}
	a, pfx, ok := strings.Cut(env[guestproto.EnvNetAddr], "/")
	if p.addr, err = parseIPv4(a); err != nil || !ok {
		return nil, fmt.Errorf("%s=%q: want a.b.c.d/n", guestproto.EnvNetAddr, env[guestproto.EnvNetAddr])
	}
	if p.prefix, err = strconv.Atoi(pfx); err != nil || p.prefix < 1 || p.prefix > 30 {
		return nil, fmt.Errorf("%s=%q: prefix must be 1-30", guestproto.EnvNetAddr, env[guestproto.EnvNetAddr])
	}
	if p.peerIP, err = parseIPv4(env[guestproto.EnvNetPeerIP]); err != nil {
		return nil, fmt.Errorf("%s: %w", guestproto.EnvNetPeerIP, err)
	}
	if p.frames, err = strconv.Atoi(env[guestproto.EnvNetFrames]); err != nil || p.frames < 0 {
		return nil, fmt.Errorf("%s=%q: want a count", guestproto.EnvNetFrames, env[guestproto.EnvNetFrames])
	}
	if p.seed, err = strconv.ParseInt(env[guestproto.EnvNetSeed], 10, 64); err != nil {
		return nil, fmt.Errorf("%s=%q: want an integer", guestproto.EnvNetSeed, env[guestproto.EnvNetSeed])
	}
	return p, nil
}

func parseIPv4(s string) ([4]byte, error) {
	var ip [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return ip, fmt.Errorf("%q is not an IPv4 address", s)
	}
	for i, part := range parts {
		n, err := strconv.ParseUint(part, 10, 8)
		if err != nil {
			return ip, fmt.Errorf("%q is not an IPv4 address", s)
		}
		ip[i] = byte(n)
	}
	return ip, nil
}

func run() (int, error) {
	if err := mountAll(); err != nil {
		return 0, err
	}
	step("results", openResults(guestproto.ResultsTTY), guestproto.ResultsTTY)
	p, err := readPlan()
	if err != nil {
		return 0, err
	}
	defer dmesgTail(p.cfg.DmesgLines)
	// No IPv6 on the interface: router and neighbour solicitations would put
	// frames on the wire that neither side's checks expect (they would still
	// be counted alike, but the frame streams stay alone on the wire).
	step("sysctl", os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0), "ipv6 off")
	for _, m := range p.cfg.Modules {
		err := loadModule(m)
		step("module", err, filepath.Base(m.Path))
		if err != nil {
			return 0, err
		}
	}
	if p.mode == "vfio" {
		return runVFIO(p)
	}
	say("start %s", guestproto.NetBinary)
	begin := time.Now()
	failed := runChecks(p)
	code := 0
	if failed > 0 {
		code = 1
	}
	say("exit %s %d %.2f", guestproto.NetBinary, code, time.Since(begin).Seconds())
	return failed, nil
}

func mountAll() error {
	for _, m := range []struct{ src, dst, fstype, data string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
	} {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.dst, err)
		}
		err := unix.Mount(m.src, m.dst, m.fstype, 0, m.data)
		if errors.Is(err, unix.EBUSY) {
			err = nil // devtmpfs may be automounted
		}
		step("mount", err, m.dst)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	return nil
}

func loadModule(m guestproto.Module) error {
	f, err := os.Open(m.Path)
	if err != nil {
		return fmt.Errorf("open module: %w", err)
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), m.Params, 0)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finit_module %s: %w", m.Path, err)
	}
	return nil
}

func dmesgTail(n int) {
	if n <= 0 {
		return
	}
	buf := make([]byte, 1<<20)
	k, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		say("dmesg| (klogctl: %v)", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(buf[:k]), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		say("dmesg| %s", l)
	}
}
