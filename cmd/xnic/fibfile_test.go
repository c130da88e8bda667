package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRunFIBFile: xnic run with xdp_fib_router and a FIB file routes the
// generator's frames (198.18.0.2) out of port 2 through a neighbour; the
// ports' MACs come from the ports.
func TestRunFIBFile(t *testing.T) {
	fib := writeFile(t, "fib.json", `{
		"interfaces": [{"ifindex": 1, "forwarding": true, "addrs": ["198.18.0.1/31"]},
		               {"ifindex": 2, "mtu": 1500, "addrs": ["10.2.0.1/24"]}],
		"routes": [{"dst": "198.18.0.0/24", "gateway": "10.2.0.2", "ifindex": 2}],
		"neighbours": [{"ifindex": 2, "ip": "10.2.0.2", "mac": "02:47:57:00:00:02"}]}`)
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:2", Queues: 1}, prog: examplePath(t, "xdp_fib_router"), interval: 100 * time.Millisecond, fibFile: fib, tap: "none", json: true, peer: "gen,none", peerSize: 64, peerBurst: 16, peerRate: 20000, workers: -1}
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
		t.Errorf("redirect %d, xmit %d: want every frame routed out of port 2", rd, xm)
	}
	for name, body := range map[string]string{
		"bad type":    `{"routes": [{"dst": "10.0.0.0/8", "type": "nat"}]}`,
		"bad prefix":  `{"routes": [{"dst": "10.0.0.0/33", "ifindex": 1}]}`,
		"no port":     `{"interfaces": [{"ifindex": 9}]}`,
		"unknown key": `{"interfaces": [], "rules": []}`,
	} {
		o.fibFile = writeFile(t, "bad.json", body)
		if err := dpRun(context.Background(), o, &out, &errOut); err == nil || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

// TestProgRunFIBFile: prog run with a FIB file: xdp_fib_router redirects
// the frame to 198.18.0.2 to ifindex 2 with the neighbour's MAC, and drops
// the one to the blackhole.
func TestProgRunFIBFile(t *testing.T) {
	fib := writeFile(t, "fib.json", `{
		"interfaces": [{"ifindex": 1, "mac": "02:00:00:00:00:01", "forwarding": true, "addrs": ["10.1.0.1/24"]},
		               {"ifindex": 2, "mac": "02:00:00:00:00:02", "addrs": ["10.2.0.1/24"]}],
		"routes": [{"dst": "198.18.0.0/24", "gateway": "10.2.0.2", "ifindex": 2},
		           {"dst": "203.0.113.0/24", "type": "blackhole"}],
		"neighbours": [{"ifindex": 2, "ip": "10.2.0.2", "mac": "02:47:57:00:00:02"}]}`)
	to := func(a, b, c, d byte) []byte {
		f := progUDPFrame(9)
		f[22] = 64 // TTL
		copy(f[30:34], []byte{a, b, c, d})
		return f
	}
	in := writeTestPcap(t, to(198, 18, 0, 2), to(203, 0, 113, 1))
	stdout, stderr, code := progCmd(t, "prog", "run", "../../examples/xdp/xdp_fib_router.o", "--in", in, "--json", "--fib", fib)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "XDP_REDIRECT") || !strings.Contains(lines[0], `"hex":"024757000002020000000002`) ||
		!strings.Contains(lines[1], "XDP_DROP") {
		t.Errorf("%q: want the first frame redirected with the next hop's and port 2's MACs, the second dropped", stdout)
	}
}
