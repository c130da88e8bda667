package fec_test

// Tests against a real ENET: QEMU's imx.enet on its imx8mp-evk machine in the
// arm64 VM tier (internal/vmtest TestFECQEMU), or a board. The MAC is reached
// as on an i.MX8M Plus: registers through /dev/mem, DMA memory from huge pages
// (physmem). They run only when XNIC_FEC_PLATFORM names the device
// (COMPATIBLE@ADDR, e.g. fsl,imx8mp-fec@0x30be0000) with the traffic peer at
// the other end of its link; the CLI tests also need XNIC_BIN (cmd/xnic).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/internal/vmtest/porttest"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/physmem"
)

const vmLinkTimeout = 20 * time.Second

// vmPlatform returns XNIC_FEC_PLATFORM split into compatible and address, or
// skips. The spec may carry xnic's --platform options after the address
// (,uncached=PHYS+SIZE on the 32-bit guest); spec is passed to xnic whole.
func vmPlatform(t *testing.T) (spec, compatible string, phys uint64) {
	t.Helper()
	spec = os.Getenv("XNIC_FEC_PLATFORM")
	if spec == "" {
		t.Skip("XNIC_FEC_PLATFORM not set: no ENET reachable through /dev/mem here (the arm64 VM tier sets it)")
	}
	at := strings.LastIndex(spec, "@")
	addr, _, _ := strings.Cut(spec[at+1:], ",")
	phys, err := strconv.ParseUint(addr, 0, 64)
	if at <= 0 || err != nil {
		t.Fatalf("XNIC_FEC_PLATFORM=%q: want COMPATIBLE@ADDR[,OPTIONS]", spec)
	}
	return spec, spec[:at], phys
}

// vmAllocator is the DMA memory of the guest's ENET: huge pages (arm64:
// cached, synced), or where the CPU has no user cache maintenance (32-bit
// ARM) the reserved range XNIC_FEC_UNCACHED=PHYS+SIZE names, uncached, for
// buffers and rings alike.
func vmAllocator(t *testing.T) (interface {
	dma.Allocator
	Close() error
}, error) {
	t.Helper()
	if physmem.CacheMaintenance() {
		return physmem.NewAllocator(physmem.Config{Limit: 1 << 32})
	}
	r := os.Getenv("XNIC_FEC_UNCACHED")
	p, n, _ := strings.Cut(r, "+")
	phys, e1 := strconv.ParseUint(p, 0, 64)
	size, e2 := strconv.ParseUint(n, 0, 31)
	if e1 != nil || e2 != nil {
		t.Fatalf("XNIC_FEC_UNCACHED=%q: want PHYS+SIZE of reserved RAM (no cache maintenance on %s)", r, runtime.GOARCH)
	}
	return physmem.OpenUncached(physmem.UncachedConfig{Phys: phys, Size: int(size), Limit: 1 << 32})
}

func vmSeed() int64 {
	s, err := strconv.ParseInt(os.Getenv("XNIC_VMTEST_SEED"), 10, 64)
	if err != nil {
		return 1
	}
	return s
}

// openVM opens the ENET through physmem (huge pages below 4 GiB, /dev/mem) and
// brings it up. The function it returns closes port, device and allocator,
// checking each, once; cleanup calls it too.
func openVM(t *testing.T, cfg fec.Config) (*fec.Port, func()) {
	t.Helper()
	_, compatible, phys := vmPlatform(t)
	alloc, err := vmAllocator(t)
	if err != nil {
		t.Fatalf("DMA allocator: %v", err)
	}
	// The guest's devicetree says the variant (when the spec names the
	// family only), the PHY address and which MAC drives its MDIO bus (on
	// the i.MX6UL EVK, ENET2 for both).
	wins := []physmem.Window{{Phys: phys, Size: 0x4000}}
	if node, err := physmem.ReadMACNode("", phys); err == nil {
		if _, ok := fec.LookupCompatible(compatible); !ok {
			compatible = strings.Join(node.Compatible, " ")
		}
		if node.PHYAddr >= 0 && cfg.PHYAddr == 0 && !cfg.PHYAddrZero {
			cfg.PHYAddr, cfg.PHYAddrZero = node.PHYAddr, node.PHYAddr == 0
		}
		if node.MDIOPhys != 0 && node.MDIOPhys != phys {
			wins = append(wins, physmem.Window{Phys: node.MDIOPhys, Size: 0x4000})
		}
	}
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name: fmt.Sprintf("%x.ethernet", phys), Compatible: compatible,
		Windows: wins, DMA: alloc,
	})
	if err != nil {
		alloc.Close()
		t.Fatalf("physmem.OpenDevice: %v", err)
	}
	if len(wins) > 1 {
		if cfg.MDIOBus, err = dev.Regs(1); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = vmLinkTimeout
	}
	p, err := fec.Open(dev, cfg)
	if err != nil {
		dev.Close()
		alloc.Close()
		t.Fatalf("fec.Open: %v", err)
	}
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			if err := p.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := dev.Close(); err != nil {
				t.Errorf("device Close: %v", err)
			}
			if err := alloc.Close(); err != nil {
				t.Errorf("allocator Close: %v", err)
			}
		})
	}
	t.Cleanup(closeAll)
	if _, err := p.WaitLink(vmLinkTimeout); err != nil {
		t.Fatalf("%v\n%s", err, p.Dump())
	}
	return p, closeAll
}

func vmClient(t *testing.T, p *fec.Port) *traffic.Client {
	t.Helper()
	c, _ := porttest.Connect(t, p)
	return c
}

func vmCounter(t *testing.T, p *fec.Port, name string) uint64 {
	t.Helper()
	v, ok := fec.Counter(p.Stats(), name)
	if !ok {
		t.Fatalf("no counter %q in %v", name, p.Stats())
	}
	return v
}

// xnic runs the CLI (XNIC_BIN) on the ENET and returns its stdout.
func xnic(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	bin := os.Getenv("XNIC_BIN")
	if bin == "" {
		t.Skip("XNIC_BIN not set: no xnic binary to run (the VM tier builds cmd/xnic into the guest)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("xnic %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("xnic %s took %v; stderr %q", args[0], time.Since(began).Round(time.Millisecond), stderr.String())
	return stdout.String()
}

// TestVMInfo: `xnic info` shows the MAC QEMU gave the ENET (PALR/PAUR), the
// link up at 100 Mb/s full duplex and the PHY's ID (QEMU's LAN9118-style PHY,
// 0x0007/0xc0d1).
func TestVMInfo(t *testing.T) {
	spec, compatible, _ := vmPlatform(t)
	out := xnic(t, time.Minute, "info", "--platform", spec, "--json")
	var info struct {
		Driver  string `json:"driver"`
		Variant string `json:"variant"`
		MAC     string `json:"mac"`
		Link    struct {
			Up     bool `json:"up"`
			Speed  int  `json:"speed_mbps"`
			Duplex bool `json:"full_duplex"`
		} `json:"link"`
		PHY    string `json:"phy_id"`
		Queues int    `json:"queues"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("xnic info --json printed %q: %v", out, err)
	}
	t.Logf("info: %+v", info)
	if want := os.Getenv("XNIC_VMTEST_MAC"); want != "" && info.MAC != want {
		t.Errorf("MAC %s, want %s (QEMU's macaddr)", info.MAC, want)
	}
	if v := os.Getenv("XNIC_VMTEST_VARIANT"); v != "" {
		compatible = v // the spec names the family; the devicetree the variant
	}
	if info.Driver != "fec" || info.Variant != compatible {
		t.Errorf("driver %q variant %q, want fec %q", info.Driver, info.Variant, compatible)
	}
	if !info.Link.Up || info.Link.Speed != 100 || !info.Link.Duplex {
		t.Errorf("link %+v, want up at 100 Mb/s full duplex", info.Link)
	}
	if info.PHY != "0x0007c0d1" {
		t.Errorf("PHY ID %s, want 0x0007c0d1", info.PHY)
	}
	if info.Queues != 1 {
		t.Errorf("%d queues, want 1", info.Queues)
	}
}

// TestVMRegs: `xnic regs` decodes the running MAC: enabled, rings below 4 GiB.
func TestVMRegs(t *testing.T) {
	spec, _, _ := vmPlatform(t)
	out := xnic(t, time.Minute, "regs", "--platform", spec)
	regs := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			regs[f[0]] = l
		}
	}
	for _, name := range []string{"ECR", "EIR", "RCR", "TCR", "MSCR", "PALR", "PAUR", "RDSR", "TDSR", "MRBR", "RDAR", "TDAR"} {
		if regs[name] == "" {
			t.Errorf("no %s in the dump:\n%s", name, out)
		}
	}
	if !strings.Contains(regs["ECR"], "ETHEREN=1") {
		t.Errorf("ECR not enabled: %q", regs["ECR"])
	}
	if !strings.Contains(regs["TCR"], "FDEN=1") {
		t.Errorf("TCR not full duplex: %q", regs["TCR"])
	}
	for _, name := range []string{"RDSR", "TDSR"} {
		f := strings.Fields(regs[name])
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil || v == 0 || v%8 != 0 {
			t.Errorf("%s: %q is no ring address", name, regs[name])
		}
	}
}

// TestVMTransmit: frames sent through the driver reach the host peer
// byte-exact and in order.
func TestVMTransmit(t *testing.T) {
	p, _ := openVM(t, fec.Config{})
	c := vmClient(t, p)
	const n = 2000
	rep, err := c.Transmit(n, vmSeed()*10+1, 120*time.Second)
	if err != nil {
		t.Fatalf("transmit: %v (report %s)", err, rep)
	}
	if got := vmCounter(t, p, "tx_queue_0_packets"); got < n {
		t.Fatalf("tx_queue_0_packets %d, want at least %d", got, n)
	}
}

// TestVMReceive: frames the host injects arrive byte-exact and in order.
func TestVMReceive(t *testing.T) {
	p, _ := openVM(t, fec.Config{})
	c := vmClient(t, p)
	s, err := c.Inject(2000, vmSeed()*10+2, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Receive(s, 120*time.Second); err != nil {
		t.Fatalf("%v\nstats: %v", err, p.Stats())
	}
}

// TestVMReopen: close and a second bring-up on the same device: frames flow
// both ways again.
func TestVMReopen(t *testing.T) {
	vmPlatform(t)
	for round := range 2 {
		t.Run(fmt.Sprint("open", round+1), func(t *testing.T) {
			p, _ := openVM(t, fec.Config{})
			c := vmClient(t, p)
			if rep, err := c.Transmit(200, vmSeed()*10+3+int64(round), 60*time.Second); err != nil {
				t.Fatalf("transmit: %v (report %s)", err, rep)
			}
			s, err := c.Inject(200, vmSeed()*10+5+int64(round), 64)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Receive(s, 60*time.Second); err != nil {
				t.Fatalf("%v\nstats: %v", err, p.Stats())
			}
		})
	}
}

// TestVMPktgen: `xnic pktgen` sends XNIC_VMTEST_PKTGEN_COUNT frames of
// XNIC_VMTEST_PKTGEN_SIZE bytes to the peer; the host compares each with the
// frame it builds itself (internal/vmtest TestFECQEMU).
func TestVMPktgen(t *testing.T) {
	spec, _, _ := vmPlatform(t)
	count, size := os.Getenv("XNIC_VMTEST_PKTGEN_COUNT"), os.Getenv("XNIC_VMTEST_PKTGEN_SIZE")
	peer := os.Getenv("XNIC_VMTEST_PEER_MAC")
	if count == "" || size == "" || peer == "" {
		t.Skip("XNIC_VMTEST_PKTGEN_COUNT, _SIZE or XNIC_VMTEST_PEER_MAC not set: no host checks the frames")
	}
	out := xnic(t, 2*time.Minute, "pktgen", "--platform", spec, "--count", count, "--size", size, "--burst", "16", "--dst-mac", peer, "--json")
	var st struct {
		Sent     uint64 `json:"sent"`
		Wire     uint64 `json:"wire"`
		RingFull uint64 `json:"ring_full"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("xnic pktgen --json printed %q: %v", out, err)
	}
	t.Logf("pktgen: %s", strings.TrimSpace(out))
	if strconv.FormatUint(st.Sent, 10) != count {
		t.Errorf("pktgen sent %d, want %s", st.Sent, count)
	}
}

// TestVMXnicRun: `xnic run` with the MAC-swapping XDP_TX program
// (XNIC_XDP_MACSWAP) sends every echo frame of the peer back, MAC-swapped and
// otherwise byte-exact, in order; its counters agree.
func TestVMXnicRun(t *testing.T) {
	spec, _, _ := vmPlatform(t)
	obj := os.Getenv("XNIC_XDP_MACSWAP")
	if obj == "" {
		t.Skip("XNIC_XDP_MACSWAP not set: no XDP object in the guest")
	}
	const n = 500
	req := traffic.EchoRequest{Count: n, Seed: vmSeed()*10 + 7, Size: 64, Back: true, Delay: 8 * time.Second}
	var s *traffic.Stream
	// Ask for the stream through the driver, then close the port: xnic run
	// opens it again before the peer's delay is over.
	func() {
		p, closeAll := openVM(t, fec.Config{})
		defer closeAll()
		c := vmClient(t, p)
		var err error
		if s, err = c.Echo(req); err != nil {
			t.Fatal(err)
		}
	}()
	out := xnic(t, 90*time.Second, "run", "--platform", spec, "--prog", obj, "--duration", "16s", "--json", "--tap", "none")
	type port struct {
		TX       float64           `json:"tx_pps_xdp"`
		Counters map[string]uint64 `json:"counters"`
	}
	var final port
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Ports []port `json:"ports"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v.Ports) != 1 {
			t.Fatalf("xnic run --json printed %q: %v", l, err)
		}
		final = v.Ports[0]
		lines++
	}
	t.Logf("xnic run: %d JSON lines; final counters %v", lines, final.Counters)
	for name, want := range map[string]uint64{"rx_packets": n, "rx_xdp_tx": n, "tx_packets": n, "rx_xdp_aborted": 0, "rx_xdp_tx_errors": 0} {
		if got, ok := final.Counters[name]; !ok || got != want {
			t.Errorf("xnic run's final %s = %d (present %v), want %d", name, got, ok, want)
		}
	}
	// The replies are checked by the peer; ask it through a fresh port.
	p, _ := openVM(t, fec.Config{})
	c := vmClient(t, p)
	rep, err := c.EchoReport(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if rep.Sent != n || rep.Back != n || rep.Bad != 0 {
		t.Errorf("echo: %s; want all %d back intact", rep, n)
	}
}

// TestVMStats: `xnic stats` lists the driver's counters; after traffic through
// the driver its per-ring counters match what was sent and received.
func TestVMStats(t *testing.T) {
	spec, _, _ := vmPlatform(t)
	out := xnic(t, time.Minute, "stats", "--platform", spec, "--json")
	var st struct {
		Port     string            `json:"port"`
		Counters map[string]uint64 `json:"counters"` // one object, as everywhere (xnic help json)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("xnic stats --json printed %q: %v", out, err)
	}
	names := map[string]bool{}
	for name := range st.Counters {
		names[name] = true
	}
	for _, n := range []string{"tx_queue_0_packets", "rx_queue_0_packets", "mib_unavailable"} {
		if !names[n] {
			t.Errorf("xnic stats has no %s: %s", n, out)
		}
	}
	// QEMU's imx.enet has no MIB: its counters must not be shown as zeros.
	if names["tx_packets"] || names["rx_octets"] {
		t.Errorf("xnic stats shows MIB counters on a MAC without a MIB: %s", out)
	}
	p, _ := openVM(t, fec.Config{})
	c := vmClient(t, p)
	tx0, rx0 := vmCounter(t, p, "tx_queue_0_packets"), vmCounter(t, p, "rx_queue_0_packets")
	const n = 100
	if rep, err := c.Transmit(n, vmSeed()*10+8, 60*time.Second); err != nil {
		t.Fatalf("transmit: %v (report %s)", err, rep)
	}
	s, err := c.Inject(n, vmSeed()*10+9, 0) // no window: no acks
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Receive(s, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	// The control exchanges add three frames each way (expect, report and
	// inject, each answered with an ok); a retried request would add more.
	tx, rx := vmCounter(t, p, "tx_queue_0_packets")-tx0, vmCounter(t, p, "rx_queue_0_packets")-rx0
	if tx < n+3 || tx > n+6 || rx < n+3 || rx > n+6 {
		t.Errorf("after %d frames each way: tx_queue_0_packets +%d, rx_queue_0_packets +%d", n, tx, rx)
	}
}

// TestVMRxRings: QEMU's imx.enet has receive ring 0 only. Three queues are
// refused at Open: on the i.MX8M Plus because RDSR1 does not hold what was
// written (the driver says the ring is missing rather than wait on it), on
// the single-ring variants by the variant itself.
func TestVMRxRings(t *testing.T) {
	_, compatible, phys := vmPlatform(t)
	alloc, err := physmem.NewAllocator(physmem.Config{Limit: 1 << 32})
	if err != nil {
		t.Fatalf("huge page allocator: %v", err)
	}
	defer alloc.Close()
	dev, err := physmem.OpenDevice(physmem.DeviceConfig{
		Name: fmt.Sprintf("%x.ethernet", phys), Compatible: compatible,
		Windows: []physmem.Window{{Phys: phys, Size: 0x4000}}, DMA: alloc,
	})
	if err != nil {
		t.Fatalf("physmem.OpenDevice: %v", err)
	}
	defer dev.Close()
	p, err := fec.Open(dev, fec.Config{Queues: 3, LinkTimeout: vmLinkTimeout})
	if err == nil {
		p.Close()
		t.Fatal("three queues opened on QEMU's imx.enet, which receives on ring 0 only")
	}
	t.Logf("Queues 3: %v", err)
	v, _ := fec.LookupCompatible(compatible)
	if v.Queues > 1 && !strings.Contains(err.Error(), "no receive ring 1") {
		t.Errorf("error %q does not say receive ring 1 is missing", err)
	}
	// The device still works with one queue afterwards.
	p, err = fec.Open(dev, fec.Config{LinkTimeout: vmLinkTimeout})
	if err != nil {
		t.Fatalf("one queue after the refused three: %v", err)
	}
	if w := strings.Join(p.Warnings(), "; "); !strings.Contains(w, "no MIB counters") {
		t.Errorf("warnings %q do not say the MIB is missing", w)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHighMemVM runs in a guest whose huge pages all lie above 4 GiB (the VM
// tier boots the imx8mp-evk with 6 GiB for it: the kernel reserves them from
// the top of RAM). The ENET's descriptors carry 32-bit addresses, and on the
// real device DMA there silently fails, so the allocator and `xnic info` must
// refuse that memory with the hint to reserve memory low.
func TestHighMemVM(t *testing.T) {
	spec, _, _ := vmPlatform(t)
	if os.Getenv("XNIC_VMTEST_HIGH_MEM") != "1" {
		t.Skip("XNIC_VMTEST_HIGH_MEM not set: this guest's huge pages may lie below 4 GiB")
	}
	alloc, err := physmem.NewAllocator(physmem.Config{Limit: 1 << 32})
	if err != nil {
		t.Fatalf("huge page allocator: %v", err)
	}
	defer alloc.Close()
	if r, err := alloc.Alloc(4096, 0); err == nil {
		t.Fatalf("huge page memory at %#x handed out under a 4 GiB limit in a guest whose huge pages lie above it", r.IOVA)
	} else if !errors.Is(err, dma.ErrTooHigh) || !strings.Contains(err.Error(), "reserve memory low") {
		t.Fatalf("allocation: %v, want dma.ErrTooHigh with the hint", err)
	} else {
		t.Logf("allocation refused: %v", err)
	}
	bin := os.Getenv("XNIC_BIN")
	if bin == "" {
		t.Fatal("XNIC_BIN not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "info", "--platform", spec).CombinedOutput()
	if err == nil {
		t.Fatalf("xnic info succeeded with huge pages above 4 GiB:\n%s", out)
	}
	if !strings.Contains(string(out), "above the device's limit") {
		t.Errorf("xnic info failed (%v) without saying the memory is above the limit:\n%s", err, out)
	}
	t.Logf("xnic info: %v: %s", err, strings.TrimSpace(string(out)))
}

// TestVMTxChecksum: frames with checksum requests (IPv4 and IPv6, TCP and
// UDP, some 802.1Q tagged, the pseudo-header's sum in the field as a
// CHECKSUM_PARTIAL sender leaves it) go to the peer through esc.PINS; the
// host finds them in its capture by their destination addresses and checks
// every checksum (internal/vmtest TestFECQEMU). A third also ask for a TX
// timestamp: each completes through TxStamps with its own address. QEMU's
// imx.enet writes BDU but no ts word, so the times are not checked here.
// With legacy BDs (mvf600) the queue claims nothing and refuses the
// requests.
func TestVMTxChecksum(t *testing.T) {
	vmPlatform(t)
	n, err := strconv.Atoi(os.Getenv("XNIC_VMTEST_CSUM_COUNT"))
	if err != nil {
		t.Skip("XNIC_VMTEST_CSUM_COUNT not set: no host checking the checksums")
	}
	peer, err := net.ParseMAC(os.Getenv("XNIC_VMTEST_PEER_MAC"))
	if err != nil {
		t.Fatalf("XNIC_VMTEST_PEER_MAC: %v", err)
	}
	p, _ := openVM(t, fec.Config{})
	tq := metaQueue(t, p)
	r := rand.New(rand.NewPCG(uint64(vmSeed()), 77))
	if !p.Extended() {
		f := buildL4(t, r, peer, false, false, false, 64)
		b := bufWith(t, p, f.Partial())
		defer b.Free()
		b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(f.L4), uint16(f.Field())
		if tq.TxMeta() != 0 || !errors.Is(tq.CheckTxMeta(b), nic.ErrTxMeta) || tq.Send([]*dma.Buf{b}) != 0 {
			t.Fatalf("legacy BDs: TxMeta %v, CheckTxMeta %v", tq.TxMeta(), tq.CheckTxMeta(b))
		}
		t.Logf("legacy BDs: %v", tq.CheckTxMeta(b))
		return
	}
	if c := tq.TxMeta(); c != nic.TxMetaTimestamp|nic.TxMetaChecksum {
		t.Fatalf("TxMeta %v", c)
	}
	var addrs []uint64
	for i := 0; i < n; i++ {
		f := buildL4(t, r, peer, i%4 == 3, i%2 == 1, i%8 == 5, r.IntN(1200))
		copy(f.Bytes[6:12], p.MAC()) // the host finds them by their source
		b := bufWith(t, p, f.Partial())
		b.TxFlags, b.CsumStart, b.CsumOffset = dma.TxFlagChecksum, uint16(f.L4), uint16(f.Field())
		if i%3 == 0 {
			b.TxFlags |= dma.TxFlagTimestamp
		}
		if err := tq.CheckTxMeta(b); err != nil {
			b.Free()
			t.Fatalf("frame %d: %v", i, err)
		}
		sendAll(t, tq, []*dma.Buf{b})
		if i%3 == 0 {
			addrs = append(addrs, b.DataIOVA())
		}
	}
	reclaimAll(t, p, 256)
	out := make([]nic.TxStamp, len(addrs)+1)
	k := tq.TxStamps(out)
	if k != len(addrs) {
		t.Fatalf("%d TX timestamp completions for %d requests", k, len(addrs))
	}
	for i, s := range out[:k] {
		if s.Addr != addrs[i] {
			t.Fatalf("completion %d for %#x, want %#x", i, s.Addr, addrs[i])
		}
	}
	t.Logf("%d frames with checksum requests sent; %d timestamp completions (first: %+v)", n, k, out[0])
}
