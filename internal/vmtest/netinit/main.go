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

// plan is what the host asked for, from guestproto.Config and its Env: one
// per device (guestproto.EnvNetDevices), or the one Config describes.
type plan struct {
	cfg    guestproto.Config
	mode   string // guestproto.EnvNetMode: "" (Linux's driver) or "vfio"
	name   string // the device's name ("": the single device)
	bin    string // the binary name its checks report under
	vendor uint16
	device uint16
	mac    string
	driver string
	addr   [4]byte
	prefix int
	peerIP [4]byte
	frames int
	seed   int64
	// tcpBytes is TestTCPStream's length (0: no TestTCPStream); phc asks
	// for TestPHC.
	tcpBytes int
	tso      bool // TestTCPStream wants ethtool -k to show TSO on
	phc      bool
	// ethtool is the guest's ethtool binary ("": no TestEthtool); module the
	// driver's module to reload ("": no TestReload), among modules.
	ethtool string
	module  string
	modules []guestproto.Module
	// echoBase is the kernel's count of echo replies when the device's
	// checks began: the device's peer pings on top of it.
	echoBase int
}

// readPlans reads the configuration: the vfio plan, or one Linux-driver
// plan per device.
func readPlans() ([]*plan, error) {
	b, err := os.ReadFile(guestproto.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var cfg guestproto.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", guestproto.ConfigPath, err)
	}
	env := cfg.Env
	if env[guestproto.EnvNetMode] == "vfio" {
		return []*plan{{cfg: cfg, mode: "vfio"}}, nil // the rest is for the Linux-driver plan
	}
	devs := []guestproto.NetDevice{{Vendor: cfg.Vendor, Device: cfg.Device, MAC: cfg.MAC,
		Driver: env[guestproto.EnvNetDriver], Module: env[guestproto.EnvNetModule],
		Addr: env[guestproto.EnvNetAddr], PeerIP: env[guestproto.EnvNetPeerIP]}}
	if list := env[guestproto.EnvNetDevices]; list != "" {
		devs = nil
		if err := json.Unmarshal([]byte(list), &devs); err != nil || len(devs) == 0 {
			return nil, fmt.Errorf("%s: want a JSON list of devices (%v)", guestproto.EnvNetDevices, err)
		}
	} else {
		if devs[0].Frames, err = strconv.Atoi(env[guestproto.EnvNetFrames]); err != nil || devs[0].Frames < 0 {
			return nil, fmt.Errorf("%s=%q: want a count", guestproto.EnvNetFrames, env[guestproto.EnvNetFrames])
		}
		if devs[0].Seed, err = strconv.ParseInt(env[guestproto.EnvNetSeed], 10, 64); err != nil {
			return nil, fmt.Errorf("%s=%q: want an integer", guestproto.EnvNetSeed, env[guestproto.EnvNetSeed])
		}
	}
	var plans []*plan
	for _, d := range devs {
		p, err := devicePlan(cfg, d)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// devicePlan checks one device's part of the configuration.
func devicePlan(cfg guestproto.Config, d guestproto.NetDevice) (*plan, error) {
	p := &plan{cfg: cfg, name: d.Name, bin: guestproto.NetDeviceBinary(d.Name), vendor: d.Vendor, device: d.Device,
		mac: d.MAC, driver: d.Driver, module: d.Module, frames: d.Frames, seed: d.Seed, tcpBytes: d.TCPBytes, tso: d.TSO, phc: d.PHC,
		ethtool: cfg.Env[guestproto.EnvNetEthtool], modules: cfg.Modules}
	if p.driver == "" || p.mac == "" {
		return nil, fmt.Errorf("device %q: no driver or MAC", d.Name)
	}
	a, pfx, ok := strings.Cut(d.Addr, "/")
	var err error
	if p.addr, err = parseIPv4(a); err != nil || !ok {
		return nil, fmt.Errorf("device %q address %q: want a.b.c.d/n", d.Name, d.Addr)
	}
	if p.prefix, err = strconv.Atoi(pfx); err != nil || p.prefix < 1 || p.prefix > 30 {
		return nil, fmt.Errorf("device %q address %q: prefix must be 1-30", d.Name, d.Addr)
	}
	if p.peerIP, err = parseIPv4(d.PeerIP); err != nil {
		return nil, fmt.Errorf("device %q peer: %w", d.Name, err)
	}
	if d.Frames < 0 || d.TCPBytes < 0 {
		return nil, fmt.Errorf("device %q: %d frames, a %d-byte TCP stream", d.Name, d.Frames, d.TCPBytes)
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
	if err := guestrt.MountAll(guestrt.BaseMounts); err != nil {
		return 0, err
	}
	guestrt.Step("results", guestrt.OpenResults(guestproto.ResultsTTY), guestproto.ResultsTTY)
	plans, err := readPlans()
	if err != nil {
		return 0, err
	}
	cfg := plans[0].cfg
	defer guestrt.DmesgTail(cfg.DmesgLines)
	// No IPv6 on the interface: router and neighbour solicitations would put
	// frames on the wire that neither side's checks expect (they would still
	// be counted alike, but the frame streams stay alone on the wire).
	guestrt.Step("sysctl", os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0), "ipv6 off")
	for _, m := range cfg.Modules {
		err := guestrt.LoadModule(m)
		guestrt.Step("module", err, filepath.Base(m.Path))
		if err != nil {
			return 0, err
		}
	}
	if plans[0].mode == "vfio" {
		return runVFIO(plans[0])
	}
	// The devices one after the other, each on its own subnet; a device's
	// reload (rmmod) also unbinds the others of its driver, which probe
	// again before their own checks look for them.
	failed := 0
	for _, p := range plans {
		for ifname := range books {
			forget(ifname)
		}
		if p.echoBase, err = icmpCounter("OutEchoReps"); err != nil {
			return failed, err
		}
		guestrt.Say("start %s", p.bin)
		begin := time.Now()
		n := runChecks(p)
		code := 0
		if n > 0 {
			code = 1
		}
		guestrt.Say("exit %s %d %.2f", p.bin, code, time.Since(begin).Seconds())
		failed += n
	}
	return failed, nil
}
