package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
)

func examplePath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "examples", "xdp", name+".o")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example object: %v", err)
	}
	return p
}

func TestRunSimRedirectJSONAndDump(t *testing.T) {
	dump := filepath.Join(t.TempDir(), "d.pcapng")
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:2", Queues: 1}, prog: examplePath(t, "xdp_redirect_map"), interval: 100 * time.Millisecond, maps: listFlag{"tx_port:0=2"}, tap: "none", json: true, dump: dump, dumpFilter: "redirect", peer: "gen,none", peerSize: 64, peerBurst: 16, peerRate: 20000, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	type port struct {
		Port     string            `json:"port"`
		Redirect float64           `json:"redirect_pps"`
		Xmit     float64           `json:"xmit_pps"`
		Counters map[string]uint64 `json:"counters"`
	}
	var lines []struct {
		Ports []port `json:"ports"`
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l struct {
			Ports []port `json:"ports"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) < 3 {
		t.Fatalf("%d JSON lines, want a few per-interval lines and the final one:\n%s", len(lines), out.String())
	}
	final := lines[len(lines)-1]
	rd, xm := final.Ports[0].Counters["rx_xdp_redirect"], final.Ports[1].Counters["tx_xdp_xmit"]
	if rd == 0 || xm != rd || final.Ports[0].Counters["rx_packets"] != rd {
		t.Errorf("final counters: port0 %v port1 %v: want every frame redirected and transmitted", final.Ports[0].Counters, final.Ports[1].Counters)
	}
	if lines[1].Ports[0].Redirect <= 0 {
		t.Errorf("interval line without redirect rate: %+v", lines[1])
	}
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for {
		d, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if len(d) != 64 {
			t.Fatalf("dumped frame of %d bytes", len(d))
		}
		n++
	}
	if n != rd {
		t.Errorf("dump holds %d frames, %d were redirected", n, rd)
	}
	raw, _ := os.ReadFile(dump)
	if !bytes.Contains(raw, []byte("XDP_REDIRECT queue 0")) {
		t.Error("dump lacks verdict comments")
	}
}

func TestRunSimCPUMapText(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_redirect_cpu"), interval: 100 * time.Millisecond, maps: listFlag{"cpu_map:0=256,xdp_cpumap_count", "cpu_map:1=256,xdp_cpumap_count"}, tap: "none", peer: "gen", peerSize: 64, peerBurst: 8, peerRate: 5000, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	s := out.String()
	if !strings.Contains(s, "igbsim0    rx") || !strings.Contains(s, "rx_xdp_redirect") {
		t.Errorf("output:\n%s", s)
	}
	// Without a TAP the cpumap workers' XDP_PASS frames have nowhere to go: the
	// summary still counts every redirect.
	if !strings.Contains(s, "link partner (gen): offered") {
		t.Errorf("no partner line:\n%s", s)
	}
}

func TestRunErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{
		{"--sim", "igb"},  // no --prog
		{"--prog", "x.o"}, // no port
		{"--prog", "x.o", "--sim", "igb", "--dev", "0000:00:00.0"}, // both
		{"--prog", "x.o", "--sim", "igb:99"},
	} {
		if err := dpRunCmd(args, &out, &errOut); err == nil {
			t.Errorf("run %q succeeded", args)
		}
	}
	ctx := context.Background()
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_redirect_map"), interval: time.Second, tap: "none", peer: "none", maps: listFlag{"tx_port:0=9"}, workers: -1}
	if err := dpRun(ctx, o, &out, &errOut); err == nil || !strings.Contains(err.Error(), "tx_port:0=9") {
		t.Errorf("devmap entry for a missing ifindex: %v", err)
	}
}

func TestRunPcapPeerAndMetrics(t *testing.T) {
	dir := t.TempDir()
	pcap := filepath.Join(dir, "in.pcapng")
	w, err := pcapdump.Create(pcap, []string{"x"}, pcapdump.All)
	if err != nil {
		t.Fatal(err)
	}
	f := pktgen.DefaultFlow()
	f.DstMAC = net.HardwareAddr{0x02, 0x1b, 0x5e, 0, 0, 1}
	for i := 0; i < 10; i++ {
		f.Size = 64 + i*10
		fr, _ := f.UDP()
		w.Dump(0, 0, bpf.ActionPass, fr)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: 50 * time.Millisecond, tap: "none", peer: "pcap:" + pcap, workers: -1, metrics: "127.0.0.1:0", json: true}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var final struct {
		Ports []struct {
			Counters map[string]uint64 `json:"counters"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil {
		t.Fatal(err)
	}
	if c := final.Ports[0].Counters; c["rx_packets"] != 10 || c["rx_xdp_drop"] != 10 || c["rx_bytes"] != 10*64+450 {
		t.Errorf("counters %v: want the 10 frames of the pcap dropped", c)
	}
	if !strings.Contains(errOut.String(), "metrics on http://127.0.0.1:") {
		t.Errorf("stderr %q", errOut.String())
	}
	if dpMetricsAddr("9101") != "127.0.0.1:9101" || dpMetricsAddr(":9101") != "127.0.0.1:9101" || dpMetricsAddr("0.0.0.0:1") != "0.0.0.0:1" {
		t.Error("metrics address defaults")
	}
}

func TestParseHelpers(t *testing.T) {
	c, err := dpParseCPUs("0,2-4")
	if err != nil || len(c) != 4 || c[3] != 4 {
		t.Errorf("cpus %v %v", c, err)
	}
	for _, bad := range []string{"x", "3-1", "-1"} {
		if _, err := dpParseCPUs(bad); err == nil {
			t.Errorf("cpus %q accepted", bad)
		}
	}
	b, err := mapio.IntBytes("0x102", 2)
	if err != nil || !bytes.Equal(b, []byte{2, 1}) {
		t.Errorf("int bytes %x %v", b, err)
	}
	if _, err := mapio.IntBytes("300", 1); err == nil {
		t.Error("300 fits a byte?")
	}
	if s, err := parseSim("igb:3"); err != nil || s.Fam != family("igb") || s.N != 3 {
		t.Errorf("sim %+v %v", s, err)
	}
}

// TestDpOpenPortsThroughOpenPort: the ports `xnic run` opens come from
// openPort (the one open path): each simulated port has its own MAC and name,
// interrupts, promiscuous mode, a link that is up, no in-memory wire (the link
// partner drives the model), and closing them reports nothing.
func TestDpOpenPortsThroughOpenPort(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:2", Queues: 1}, peer: "none"}
	ports, err := dpOpenPorts(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ports {
		wantMAC := net.HardwareAddr{0x02, 0x1b, 0x5e, 0, 0, byte(i + 1)}
		if p.op == nil || p.op.Sim == nil || p.model != p.op.Sim.Model || p.op.Sim.Peer != nil {
			t.Fatalf("port %d: not opened by openPort as a detached model: %+v", i, p.op)
		}
		if p.port.MAC().String() != wantMAC.String() || p.op.Device.Info().Name != "igbsim"+string(rune('0'+i)) {
			t.Errorf("port %d: MAC %s name %s", i, p.port.MAC(), p.op.Device.Info().Name)
		}
		if !p.port.Link().Up || p.port.RxQueue(0).IRQ() == nil || p.pool != p.port.RxQueue(0).Pool() {
			t.Errorf("port %d: link %v irq %v: want the link up and MSI-X set up", i, p.port.Link(), p.port.RxQueue(0).IRQ())
		}
	}
	var errOut bytes.Buffer
	dpClosePorts(ports, &errOut)
	if errOut.Len() != 0 {
		t.Errorf("closing: %q", errOut.String())
	}
	if _, err := dpOpenPorts(&dpRunOptions{portOptions: portOptions{Sim: "igb", Dev: "0000:00:00.0"}}); !errors.Is(err, errUsage) {
		t.Errorf("--dev and --sim: %v", err)
	}
}

// Frames longer than the port takes are not lost silently: the per-second
// line counts them as hardware drops, and the summary names the counter and
// says the partner offered frames the port did not take.
func TestRunReportsFramesThePortRefuses(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: 100 * time.Millisecond, tap: "none", peer: "gen", peerSize: 1600, peerBurst: 16, peerRate: 20000, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"taken by the port 0 (refused", "the device dropped", "rx_long_length_errors"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`hwdrop +[1-9]`).MatchString(s) {
		t.Errorf("no hardware drops in the rate lines:\n%s", s)
	}
}

// A capture's runts reach the port padded, as a sending MAC pads them, and
// records shorter than an Ethernet header are left out; the summary says so.
func TestRunPadsRuntsFromPcap(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "odd.pcap")
	file, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(file)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 10, 20, 42, 60, 100} {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xff // broadcast, so the port takes them
		}
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: n, Length: n}, b); err != nil {
			t.Fatal(err)
		}
	}
	file.Close()
	if out, n, skipped := padRunts([][]byte{{}, make([]byte, 13), make([]byte, 14), make([]byte, 61)}); len(out) != 2 || len(out[0]) != 60 || len(out[1]) != 61 || n != 1 || skipped != 2 {
		t.Errorf("padRunts: %d frames, padded %d, skipped %d", len(out), n, skipped)
	}
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: 50 * time.Millisecond, tap: "none", peer: "pcap:" + pcap, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"offered 4, taken by the port 4", "padded 2 frames shorter than 60 bytes", "left out 2 shorter than an Ethernet header"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "rx_short_length_errors") {
		t.Errorf("a padded runt was dropped by the port:\n%s", s)
	}
}
