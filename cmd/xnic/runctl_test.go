package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/control"
)

// startRun runs o until the test ends and waits for its port 0's socket.
func startRun(t *testing.T, o *dpRunOptions, name string) *bytes.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- dpRun(ctx, o, &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, errOut.String())
		}
	})
	waitFor(t, "the control socket", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the run ended: %v\n%s", err, errOut.String())
		default:
		}
		return control.Alive(control.Path(name))
	})
	return &errOut
}

// otherVariant is a variant of fam other than its default.
func otherVariant(fam string) string {
	f := familyByName(family(fam))
	if len(f.simVariants) < 2 {
		return ""
	}
	return fam + ":" + f.simVariants[1]
}

// TestRunningPort drives a running port of each family the way ethtool,
// bpftool, xdp-loader and xdpdump drive a kernel interface: info, link and
// ptp through the run; the same port named by --sim finds the run (another
// variant is refused, as is a self-test, with the reason); live capture to
// pcapng and as text, by verdict and count; prog show; prog load that
// keeps a matching map and refuses a mismatched one; stats --watch.
func TestRunningPort(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			name := fam + "sim0"
			o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
				tap: "none", peer: "gen", peerSize: 64, peerBurst: 8, peerRate: 20000, workers: -1, json: true}
			startRun(t, o, name)

			var pi portInfo
			cliJSON(t, &pi, "info", "--control", name, "--json")
			if pi.Name != name || pi.Driver != fam || !strings.HasPrefix(pi.Sim, fam+":") || !pi.Link.Up {
				t.Errorf("info through the run: %+v", pi)
			}
			var byPort portInfo
			cliJSON(t, &byPort, "info", "--sim", fam, "--json")
			if byPort.Name != name || byPort.MAC != pi.MAC {
				t.Errorf("info --sim %s beside the run opened another port: %+v", fam, byPort)
			}
			if v := otherVariant(fam); v != "" {
				if rc, _, errs := runPort(t, "stats", "--sim", v); rc != 1 || !strings.Contains(errs, "holds "+name) {
					t.Errorf("stats --sim %s beside a run of %s: rc %d %s", v, pi.Sim, rc, errs)
				}
			}
			if rc, _, errs := runPort(t, "selftest", "--sim", fam); rc != 1 || !strings.Contains(errs, "self-test resets the port") {
				t.Errorf("selftest on a running port: rc %d %s", rc, errs)
			}
			var ls linkSettings
			cliJSON(t, &ls, "link", "--control", name, "--json")
			if ls.Port != name || !ls.Link.Up || len(ls.Supported) == 0 {
				t.Errorf("link through the run: %+v", ls)
			}
			if rc, out, errs := runPort(t, "ptp", "--control", name, "get", "--json"); rc != 0 && !strings.Contains(errs, "answered by the run holding "+name) {
				t.Errorf("ptp through the run: rc %d %s %s", rc, out, errs)
			}

			// Capture: five dropped frames to pcapng, each with its verdict
			// and queue in its comment; three as text; none of a verdict
			// the program never gives.
			pc := filepath.Join(t.TempDir(), "c.pcapng")
			rc, _, errs := runPort(t, "dump", "--control", name, "--count", "5", "--verdict", "drop", "-w", pc)
			if rc != 0 || !strings.Contains(errs, "5 frames captured") {
				t.Fatalf("dump -w: rc %d %s", rc, errs)
			}
			b, _ := os.ReadFile(pc)
			if n := pcapngPackets(b); n != 5 || bytes.Count(b, []byte("XDP_DROP queue 0")) != 5 {
				t.Errorf("pcapng: %d packets, %d comments", n, bytes.Count(b, []byte("XDP_DROP queue 0")))
			}
			rc, out, errs := runPort(t, "dump", name, "--count", "3", "--snap", "42")
			if lines := strings.Split(strings.TrimSpace(out), "\n"); rc != 0 || len(lines) != 3 || !strings.Contains(lines[0], "q0 XDP_DROP len 64") || !strings.Contains(lines[0], "IPv4 198.18.0.1->198.18.0.2 UDP 9->9") {
				t.Errorf("dump as text: rc %d %q %s", rc, out, errs)
			}
			if rc, out, _ := runPort(t, "dump", "--control", name, "--verdict", "tx", "--duration", "200ms"); rc != 0 || out != "" {
				t.Errorf("dump of a verdict never given: rc %d %q", rc, out)
			}
			// A compiled filter (tcpdump -dd 'ip[9] = N' without the
			// EtherType test): UDP frames pass it, a TCP-only one none.
			dd := func(proto int) string {
				return fmt.Sprintf("{ 0x30, 0, 0, 0x00000017 },\n{ 0x15, 0, 1, %#08x },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },", proto)
			}
			if rc, out, errs := runPort(t, "dump", "--control", name, "--count", "2", "--filter-dd", dd(17)); rc != 0 || strings.Count(out, "UDP") != 2 {
				t.Errorf("dump --filter-dd udp: rc %d %q %s", rc, out, errs)
			}
			if rc, out, _ := runPort(t, "dump", "--control", name, "--duration", "200ms", "--filter-dd", "@"+writeFile(t, "tcp.dd", dd(6))); rc != 0 || out != "" {
				t.Errorf("dump --filter-dd tcp: rc %d %q", rc, out)
			}

			// prog show, then a replacement keeping rxcnt (same shape) that
			// sends every frame back, then one whose rxcnt differs.
			var show struct {
				Port string            `json:"port"`
				Prog *control.ProgInfo `json:"prog"`
			}
			cliJSON(t, &show, "prog", "show", "--control", name, "--json", "--run-time", "100ms")
			if p := show.Prog; p == nil || p.Name != "xdp_drop_count" || len(p.Tag) != 16 || p.RunCnt == 0 || p.RunTimeCnt == 0 || p.RunTimeNanos == 0 || p.Loads != 1 {
				t.Fatalf("prog show: %+v", show.Prog)
			}
			if rc, _, errs := runPort(t, "prog", "trace", "--control", name, "--duration", "200ms"); rc != 1 || !strings.Contains(errs, "calls neither bpf_printk") {
				t.Errorf("prog trace of a program that prints nothing: rc %d %s", rc, errs)
			}
			if rc, out, _ := runPort(t, "prog", "map", "dump", "--control", name); rc != 0 || !strings.Contains(out, "rxcnt") {
				t.Errorf("map dump: rc %d %s", rc, out)
			}
			before := rxcntSum(t, name)
			var load struct {
				Prog *control.ProgInfo `json:"prog"`
				Kept []string          `json:"kept_maps"`
			}
			cliJSON(t, &load, "prog", "load", "--control", name, examplePath(t, "xdp_macswap_tx"), "--json")
			if load.Prog == nil || load.Prog.Loads != 2 || strings.Join(load.Kept, ",") != "rxcnt" {
				t.Fatalf("prog load: %+v %v", load.Prog, load.Kept)
			}
			waitFor(t, "frames sent back", func() bool {
				r, err := control.Call(control.Path(name), control.Request{Cmd: control.CmdStats})
				return err == nil && r.Verdicts["rx_xdp_tx"] > 100
			})
			if after := rxcntSum(t, name); after < before {
				t.Errorf("the kept map restarted: %d frames counted before, %d after", before, after)
			}
			rc, _, errs = runPort(t, "prog", "load", "--control", name, examplePath(t, "xdp_redirect_map"))
			if rc != 1 || !strings.Contains(errs, "map rxcnt: the running one has 256 entries, the new object's 1") {
				t.Errorf("mismatched map: rc %d %s", rc, errs)
			}
			cliJSON(t, &show, "prog", "show", name, "--json") // xdp-loader status PORT
			if show.Prog.Name != "xdp_macswap_tx" || show.Prog.Loads != 2 {
				t.Errorf("after a refused load: %+v", show.Prog)
			}

			rc, out, errs = runPort(t, "stats", "--control", name, "--watch", "100ms", "--count", "2")
			if rc != 0 || strings.Count(out, "queue 0") != 2 || !strings.Contains(out, "pps") {
				t.Errorf("stats --watch: rc %d %q %s", rc, out, errs)
			}
		})
	}
}

// rxcntSum is the sum over slots and CPUs of the running program's rxcnt.
func rxcntSum(t *testing.T, name string) uint64 {
	t.Helper()
	r, err := control.Call(control.Path(name), control.Request{Cmd: control.CmdMaps, Map: "rxcnt"})
	if err != nil || len(r.Maps) != 1 {
		t.Fatalf("rxcnt: %v", err)
	}
	var sum uint64
	for _, e := range r.Maps[0].Entries {
		for _, v := range e.Values {
			var b [8]byte
			for i, s := range v.Value {
				var x byte
				for _, c := range strings.TrimPrefix(s, "0x") {
					x = x<<4 | byte(strings.IndexRune("0123456789abcdef", c))
				}
				b[i] = x
			}
			sum += binary.LittleEndian.Uint64(b[:])
		}
	}
	return sum
}

// pcapngPackets counts the Enhanced Packet Blocks of a little-endian
// pcapng file.
func pcapngPackets(b []byte) int {
	n := 0
	for len(b) >= 12 {
		typ, l := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		if l < 12 || int(l) > len(b) {
			return -1
		}
		if typ == 6 {
			n++
		}
		b = b[l:]
	}
	return n
}

// TestRunEvents: a running xdp_events' ring buffer records reach `xnic prog
// events` decoded by their BTF types, on each family.
func TestRunEvents(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			name := fam + "sim0"
			frames := make([][]byte, 40)
			for i := range frames {
				frames[i] = tcpSynFrame()
			}
			o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_events"), interval: time.Second,
				tap: "none", peer: "pcap:" + writeTestPcap(t, frames...), peerBurst: 1, peerRate: 10, workers: -1, json: true}
			errOut := startRun(t, o, name)
			rc, out, errs := runPort(t, "prog", "events", "--control", name, "--count", "2", "--duration", "5s")
			if rc != 0 || strings.Count(out, "ringbuf events: struct syn_event") != 2 || !strings.Contains(out, `"dport":`) {
				t.Errorf("events: rc %d %q %s", rc, out, errs)
			}
			if !strings.Contains(errOut.String(), "ringbuf events: struct syn_event") {
				t.Errorf("the run did not print the records: %s", errOut.String())
			}
		})
	}
}

// tcpSynFrame is a TCP SYN from 10.0.0.1:8080 to 10.0.0.2:80, to the first
// simulated port's MAC.
func tcpSynFrame() []byte {
	f := make([]byte, 60)
	copy(f, []byte{0x02, 0x1b, 0x5e, 0, 0, 1, 0x02, 0, 0, 0, 0, 9, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[3], ip[8], ip[9] = 0x45, 40, 64, 6
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	tcp := ip[20:]
	tcp[0], tcp[1], tcp[2], tcp[3] = 0x1f, 0x90, 0, 80
	tcp[12], tcp[13] = 0x50, 0x02
	return f
}

// TestRunRxMeta: a run whose program calls an RX metadata kfunc asks its
// ports for metadata (timestamps on every family), one whose program does
// not leaves them without (unless --rx-meta), and such a program cannot be
// loaded into a run whose ports report none.
func TestRunRxMeta(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, sim := range []string{"igb:i210", "dwmac", "fec"} {
		fam, _, _ := strings.Cut(sim, ":")
		name := fam + "sim0"
		for _, c := range []struct {
			prog   string
			force  bool
			stamps bool
		}{{"xdp_hw_meta", false, true}, {"xdp_drop_count", false, false}, {"xdp_drop_count", true, true}} {
			t.Run(sim+"/"+c.prog, func(t *testing.T) {
				o := &dpRunOptions{portOptions: portOptions{Sim: sim, Queues: 1, RxMeta: c.force}, prog: examplePath(t, c.prog), interval: time.Second,
					tap: "none", peer: "none", workers: -1, json: true}
				startRun(t, o, name)
				var pi portInfo
				cliJSON(t, &pi, "info", "--control", name, "--json")
				if has := strings.Contains(strings.Join(pi.RxMeta, ","), "timestamp"); has != c.stamps {
					t.Errorf("rx meta %v, want timestamps %v", pi.RxMeta, c.stamps)
				}
				if c.stamps {
					return
				}
				rc, _, errs := runPort(t, "prog", "load", "--control", name, examplePath(t, "xdp_hw_meta"))
				if rc != 1 || !strings.Contains(errs, "--rx-meta") {
					t.Errorf("a metadata program into a run without: rc %d %s", rc, errs)
				}
			})
		}
	}
}

// TestProgRunEvents: prog run prints each frame's ring buffer records,
// decoded by their BTF types, after the frame's index.
func TestProgRunEvents(t *testing.T) {
	in := writeTestPcap(t, tcpSynFrame(), progUDPFrame(9), tcpSynFrame())
	_, stderr, code := progCmd(t, "prog", "run", examplePath(t, "xdp_events"), "--in", in)
	if code != 0 || !strings.Contains(stderr, "ringbuf events frame 0: struct syn_event {") ||
		!strings.Contains(stderr, "ringbuf events frame 2: struct syn_event {") || strings.Contains(stderr, "frame 1:") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}

// TestProgLoadFollowsEvents: after prog load, prog events follows the new
// program's ring buffer (a run that began with one that has none).
func TestProgLoadFollowsEvents(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			name := fam + "sim0"
			frames := make([][]byte, 60)
			for i := range frames {
				frames[i] = tcpSynFrame()
			}
			o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
				tap: "none", peer: "pcap:" + writeTestPcap(t, frames...), peerBurst: 1, peerRate: 20, workers: -1, json: true}
			startRun(t, o, name)
			if rc, _, errs := runPort(t, "prog", "load", "--control", name, examplePath(t, "xdp_events")); rc != 0 {
				t.Fatalf("prog load: rc %d %s", rc, errs)
			}
			rc, out, errs := runPort(t, "prog", "events", "--control", name, "--count", "2", "--duration", "3s", "--json")
			if rc != 0 || strings.Count(out, `"type":"struct syn_event"`) != 2 {
				t.Errorf("events of the loaded program: rc %d %q %s", rc, out, errs)
			}
		})
	}
}

// TestDumpQueue: --queue N captures RX queue N only: with one flow on two
// queues, every frame of a queue's capture is that queue's, and only the
// queue RSS picked for the flow has any.
func TestDumpQueue(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 2}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
		tap: "none", peer: "gen", peerSize: 64, peerBurst: 8, peerRate: 20000, workers: -1, json: true}
	startRun(t, o, "igbsim0")
	got := 0
	for q := range 2 {
		rc, out, errs := runPort(t, "dump", "--control", "igbsim0", "--queue", fmt.Sprint(q), "--duration", "300ms")
		if rc != 0 {
			t.Fatalf("queue %d: rc %d %s", q, rc, errs)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			if !strings.Contains(l, fmt.Sprintf(" q%d ", q)) {
				t.Fatalf("queue %d's capture has %q", q, l)
			}
		}
		if out != "" {
			got++
		}
	}
	if got != 1 {
		t.Errorf("%d queues had frames of the one flow, want 1", got)
	}
}
