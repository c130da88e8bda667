package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/mapio"
)

const lpmObj = "../../examples/xdp/xdp_lpm_acl.o"

// lpmFrameFrom is progUDPFrame with IPv4 source a.b.c.d.
func lpmFrameFrom(a, b, c, d byte) []byte {
	f := progUDPFrame(53)
	copy(f[26:30], []byte{a, b, c, d})
	return f
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProgRunMapsFile: a map file blocks 10.0.0.0/8 in xdp_lpm_acl, so the
// frame from 10.1.2.3 drops and the one from 192.0.2.1 passes; without it
// both pass. Both file forms, and a bad file's error.
func TestProgRunMapsFile(t *testing.T) {
	in := writeTestPcap(t, lpmFrameFrom(10, 1, 2, 3), lpmFrameFrom(192, 0, 2, 1))
	stdout, stderr, code := progCmd(t, "prog", "run", lpmObj, "--in", in)
	if code != 0 || !strings.Contains(stdout, "XDP_PASS 2") {
		t.Fatalf("without a map file: exit %d %q %q", code, stdout, stderr)
	}
	files := map[string]string{
		"bpftool.json": `{"acl_v4": [{"key": ["0x08","0x00","0x00","0x00","0x0a","0x00","0x00","0x00"],
			"value": ["0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00"], "formatted": {"ignored": true}}]}`,
		"list.json":   `[{"map": "acl_v4", "key": "080000000a000000", "value": [0,0,0,0,0,0,0,0]}]`,
		"entries.hex": "# block 10/8\nacl_v4 08000000 0a000000  0000000000000000\n",
	}
	for name, body := range files {
		stdout, stderr, code := progCmd(t, "prog", "run", lpmObj, "--in", in, "--json", "--maps", writeFile(t, name, body))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "XDP_DROP") || !strings.Contains(lines[1], "XDP_PASS") {
			t.Errorf("%s: %q, want the first frame dropped and the second passed", name, stdout)
		}
	}
	for name, body := range map[string]string{
		"short key":  `{"acl_v4": [{"key": "08000000", "value": "0000000000000000"}]}`,
		"no map":     "nope 00 00\n",
		"bad hex":    "acl_v4 zz\n",
		"bad byte":   `[{"map": "acl_v4", "key": [256,0,0,0,0,0,0,0], "value": "00"}]`,
		"no value":   `[{"map": "acl_v4", "key": "080000000a000000"}]`,
		"value size": "acl_v4 080000000a000000 00\n",
	} {
		_, stderr, code := progCmd(t, "prog", "run", lpmObj, "--in", in, "--maps", writeFile(t, "f", body))
		if code == 0 || !strings.Contains(stderr, "f:") {
			t.Errorf("%s: exit %d, stderr %q; want an error naming the file", name, code, stderr)
		}
	}
}

func TestMapFilePerCPU(t *testing.T) {
	c, err := bpf.LoadFile("../../examples/xdp/xdp_drop_count.o", &bpf.Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	// rxcnt: per-CPU array of u64; bpftool's per-CPU form, with a CPU this
	// run does not have (ignored), and one value for every CPU.
	body := `{"rxcnt": [{"key": "11000000", "values": [{"cpu": 0, "value": "0500000000000000"}, {"cpu": 1, "value": "0700000000000000"}, {"cpu": 5, "value": "0900000000000000"}]},
		{"key": "06000000", "value": "0200000000000000"}]}`
	if err := mapio.LoadFile(c, writeFile(t, "pc.json", body)); err != nil {
		t.Fatal(err)
	}
	m, _ := c.Map("rxcnt")
	for key, want := range map[byte][2]uint64{17: {5, 7}, 6: {2, 2}} {
		for cpu := range 2 {
			v := m.Lookup([]byte{key, 0, 0, 0}, cpu)
			if got := binary.LittleEndian.Uint64(v); got != want[cpu] {
				t.Errorf("rxcnt[%d] CPU %d = %d, want %d", key, cpu, got, want[cpu])
			}
		}
	}
}

// TestRunMapsFile: `xnic run --maps` fills the devmap of xdp_redirect_map
// (tx_port[0] = ifindex 2) from a hex file instead of --map, so frames from
// port 0's generator leave through port 1.
func TestRunMapsFile(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:2", Queues: 1}, prog: examplePath(t, "xdp_redirect_map"), interval: 100 * time.Millisecond, mapFile: writeFile(t, "m.hex", "tx_port 00000000 02000000\n"), tap: "none", json: true, peer: "gen,none", peerSize: 64, peerBurst: 16, peerRate: 20000, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
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
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil || len(final.Ports) != 2 {
		t.Fatalf("final line %q: %v", lines[len(lines)-1], err)
	}
	if rd, xm := final.Ports[0].Counters["rx_xdp_redirect"], final.Ports[1].Counters["tx_xdp_xmit"]; rd == 0 || xm != rd {
		t.Errorf("redirect %d, xmit %d: want every frame redirected through the preloaded devmap entry", rd, xm)
	}
	o.mapFile = writeFile(t, "bad.hex", "tx_port 00000000 07000000\n") // no port has ifindex 7
	if err := dpRun(context.Background(), o, &out, &errOut); err == nil || !strings.Contains(err.Error(), "bad.hex: line 1") {
		t.Errorf("bad devmap entry: %v", err)
	}
}
