package vmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/internal/vmtest/guestproto"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/vfiouser"
)

// deviceRun is one device of a guest run: its wire (an IP peer in front of a
// traffic peer, on its own subnet) and its server (vfio-user) or, for QEMU's
// igb, the bridge to QEMU's netdev.
type deviceRun struct {
	m        *servedModel
	peer     *traffic.Peer
	ipp      *IPPeer
	stats    *vfiouser.Stats
	sock     string
	bridge   *sim.UDPLink
	backlog  *traffic.Backlog // QEMU's socket, behind the bridge
	qemuPort int
	addr     string // the guest's address, a.b.c.d/24
	peerIP   string
	seed     int64
	dir      string
	stop     []func() // in reverse order at the end
}

// startDevice sets up device i of a run: subnet 10.0.(10+i).0/24.
func startDevice(ctx context.Context, t *testing.T, m *servedModel, i int, dir string, seed int64) *deviceRun {
	d := &deviceRun{m: m, stats: &vfiouser.Stats{}, dir: dir, seed: seed,
		addr: fmt.Sprintf("10.0.%d.15/24", 10+i), peerIP: fmt.Sprintf("10.0.%d.2", 10+i)}
	var err error
	if d.peer, err = traffic.NewPeer(traffic.PeerConfig{Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	d.stop = append(d.stop, func() { d.peer.Close() })
	if d.ipp, err = NewIPPeer(d.peer.MAC(), netip.MustParseAddr(d.peerIP), d.peer.Addr(), linuxPings); err != nil {
		t.Fatal(err)
	}
	d.stop = append(d.stop, func() { d.ipp.Close() })
	if m.qemuIGB {
		if d.qemuPort, d.bridge, d.backlog, err = bridgeQEMU(d.ipp); err != nil {
			t.Fatal(err)
		}
		d.stop = append(d.stop, func() { d.bridge.Close() })
		return d
	}
	m.attach(d.ipp)
	var stop func()
	d.sock, stop = serveModel(ctx, t, m, dir, d.stats)
	d.stop = append(d.stop, stop)
	return d
}

func (d *deviceRun) close() {
	for i := len(d.stop) - 1; i >= 0; i-- {
		d.stop[i]()
	}
	d.m.close()
}

// linuxGuestRun is what one boot of the guest gave.
type linuxGuestRun struct {
	results string
	res     *ConsoleResult
	ethtool bool // TestEthtool was asked for
	took    time.Duration
}

// runGuest boots one guest with every device of runs (vfio-user devices and,
// for the reference, QEMU's igb on the same machine) and the drivers' and PHY
// drivers' modules; netinit checks the devices one after the other.
func runGuest(ctx context.Context, t *testing.T, assets Assets, initPath, dir string, runs []*deviceRun) *linuxGuestRun {
	var wanted []string
	for _, d := range runs {
		for _, mod := range d.m.modules {
			if !slices.Contains(wanted, mod) {
				wanted = append(wanted, mod)
			}
		}
		if d.m.phyID == 0 {
			continue
		}
		phyMod, err := PHYModule(assets.Modules, d.m.phyID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: PHY 0x%08x, udev loads %q (modalias mdio:%032b)", d.m.name, d.m.phyID, phyMod, d.m.phyID)
		if phyMod != "" && !slices.Contains(wanted, phyMod) {
			wanted = append(wanted, phyMod)
		}
	}
	mods, err := ModuleOrder(assets.Modules, wanted)
	if err != nil {
		t.Fatal(err)
	}
	var devs []guestproto.NetDevice
	for _, d := range runs {
		devs = append(devs, guestproto.NetDevice{Name: d.m.name, Vendor: d.m.vendor, Device: d.m.device,
			MAC: d.m.mac.String(), Driver: d.m.driver, Module: d.m.modules[0], Addr: d.addr, PeerIP: d.peerIP,
			Frames: d.m.frameCount(), Seed: d.seed, TCPBytes: d.m.tcpBytes, TSO: d.m.wireExtra != nil, PHC: d.m.phc})
	}
	dj, err := json.Marshal(devs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := guestproto.Config{Vendor: runs[0].m.vendor, Device: runs[0].m.device, MAC: runs[0].m.mac.String(),
		DmesgLines: 60, Env: map[string]string{guestproto.EnvNetDevices: string(dj)}}
	files := []InitramfsFile{{Name: "init", Src: initPath, Mode: 0o755}}
	g := &linuxGuestRun{}
	if assets.Ethtool == "" {
		t.Errorf("no guest ethtool (XNIC_VFIOUSER_ETHTOOL_ROOT: run internal/vmtest/setup-vfiouser.sh): TestEthtool does not run")
	} else {
		ef, bin, err := GuestEthtool(assets.Ethtool)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ef...)
		cfg.Env[guestproto.EnvNetEthtool] = bin
		g.ethtool = true
	}
	for _, mod := range mods {
		p := "lib/modules/" + filepath.Base(mod)
		files = append(files, InitramfsFile{Name: p, Src: filepath.Join(assets.Modules, mod)})
		cfg.Modules = append(cfg.Modules, guestproto.Module{Path: "/" + p})
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, InitramfsFile{Name: strings.TrimPrefix(guestproto.ConfigPath, "/"), Data: cj})
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := writeInitramfsFile(initrd, files); err != nil {
		t.Fatal(err)
	}

	vm := &UserVM{Assets: assets, Initramfs: initrd, Results: filepath.Join(dir, "results.log"),
		Console: &lineLogger{t: t}, MemMB: 256 + 128*len(runs)}
	for _, d := range runs {
		switch {
		case d.m.qemuIGB:
			vm.ExtraArgs = append(vm.ExtraArgs, qemuIGBArgs(d)...)
		default:
			vm.Sockets = append(vm.Sockets, d.sock)
		}
		vm.NoShare = vm.NoShare || d.m.noShare
	}
	bootAt := time.Now()
	console, runErr := vm.Run(ctx)
	vm.Console.(*lineLogger).stop()
	g.took = time.Since(bootAt)
	_ = os.WriteFile(filepath.Join(dir, "console.log"), []byte(console), 0o644)
	t.Logf("guest ran %v with %d devices (QEMU exit: %v), modules %d", g.took.Round(time.Millisecond), len(runs), runErr, len(mods))

	results, err := os.ReadFile(vm.Results)
	if err != nil || !strings.Contains(string(results), guestproto.Prefix+"boot") {
		results = []byte(console)
	}
	g.results = string(results)
	g.res = ParseConsole(g.results)
	switch {
	case !g.res.Booted:
		t.Fatalf("the guest never reached /init (QEMU: %v); console tail:\n%s", runErr, Tail(console, 60))
	case runErr != nil:
		t.Errorf("QEMU: %v; console tail:\n%s", runErr, Tail(console, 40))
	}
	if g.res.Fatal != "" || len(g.res.Failed) > 0 {
		t.Errorf("guest /init: fatal %q, failed steps %q\nkernel log tail:\n%s", g.res.Fatal, g.res.Failed, strings.Join(g.res.Dmesg, "\n"))
	}
	return g
}

// qemuIGBArgs puts QEMU's own igb on the machine, its netdev bridged to the
// device's peer (bridgeQEMU).
func qemuIGBArgs(d *deviceRun) []string {
	id := "n" + strings.ReplaceAll(d.m.name, "-", "")
	return []string{
		"-netdev", fmt.Sprintf("dgram,id=%s,local.type=inet,local.host=127.0.0.1,local.port=%d,remote.type=inet,remote.host=127.0.0.1,remote.port=%d",
			id, d.qemuPort, d.bridge.LocalAddr().Port()),
		"-device", fmt.Sprintf("igb,netdev=%s,mac=%s,romfile=", id, d.m.mac),
	}
}

// linuxSteps are netinit's checks of a device, in order.
func linuxSteps(ethtool, tcp, uso, phc bool) []string {
	s := []string{"TestProbe", "TestLinkUp", "TestPing", "TestPingFromPeer", "TestFramesOut", "TestFramesIn"}
	if tcp {
		s = append(s, "TestTCPStream")
	}
	if uso {
		s = append(s, "TestUDPGSO")
	}
	if phc {
		s = append(s, "TestPHC")
	}
	s = append(s, "TestJumbo", "TestDownUp", "TestMACChange", "TestFilters")
	if ethtool {
		s = append(s, "TestEthtool")
	}
	return append(s, "TestStats", "TestReload")
}

// checkDevice checks one device after the guest ran: its steps, its peer,
// the model's faults, and its counters against the model's and the peer's.
func checkDevice(t *testing.T, d *deviceRun, g *linuxGuestRun) {
	m := d.m
	bin := guestproto.NetDeviceBinary(m.name)
	want := &TestBinary{Name: bin, Pkg: "netinit", Tests: linuxSteps(g.ethtool, m.tcpBytes > 0, m.wireExtra != nil, m.phc)}
	t.Run("guest", func(t *testing.T) { checkBinary(t, want, g.res.Binaries[bin], g.res) })
	if m.noShare {
		t.Run("messages", func(t *testing.T) { checkMessages(t, d.stats) })
	}
	t.Run("peer", func(t *testing.T) { checkPeer(t, d.peer.Report()) })
	t.Run("ping", func(t *testing.T) {
		r := d.ipp.Report()
		t.Logf("IP peer: %+v", r)
		if r.EchoAnswered < linuxPings {
			t.Errorf("the peer answered %d echo requests from the guest, want >= %d", r.EchoAnswered, linuxPings)
		}
		if r.PingsSent != linuxPings || r.PingsAnswered != linuxPings {
			t.Errorf("the guest answered %d of %d echo requests from the peer (want %d)", r.PingsAnswered, r.PingsSent, linuxPings)
		}
		for _, e := range r.Errors {
			t.Errorf("IP peer: %s", e)
		}
	})
	if m.tcpBytes > 0 {
		t.Run("tcp", func(t *testing.T) { checkTCP(t, m, d.ipp.Report()) })
	}
	t.Run("faults", func(t *testing.T) {
		fs := m.faults()
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "%v\n", f)
		}
		_ = os.WriteFile(filepath.Join(d.dir, m.name+"-faults.log"), []byte(b.String()), 0o644)
		for i, f := range fs {
			if i == 20 {
				t.Errorf("... and %d more (all in %s)", len(fs)-i, filepath.Join(d.dir, m.name+"-faults.log"))
				break
			}
			t.Errorf("model fault: %v", f)
		}
	})
	t.Run("counters", func(t *testing.T) {
		lines, err := NetStatsLinesOf(g.results, m.name)
		if err != nil || len(lines) == 0 {
			t.Fatalf("no interface statistics from the guest (%v)", err)
		}
		sum := map[string]uint64{}
		for _, l := range lines {
			for k, v := range l {
				sum[k] += v
			}
		}
		t.Logf("guest statistics %v", sum)
		r := d.ipp.Report()
		m.compare(t, sum, lines[len(lines)-1], r.ARPFromModel)
		// What the peer saw: every frame the guest counted went through it
		// (a TSO frame as its segments).
		var extra uint64
		if m.wireExtra != nil {
			extra = m.wireExtra()
		}
		if sum["tx_packets"]+extra != r.FromModel || sum["rx_packets"] != r.ToModel {
			t.Errorf("guest tx_packets %d (+%d TSO segments) rx_packets %d; the peer received %d frames and sent %d",
				sum["tx_packets"], extra, sum["rx_packets"], r.FromModel, r.ToModel)
		}
	})
}

func checkMessages(t *testing.T, stats *vfiouser.Stats) {
	if n := stats.DMAMapsFd.Load(); n != 0 {
		t.Errorf("%d DMA_MAPs came with a descriptor: the guest RAM was shared", n)
	}
	if stats.DMAMessages.Load() == 0 {
		t.Errorf("no DMA_READ/DMA_WRITE sent: the model never reached guest memory")
	}
	if n := stats.DMAGivenUp.Load(); n != 0 {
		t.Errorf("%d DMA requests given up (QEMU held its lock in a register read)", n)
	}
}

// reference logs, step by step, how Linux's igb fared on QEMU's igb next to
// the served 82576 (same driver, same steps), with what each counted: the
// reference run's own failures are differences to read, not this test's.
func reference(t *testing.T, g *linuxGuestRun, served, qemu *deviceRun) {
	qb := g.res.Binaries[guestproto.NetDeviceBinary(qemu.m.name)]
	if served == nil { // a guest of its own (-vmtest.linux-separate)
		served = &deviceRun{m: &servedModel{name: "-"}, ipp: qemu.ipp}
	}
	sb := g.res.Binaries[guestproto.NetDeviceBinary(served.m.name)]
	if qb == nil || !qb.Started {
		t.Errorf("the reference device (%s) never ran in the guest", qemu.m.name)
		return
	}
	verdict := func(b *BinaryResult, name string) string {
		if b == nil || b.Tests[name] == nil || b.Tests[name].Status == StatusNotRun {
			return "-"
		}
		return string(b.Tests[name].Status)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %-10s %s\n", "step", served.m.name, qemu.m.name)
	for _, s := range linuxSteps(g.ethtool, false, false, false) {
		sv, qv := verdict(sb, s), verdict(qb, s)
		mark := ""
		if sv != qv {
			mark = "   <- differs"
		}
		fmt.Fprintf(&b, "%-18s %-10s %s%s\n", s, sv, qv, mark)
	}
	for _, d := range []*deviceRun{served, qemu} {
		if d.m.name == "-" {
			continue
		}
		r := d.ipp.Report()
		fmt.Fprintf(&b, "%s: peer received %d frames, sent %d; ARP %d, echo answered %d\n", d.m.name, r.FromModel, r.ToModel, r.ARPFromModel, r.EchoAnswered)
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "%s: IP peer: %s\n", d.m.name, e)
		}
	}
	if lines, err := NetStatsLinesOf(g.results, qemu.m.name); err == nil && len(lines) > 0 {
		r := qemu.ipp.Report()
		var tx, rx uint64
		for _, l := range lines {
			tx, rx = tx+l["tx_packets"], rx+l["rx_packets"]
		}
		fmt.Fprintf(&b, "%s: guest counted tx %d rx %d packets, the peer received %d and sent %d\n", qemu.m.name, tx, rx, r.FromModel, r.ToModel)
	}
	if qemu.backlog != nil {
		drops, waits := qemu.backlog.Stats()
		fmt.Fprintf(&b, "%s: QEMU's netdev socket dropped %d datagrams; the bridge held back %d times\n", qemu.m.name, drops, waits)
	}
	t.Logf("Linux's igb on the served 82576 and on QEMU's igb:\n%s", b.String())
	for _, name := range linuxSteps(g.ethtool, false, false, false) {
		if tr := qb.Tests[name]; tr != nil && tr.Status == StatusFail {
			t.Logf("%s %s:\n%s", qemu.m.name, name, strings.Join(tr.Output, "\n"))
		}
	}
}

// checkTCP checks what the peer's TCP sink received of the guest's stream
// (each segment's checksums, size, sequence and bytes were checked as it
// arrived: IPPeer errors).
// With TSO the UDP sink must have received TestUDPGSO's datagrams too.
func checkTCP(t *testing.T, m *servedModel, rep IPPeerReport) {
	r := rep.TCP
	t.Logf("TCP sink: %+v", r)
	if r.Bytes != uint64(m.tcpBytes) || !r.Closed {
		t.Errorf("the sink received %d bytes of the %d-byte stream (closed: %v)", r.Bytes, m.tcpBytes, r.Closed)
	}
	if r.MaxPayload > tcpSinkMSS {
		t.Errorf("a segment carried %d bytes, over the %d-byte MSS", r.MaxPayload, tcpSinkMSS)
	}
	u := rep.UDP
	t.Logf("UDP sink: %+v", u)
	if m.wireExtra != nil && (u.Bytes != guestproto.NetUDPGSOBytes || u.MaxPayload != guestproto.NetUDPSegment) {
		t.Errorf("the UDP sink received %d bytes in %d datagrams of at most %d, want %d in datagrams of %d",
			u.Bytes, u.Datagrams, u.MaxPayload, guestproto.NetUDPGSOBytes, guestproto.NetUDPSegment)
	}
}
