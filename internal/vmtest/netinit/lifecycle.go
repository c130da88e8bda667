package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/guestrt"
)

// The lifecycle a user puts an interface through after the traffic checks:
// jumbo frames, down and up, a MAC address change, the receive filters,
// ethtool, and (after the statistics) unloading and reloading the driver.
// Each step ends with pings both ways through the peer, so a driver or model
// that lost the link, a filter entry or a ring on the way is caught at the
// step that broke it.

// jumboMTUs are tried largest first: igb takes 9000 (max 9216); stmmac
// refuses an MTU above its TX FIFO per queue (stmmac_change_mtu: 32 KiB over
// 4 queues on the ADL-S, over 8 on Elkhart Lake).
var jumboMTUs = []int{9000, 8000, 4000}

// jumbo raises the MTU as far as the driver allows and pings with frames of
// the minimum size, the standard maximum and the new maximum, then puts the
// MTU back. stmmac changes the MTU only while the interface is down, so every
// change is made down.
func jumbo(c *check, p *plan, ifname string) {
	mtu := 0
	if err := setUp(ifname, false); err != nil {
		c.errorf("%v", err)
		return
	}
	var refused []string
	for _, m := range jumboMTUs {
		if err := setMTU(ifname, m); err != nil {
			refused = append(refused, fmt.Sprintf("%d: %v", m, err))
			continue
		}
		mtu = m
		break
	}
	if mtu == 0 {
		c.errorf("no jumbo MTU taken (%s)", strings.Join(refused, "; "))
		return
	}
	c.logf("MTU %d (refused: %v)", mtu, refused)
	if !upAndPing(c, p, ifname, 0) {
		return
	}
	for _, size := range []int{60 - 42, 1514 - 42, mtu + 14 - 42} {
		pingSize(c, p, 2, size)
	}
	if err := setUp(ifname, false); err != nil {
		c.errorf("%v", err)
		return
	}
	if err := setMTU(ifname, 1500); err != nil {
		c.errorf("MTU back to 1500: %v", err)
		return
	}
	upAndPing(c, p, ifname, 2)
}

// downUp takes the interface down and up again.
func downUp(c *check, p *plan, ifname string) {
	if err := setUp(ifname, false); err != nil {
		c.errorf("%v", err)
		return
	}
	if readSys(filepath.Join("/sys/class/net", ifname, "operstate")) == "up" {
		c.errorf("%s still up after IFF_UP was cleared", ifname)
	}
	upAndPing(c, p, ifname, 3)
}

// upAndPing sets IFF_UP, waits for carrier and pings the peer n times.
func upAndPing(c *check, p *plan, ifname string, n int) bool {
	if err := setUp(ifname, true); err != nil {
		c.errorf("%v", err)
		return false
	}
	if err := waitCarrier(ifname, 30*time.Second); err != nil {
		c.errorf("%v", err)
		return false
	}
	if n > 0 {
		pingSize(c, p, n, 56)
	}
	return !c.failed
}

func waitCarrier(ifname string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for readSys(filepath.Join("/sys/class/net", ifname, "carrier")) != "1" {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no carrier within %v (operstate %s)", ifname, d,
				readSys(filepath.Join("/sys/class/net", ifname, "operstate")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// setMTU is SIOCSIFMTU.
func setMTU(ifname string, mtu int) error {
	return ifreqCall(ifname, unix.SIOCSIFMTU, func(r *unix.Ifreq) error { r.SetUint32(uint32(mtu)); return nil })
}

// setFlag sets or clears one interface flag, keeping the others.
func setFlag(ifname string, flag uint16, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	f := ifr.Uint16()
	if on {
		f |= flag
	} else {
		f &^= flag
	}
	ifr.SetUint16(f)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// changeMAC gives the interface a locally administered address (with the
// interface down: stmmac has no live address change) and pings from it; the
// peer answers to the request's source address. The device's address comes
// back at the end.
func changeMAC(c *check, p *plan, ifname string, orig net.HardwareAddr) {
	other := net.HardwareAddr{0x02, 0x58, 0x4e, 0xaa, 0xbb, orig[5] ^ 0x5a}
	for _, mac := range []net.HardwareAddr{other, orig} {
		if err := setUp(ifname, false); err != nil {
			c.errorf("%v", err)
			return
		}
		if err := hwaddrCall(ifname, unix.SIOCSIFHWADDR, unix.ARPHRD_ETHER, mac); err != nil {
			c.errorf("SIOCSIFHWADDR %s %s: %v", ifname, mac, err)
			return
		}
		if got := readSys(filepath.Join("/sys/class/net", ifname, "address")); got != mac.String() {
			c.errorf("%s has address %s after setting %s", ifname, got, mac)
		}
		if !upAndPing(c, p, ifname, 2) {
			return
		}
		c.logf("pinged from %s", mac)
	}
}

// filters turns on promiscuous and all-multicast reception, then adds
// multicast addresses: two (the MACs' perfect filters or hash) and then 40
// (more than any perfect filter: igb's MTA, stmmac's hash table), pinging
// after each change. SIOCADDMULTI puts link-layer addresses on the list
// without IGMP reports, so no frame goes out that the counters would not
// expect.
func filters(c *check, p *plan, ifname string) {
	for _, f := range []struct {
		name string
		flag uint16
	}{{"promiscuous", unix.IFF_PROMISC}, {"all-multicast", unix.IFF_ALLMULTI}} {
		if err := setFlag(ifname, f.flag, true); err != nil {
			c.errorf("%s on: %v", f.name, err)
			return
		}
		pingSize(c, p, 1, 56)
		if err := setFlag(ifname, f.flag, false); err != nil {
			c.errorf("%s off: %v", f.name, err)
			return
		}
		pingSize(c, p, 1, 56)
	}
	for _, n := range []int{2, 40} {
		var added []net.HardwareAddr
		for i := 0; i < n; i++ {
			mac := net.HardwareAddr{0x01, 0x00, 0x5e, 0x01, byte(i >> 8), byte(i)}
			if err := hwaddrCall(ifname, unix.SIOCADDMULTI, unix.AF_UNSPEC, mac); err != nil {
				c.errorf("SIOCADDMULTI %s: %v", mac, err)
				break
			}
			added = append(added, mac)
		}
		pingSize(c, p, 1, 56)
		for _, mac := range added {
			if err := hwaddrCall(ifname, unix.SIOCDELMULTI, unix.AF_UNSPEC, mac); err != nil {
				c.errorf("SIOCDELMULTI %s: %v", mac, err)
			}
		}
		pingSize(c, p, 1, 56)
		c.logf("%d multicast addresses added and removed", len(added))
	}
}

// ethtool runs the ethtool binary the host put in the guest as a user does:
// driver info, statistics, rings (-g, then -G to a quarter and back), interrupt
// coalescing (-c, -C), offloads (-k), and link modes (-s advertise 100 full
// only, then everything up to 1000 full), pinging after each change.
func ethtool(c *check, p *plan, ifname string) {
	run := func(args ...string) (string, bool) {
		checkpoint(ifname, "before ethtool "+args[0])
		out, err := exec.Command(p.ethtool, args...).CombinedOutput()
		checkpoint(ifname, "ethtool "+strings.Join(args, " "))
		text := strings.TrimSpace(string(out))
		if err != nil {
			c.errorf("ethtool %s: %v\n%s", strings.Join(args, " "), err, text)
			return text, false
		}
		lines := strings.Split(text, "\n")
		c.logf("ethtool %s: %d lines, first %q", strings.Join(args, " "), len(lines), lines[0])
		return text, true
	}
	if _, ok := run("-i", ifname); !ok {
		return
	}
	if out, ok := run("-S", ifname); ok && strings.Count(out, "\n") < 5 {
		c.errorf("ethtool -S %s: %d lines of statistics", ifname, strings.Count(out, "\n"))
	}
	out, ok := run("-g", ifname)
	if !ok {
		return
	}
	rx, tx, err := currentRings(out)
	if err != nil {
		c.errorf("ethtool -g: %v", err)
		return
	}
	for _, r := range [][2]int{{max(rx/4, 64), max(tx/4, 64)}, {rx, tx}} {
		if _, ok := run("-G", ifname, "rx", strconv.Itoa(r[0]), "tx", strconv.Itoa(r[1])); !ok {
			return
		}
		got, ok := run("-g", ifname)
		if !ok {
			return
		}
		if grx, gtx, err := currentRings(got); err != nil || grx != r[0] || gtx != r[1] {
			c.errorf("after -G rx %d tx %d, -g gives rx %d tx %d (%v)", r[0], r[1], grx, gtx, err)
		}
		if !upAndPing(c, p, ifname, 2) { // the driver restarts the interface with the new rings
			return
		}
	}
	run("-c", ifname)
	if _, ok := run("-C", ifname, "rx-usecs", "50"); ok {
		pingSize(c, p, 2, 56)
	}
	run("-k", ifname)
	if out, ok := run(ifname); ok && strings.Contains(out, "Port: FIBRE") {
		fibreModes(c, p, ifname)
		return
	}
	for _, l := range []struct {
		adv   string
		speed string
	}{{"0x008", "100"}, {"0x02f", "1000"}} {
		downs := readSys(filepath.Join("/sys/class/net", ifname, "carrier_down_count"))
		begin := time.Now()
		if _, ok := run("-s", ifname, "advertise", l.adv); !ok {
			return
		}
		if err := waitSpeed(ifname, l.speed, 10*time.Second); err != nil {
			c.errorf("after ethtool -s advertise %s: %v", l.adv, err)
			return
		}
		// The new advertisement renegotiates: the link goes down and the
		// MAC learns the new speed when it comes back up (igb_down on
		// igb; phylib's phy_check_link_status after config_aneg, then
		// phylink's mac_link_down/up, on stmmac). A carrier that never
		// dropped would leave the MAC at the old speed.
		took := time.Since(begin)
		now := readSys(filepath.Join("/sys/class/net", ifname, "carrier_down_count"))
		if now == downs {
			c.errorf("ethtool -s advertise %s: the carrier never went down (carrier_down_count %s)", l.adv, now)
		}
		pingSize(c, p, 2, 56)
		c.logf("link at %s Mb/s %v after ethtool -s (carrier_down_count %s -> %s)", l.speed, took.Round(time.Millisecond), downs, now)
	}
}

// fibreModes is the link-mode step on a fiber (SerDes) port, which runs
// 1000BASE-X only: the driver refuses to advertise 100 Mb/s (igb_set_spd_dplx
// and its ksettings path on internal SerDes), and the link stays at 1000.
func fibreModes(c *check, p *plan, ifname string) {
	if out, err := exec.Command(p.ethtool, "-s", ifname, "advertise", "0x008").CombinedOutput(); err == nil {
		c.errorf("ethtool -s advertise 0x008 (100 full) accepted on a fiber port: %s", strings.TrimSpace(string(out)))
	}
	if err := waitSpeed(ifname, "1000", 10*time.Second); err != nil {
		c.errorf("fiber port after the refused advertisement: %v", err)
		return
	}
	pingSize(c, p, 2, 56)
	c.logf("fiber port: 100 Mb/s refused, link at 1000 Mb/s")
}

// currentRings reads the "Current hardware settings" RX and TX of ethtool -g.
func currentRings(out string) (rx, tx int, err error) {
	_, cur, ok := strings.Cut(out, "Current hardware settings:")
	if !ok {
		return 0, 0, fmt.Errorf("no current settings in %q", out)
	}
	for _, line := range strings.Split(cur, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch strings.TrimSpace(k) {
		case "RX":
			rx = n
		case "TX":
			tx = n
		default:
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("ring size %q", line)
		}
	}
	if rx == 0 || tx == 0 {
		return 0, 0, fmt.Errorf("no RX/TX ring sizes in %q", cur)
	}
	return rx, tx, nil
}

// waitSpeed waits for carrier at the given speed.
func waitSpeed(ifname, speed string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		got := readSys(filepath.Join("/sys/class/net", ifname, "speed"))
		if got == speed && readSys(filepath.Join("/sys/class/net", ifname, "carrier")) == "1" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: speed %q after %v, want %s", ifname, got, d, speed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reload unloads the driver's module and loads it again (rmmod, insmod): the
// device probes anew, gets its address back, comes up and answers pings; then
// the new interface's statistics go out on a second StatsLine.
func reload(c *check, p *plan) {
	var mod *guestproto.Module
	for i := range p.modules {
		if modBase(p.modules[i].Path) == strings.ReplaceAll(p.module, "-", "_") {
			mod = &p.modules[i]
		}
	}
	if mod == nil {
		c.errorf("module %s is not among the guest's modules", p.module)
		return
	}
	name := strings.ReplaceAll(p.module, "-", "_")
	for ifname := range books {
		forget(ifname) // TestStats printed them; the reloaded driver's go on a line of their own
	}
	if err := unix.DeleteModule(name, 0); err != nil {
		c.errorf("delete_module %s: %v", name, err)
		return
	}
	if _, err := os.Stat("/sys/module/" + name); !errors.Is(err, os.ErrNotExist) {
		c.errorf("/sys/module/%s still there after rmmod (%v)", name, err)
	}
	if err := guestrt.LoadModule(*mod); err != nil {
		c.errorf("%v", err)
		return
	}
	ifname, _ := probe(c, p)
	if ifname == "" {
		return
	}
	if err := setAddr(ifname, p.addr, p.prefix); err != nil {
		c.errorf("%v", err)
		return
	}
	if !upAndPing(c, p, ifname, 3) {
		return
	}
	c.logf("%s reloaded: %s up again", p.module, ifname)
	stats(c, p, ifname)
}

// modBase is a module file's name as the kernel knows it.
func modBase(path string) string {
	b := filepath.Base(path)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}
