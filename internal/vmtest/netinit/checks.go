package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
)

// check reports one named check in "go test -v" form under its device's
// binary name (guestproto.NetDeviceBinary).
type check struct {
	bin    string
	failed bool
}

func (c *check) logf(format string, args ...any) {
	guestrt.Say("out %s|     netinit: %s", c.bin, fmt.Sprintf(format, args...))
}

func (c *check) errorf(format string, args ...any) {
	c.failed = true
	c.logf("error: "+format, args...)
}

// runT runs fn as the check name of p's device; it reports whether it passed.
func runT(p *plan, name string, fn func(c *check)) bool {
	c := &check{bin: p.bin}
	begin := time.Now()
	guestrt.Say("out %s| === RUN   %s", c.bin, name)
	fn(c)
	verdict := "PASS"
	if c.failed {
		verdict = "FAIL"
	}
	guestrt.Say("out %s| --- %s: %s (%.2fs)", c.bin, verdict, name, time.Since(begin).Seconds())
	return !c.failed
}

// runChecks runs the checks in order, each only if the ones it needs passed,
// and returns how many failed (a check not run for want of an earlier one is
// not reported, so the host sees it as never finished).
func runChecks(p *plan) int {
	failed := 0
	count := func(ok bool) bool {
		if !ok {
			failed++
		}
		return ok
	}
	var ifname string
	var mac net.HardwareAddr
	if !count(runT(p, "TestProbe", func(c *check) { ifname, mac = probe(c, p) })) {
		return failed
	}
	if !count(runT(p, "TestLinkUp", func(c *check) { linkUp(c, p, ifname) })) {
		return failed
	}
	count(runT(p, "TestPing", func(c *check) { ping(c, p, guestproto.NetPings) }))
	count(runT(p, "TestPingFromPeer", func(c *check) { pingedBy(c, p.echoBase+guestproto.NetPings) }))
	sock, err := openPacket(ifname)
	if err != nil {
		count(runT(p, "TestFramesOut", func(c *check) { c.errorf("AF_PACKET socket on %s: %v", ifname, err) }))
		return failed
	}
	cl := traffic.NewClient(mac, sock.send, sock.recv)
	cl.Timeout = 30 * time.Second
	count(runT(p, "TestFramesOut", func(c *check) { framesOut(c, p, cl) }))
	count(runT(p, "TestFramesIn", func(c *check) { framesIn(c, p, cl) }))
	sock.close()
	if p.tcpBytes > 0 {
		count(runT(p, "TestTCPStream", func(c *check) { tcpStream(c, p, ifname) }))
	}
	if p.tso {
		count(runT(p, "TestUDPGSO", func(c *check) { udpGSO(c, p) }))
	}
	if p.phc {
		count(runT(p, "TestPHC", func(c *check) { phc(c, ifname) }))
	}
	// The lifecycle (lifecycle.go); each step needs the link the one before
	// left.
	steps := []struct {
		name string
		fn   func(c *check)
	}{
		{"TestJumbo", func(c *check) { jumbo(c, p, ifname) }},
		{"TestDownUp", func(c *check) { downUp(c, p, ifname) }},
		{"TestMACChange", func(c *check) { changeMAC(c, p, ifname, mac) }},
		{"TestFilters", func(c *check) { filters(c, p, ifname) }},
	}
	if p.ethtool != "" {
		steps = append(steps, struct {
			name string
			fn   func(c *check)
		}{"TestEthtool", func(c *check) { ethtool(c, p, ifname) }})
	}
	for _, s := range steps {
		if !count(runT(p, s.name, s.fn)) {
			break
		}
	}
	count(runT(p, "TestStats", func(c *check) { stats(c, p, ifname) }))
	if p.module != "" {
		count(runT(p, "TestReload", func(c *check) { reload(c, p) }))
	}
	return failed
}

// probe waits for the driver to register the interface with the device's
// MAC address, and checks the PCI function behind it and its driver.
func probe(c *check, p *plan) (string, net.HardwareAddr) {
	deadline := time.Now().Add(60 * time.Second)
	var ifname string
	for {
		if ifname = ifaceByMAC(p.mac); ifname != "" {
			break
		}
		if time.Now().After(deadline) {
			c.errorf("no network interface with MAC %s after 60 s", p.mac)
			return "", nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	dev, _ := filepath.EvalSymlinks(filepath.Join("/sys/class/net", ifname, "device"))
	bdf := filepath.Base(dev)
	v, _ := guestrt.ReadHex(filepath.Join(dev, "vendor"))
	d, _ := guestrt.ReadHex(filepath.Join(dev, "device"))
	if uint16(v) != p.vendor || uint16(d) != p.device {
		c.errorf("%s (%s) is %04x:%04x, want %04x:%04x", ifname, bdf, v, d, p.vendor, p.device)
	}
	drv, _ := os.Readlink(filepath.Join(dev, "driver"))
	if filepath.Base(drv) != p.driver {
		c.errorf("%s is bound to %q, want %q", bdf, filepath.Base(drv), p.driver)
	}
	mac, _ := net.ParseMAC(p.mac)
	c.logf("%s %04x:%04x driver %s interface %s MAC %s", bdf, v, d, filepath.Base(drv), ifname, mac)
	return ifname, mac
}

// ifaceByMAC is the interface with address mac ("" if none).
func ifaceByMAC(mac string) string {
	ents, _ := os.ReadDir("/sys/class/net")
	for _, e := range ents {
		if strings.EqualFold(readSys(filepath.Join("/sys/class/net", e.Name(), "address")), mac) {
			return e.Name()
		}
	}
	return ""
}

func readSys(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// linkUp gives the interface its address, brings it up and waits for carrier.
func linkUp(c *check, p *plan, ifname string) {
	if err := setAddr(ifname, p.addr, p.prefix); err != nil {
		c.errorf("%v", err)
		return
	}
	if err := setUp(ifname, true); err != nil {
		c.errorf("%v", err)
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for readSys(filepath.Join("/sys/class/net", ifname, "carrier")) != "1" {
		if time.Now().After(deadline) {
			c.errorf("%s: no carrier 60 s after IFF_UP (operstate %s)", ifname,
				readSys(filepath.Join("/sys/class/net", ifname, "operstate")))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.logf("%s up: %d.%d.%d.%d/%d, speed %s duplex %s", ifname, p.addr[0], p.addr[1], p.addr[2], p.addr[3], p.prefix,
		readSys(filepath.Join("/sys/class/net", ifname, "speed")), readSys(filepath.Join("/sys/class/net", ifname, "duplex")))
}

func framesOut(c *check, p *plan, cl *traffic.Client) {
	if err := cl.Hello(30 * time.Second); err != nil {
		c.errorf("hello: %v", err)
		return
	}
	rep, err := cl.Transmit(p.frames, p.seed, 120*time.Second)
	if err != nil {
		c.errorf("%d frames to the peer: %v", p.frames, err)
		return
	}
	c.logf("%s", rep)
}

func framesIn(c *check, p *plan, cl *traffic.Client) {
	if cl.PeerMAC() == nil {
		c.errorf("no peer (hello failed)")
		return
	}
	st, err := cl.Inject(p.frames, p.seed+1, 128)
	if err != nil {
		c.errorf("inject: %v", err)
		return
	}
	if err := cl.Receive(st, 120*time.Second); err != nil {
		c.errorf("%v", err)
		return
	}
	c.logf("received %d frames byte-exact and in order (%d stray)", p.frames, cl.Stray)
}

// pingedBy waits until the kernel has answered n echo requests (the host
// peer's, which start when it sees the guest's ARP request), from the
// Icmp OutEchoReps counter of /proc/net/snmp.
func pingedBy(c *check, n int) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		reps, err := icmpCounter("OutEchoReps")
		if err != nil {
			c.errorf("%v", err)
			return
		}
		if reps >= n {
			c.logf("answered %d echo requests from the peer", reps)
			return
		}
		if time.Now().After(deadline) {
			c.errorf("answered %d echo requests from the peer within 20 s, want %d", reps, n)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// icmpCounter reads one Icmp counter from /proc/net/snmp (a header line of
// names, then a line of values).
func icmpCounter(name string) (int, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Icmp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i := 1; i < len(f) && i < len(names); i++ {
			if names[i] == name {
				return strconv.Atoi(f[i])
			}
		}
	}
	return 0, fmt.Errorf("/proc/net/snmp has no Icmp %s", name)
}

// statNames are the /sys/class/net/X/statistics files the host compares.
var statNames = []string{"rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_errors", "tx_errors",
	"rx_dropped", "tx_dropped", "rx_crc_errors", "rx_length_errors", "rx_over_errors", "rx_missed_errors", "multicast"}

// stats takes the interface down (nothing more goes on the wire) and prints
// its statistics on one StatsLine line.
func stats(c *check, p *plan, ifname string) {
	if err := setUp(ifname, false); err != nil {
		c.errorf("%v", err)
	}
	time.Sleep(200 * time.Millisecond)
	t, zeroed := totals(ifname)
	if len(zeroed) > 0 {
		c.logf("the driver zeroed its counters at: %s (carried over)", strings.Join(zeroed, ", "))
	}
	var b strings.Builder
	b.WriteString(guestproto.NetDeviceStats(p.name))
	for _, n := range statNames {
		if _, err := strconv.ParseUint(readSys(filepath.Join("/sys/class/net", ifname, "statistics", n)), 10, 64); err != nil {
			c.errorf("statistics/%s unreadable: %v", n, err)
			continue
		}
		fmt.Fprintf(&b, " %s=%d", n, t[n])
	}
	guestrt.Say("%s", b.String())
	c.logf("%s", b.String())
}
