package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

func main() {
	guestrt.Program = "netinit"
	guestrt.Say("boot")
	failures, err := run()
	if err != nil {
		guestrt.Say("fatal %v", err)
	} else {
		guestrt.Say("done %d", failures)
	}
	guestrt.PowerOff()
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
	// ethtool is the guest's ethtool binary ("": no TestEthtool); module the
	// driver's module to reload ("": no TestReload).
	ethtool string
	module  string
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
	p.ethtool, p.module = env[guestproto.EnvNetEthtool], env[guestproto.EnvNetModule]
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
	if err := guestrt.MountAll(guestrt.BaseMounts); err != nil {
		return 0, err
	}
	guestrt.Step("results", guestrt.OpenResults(guestproto.ResultsTTY), guestproto.ResultsTTY)
	p, err := readPlan()
	if err != nil {
		return 0, err
	}
	defer guestrt.DmesgTail(p.cfg.DmesgLines)
	// No IPv6 on the interface: router and neighbour solicitations would put
	// frames on the wire that neither side's checks expect (they would still
	// be counted alike, but the frame streams stay alone on the wire).
	guestrt.Step("sysctl", os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0), "ipv6 off")
	for _, m := range p.cfg.Modules {
		err := guestrt.LoadModule(m)
		guestrt.Step("module", err, filepath.Base(m.Path))
		if err != nil {
			return 0, err
		}
	}
	if p.mode == "vfio" {
		return runVFIO(p)
	}
	guestrt.Say("start %s", guestproto.NetBinary)
	begin := time.Now()
	failed := runChecks(p)
	code := 0
	if failed > 0 {
		code = 1
	}
	guestrt.Say("exit %s %d %.2f", guestproto.NetBinary, code, time.Since(begin).Seconds())
	return failed, nil
}
