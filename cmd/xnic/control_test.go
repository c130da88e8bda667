package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/nic"
)

// TestMain gives the package's tests a control socket directory of their
// own: every test that runs `xnic run` serves sockets, and none may land in
// the machine's /run/xnic or collide with another test process's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xnic-control-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_RUNTIME_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeUDPPcap writes n UDP frames to dst's MAC into a pcapng file.
func writeUDPPcap(t *testing.T, n int, dst net.HardwareAddr) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.pcapng")
	w, err := pcapdump.Create(path, []string{"x"}, pcapdump.All)
	if err != nil {
		t.Fatal(err)
	}
	f := pktgen.DefaultFlow()
	f.DstMAC = dst
	for i := 0; i < n; i++ {
		f.Size = 64 + i%7*10
		fr, err := f.UDP()
		if err != nil {
			t.Fatal(err)
		}
		w.Dump(0, 0, bpf.ActionPass, fr)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// cliJSON runs an xnic command and decodes its JSON output into v.
func cliJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	rc, out, errs := runPort(t, args...)
	if rc != 0 {
		t.Fatalf("%q: rc %d: %s", args, rc, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%q: %v in %s", args, err, out)
	}
}

// TestControlDuringRun runs `xnic run` on each family's model with a pcap
// peer (a known number of frames, then silence) and checks what the other
// commands read through its control socket: the stats equal the run's own
// final counters, the register dump is the running port's (a write made
// through the socket shows in it), the PHY is the running port's, and the
// program's map counts exactly the frames sent, and takes an update.
func TestControlDuringRun(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	const frames = 300
	for _, v := range []string{"igb", "dwmac", "fec"} {
		t.Run(v, func(t *testing.T) {
			pcap := writeUDPPcap(t, frames, net.HardwareAddr{0x02, 0x1b, 0x5e, 0, 0, 1})
			o := &dpRunOptions{portOptions: portOptions{Sim: v, Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: 50 * time.Millisecond, tap: "none", peer: "pcap:" + pcap, peerRate: 5000, workers: -1, json: true}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errOut bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- dpRun(ctx, o, &out, &errOut) }()
			name := v + "sim0"
			path := control.Path(name)
			waitFor(t, "the control socket", func() bool { return control.Alive(path) })
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("socket mode: %v %v", fi.Mode(), err)
			}
			waitFor(t, "the frames", func() bool {
				r, err := control.Call(path, control.Request{Cmd: "stats"})
				return err == nil && r.Verdicts["rx_packets"] == frames
			})

			var st struct {
				Port     string            `json:"port"`
				Counters map[string]uint64 `json:"counters"`
			}
			cliJSON(t, &st, "stats", "--control", name, "--json")

			var dump nic.RegDump
			rw := regRW[family(v)]
			cliJSON(t, new([]nic.RegValue), "reg", "--control", name, fmt.Sprintf("%s=%#x", rw.name, rw.val), "--force", "--json")
			cliJSON(t, &dump, "regs", "--control", name, "--json")
			if r, ok := dump.Reg(rw.name); !ok || r.Value != rw.val {
				t.Errorf("regs through the socket: %s = %+v, want the %#x written through it", rw.name, r, rw.val)
			}
			if rc, _, errs := runPort(t, "reg", "--control", name, rw.name+"=0"); rc != 1 || !strings.Contains(errs, "owns the port") {
				t.Errorf("unforced write to a running port: rc %d %s", rc, errs)
			}

			if v == "igb" { // moderation changes under traffic, through the run
				var co coalesceOut
				cliJSON(t, &co, "coalesce", "--control", name, "rx-usecs", "77", "--json")
				cliJSON(t, &dump, "regs", "--control", name, "--json")
				if r, _ := dump.Reg("EITR0"); len(co.Queues) != 1 || co.Queues[0].RxUsecs != 77 || r.Value&0x7FFC != 77<<2 {
					t.Errorf("coalesce through the socket: %+v, EITR0 %#x", co, r.Value)
				}
			}

			var anar phyRegValue
			runPort(t, "phy", "--control", name, "write", "anar", "0x5e1", "--force")
			cliJSON(t, &anar, "phy", "--control", name, "read", "anar", "--json")
			if anar.Value != 0x5e1 {
				t.Errorf("PHY through the socket: ANAR 0x%04x after writing 0x05e1", anar.Value)
			}

			var ms []mapio.Map
			cliJSON(t, &ms, "prog", "map", "dump", "--control", name, "rxcnt", "--json")
			if got := perCPUSum(t, ms, 17); got != frames {
				t.Errorf("rxcnt[17 (UDP)] sums to %d over the CPUs, want the %d frames", got, frames)
			}
			// The object has BTF (__u32 keys, __u64 values): decoded too.
			if f := ms[0].Entries[17].Formatted; f == nil || f.Key != float64(17) || len(f.Values) == 0 {
				t.Errorf("rxcnt[17] by BTF: %+v", f)
			} else {
				var sum float64
				for _, v := range f.Values {
					sum += v.Value.(float64)
				}
				if sum != frames {
					t.Errorf("rxcnt[17] by BTF sums to %v", sum)
				}
			}
			if rc, _, errs := runPort(t, "prog", "map", "update", "--control", name, "rxcnt", "key", "hex", "2a000000", "value", "7", "0", "0", "0", "0", "0", "0", "0"); rc != 0 {
				t.Fatalf("map update: rc %d %s", rc, errs)
			}
			cliJSON(t, &ms, "prog", "map", "dump", "--control", name, "rxcnt", "--json")
			if got := perCPUSum(t, ms, 42); got != 7*uint64(len(ms[0].Entries[42].Values)) {
				t.Errorf("rxcnt[42] after setting 7 in every slot: %d", got)
			}
			// prog maps --control is the same dump.
			var ms2 []mapio.Map
			cliJSON(t, &ms2, "prog", "maps", "--control", name, "rxcnt", "--json")
			if got := perCPUSum(t, ms2, 42); got != 7*uint64(len(ms2[0].Entries[42].Values)) {
				t.Errorf("prog maps --control: rxcnt[42] %d", got)
			}

			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v\n%s", err, errOut.String())
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the socket outlives the run: %v", err)
			}
			if !strings.Contains(errOut.String(), "control socket for "+name+": "+path) {
				t.Errorf("the run did not print its socket: %s", errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var final struct {
				Ports []struct {
					Hardware map[string]uint64 `json:"hardware"`
				} `json:"ports"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil {
				t.Fatal(err)
			}
			hw := final.Ports[0].Hardware
			if st.Port != name || len(st.Counters) == 0 || len(st.Counters) != len(hw) {
				t.Fatalf("socket stats %+v, the run's own %v", st, hw)
			}
			for name, v := range st.Counters {
				if want, ok := hw[name]; !ok || want != v {
					t.Errorf("%s: %d through the socket, the run's own %d (%v)", name, v, want, ok)
				}
			}
		})
	}
}

func perCPUSum(t *testing.T, ms []mapio.Map, key int) uint64 {
	t.Helper()
	if len(ms) != 1 || len(ms[0].Entries) != 256 {
		t.Fatalf("rxcnt dump: %d maps", len(ms))
	}
	var sum uint64
	for _, v := range ms[0].Entries[key].Values {
		b, err := mapio.HexDecode(strings.Join(v.Value, " "))
		if err != nil || len(b) != 8 {
			t.Fatalf("value %v: %v", v.Value, err)
		}
		for i := 7; i >= 0; i-- {
			sum += uint64(b[i]) << (8 * i)
		}
	}
	return sum
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestControlErrors: requests a run cannot answer come back as errors, and
// without a run --control says where it looked.
func TestControlErrors(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	rc, _, errs := runPort(t, "stats", "--control", "nosuch0")
	if rc != 1 || !strings.Contains(errs, filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "xnic", "nosuch0.sock")) {
		t.Fatalf("no run: rc %d %s", rc, errs)
	}
	if rc, _, _ := runPort(t, "stats", "--control", "x", "--sim", "igb"); rc != 2 {
		t.Fatalf("--control with --sim: rc %d", rc)
	}
	for _, bad := range [][]string{
		{"prog", "map", "dump"},
		{"prog", "map", "update", "--control", "x", "m", "key", "1"},
		{"prog", "map", "update", "--control", "x", "m", "key", "300", "value", "1"},
		{"prog", "map", "update", "--control", "x", "m", "key", "hex", "abc", "value", "1"},
	} {
		if rc, _, _ := runPort(t, bad...); rc != 2 {
			t.Errorf("%q: rc %d, want 2", bad, rc)
		}
	}
}

// TestRunWithoutControlDir: a run whose control directory cannot be made
// still runs, and says why it has no socket.
func TestRunWithoutControlDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "xnic"), nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", dir)
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second, tap: "none", peer: "none", workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(errOut.String(), "no control socket") {
		t.Fatalf("stderr %q", errOut.String())
	}
}
