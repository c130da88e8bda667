package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
)

// TestProgRunPerfSamples: xdp_perf_sample's records are printed, one per
// frame, and its frame samples (the first 128 bytes) land in the pcapng.
func TestProgRunPerfSamples(t *testing.T) {
	big := make([]byte, 300)
	copy(big, progUDPFrame(7))
	for i := 64; i < len(big); i++ {
		big[i] = byte(i)
	}
	frames := [][]byte{progUDPFrame(9), big, progUDPFrame(53)}
	in := writeTestPcap(t, frames...)
	out := filepath.Join(t.TempDir(), "perf.pcapng")
	stdout, stderr, code := progCmd(t, "prog", "run", "../../examples/xdp/xdp_perf_sample.o", "--in", in, "--perf-pcap", out)
	if code != 0 || !strings.Contains(stdout, "XDP_PASS 3") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "perf events cpu 0 frame 1: data deda2c0180000000") || !strings.HasSuffix(lines[1], "+ 128 frame bytes") {
		t.Errorf("stderr %q: want one perf line per frame, the second with 300 bytes of frame, 128 captured", stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		data, _, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if want := fr[:min(len(fr), 128)]; !bytes.Equal(data, want) {
			t.Errorf("packet %d: %x, want %x", i, data, want)
		}
	}
}

// TestRunPerfSamples: `xnic run` on a simulated port with xdp_perf_sample
// prints the samples and captures their frame bytes.
func TestRunPerfSamples(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.pcapng")
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:1", Queues: 1}, prog: examplePath(t, "xdp_perf_sample"), interval: 100 * time.Millisecond, tap: "none", json: true, perfPcap: out, peer: "gen", peerSize: 64, peerBurst: 8, peerRate: 2000, workers: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := dpRun(ctx, o, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	lines := strings.Count(stderr.String(), "perf events cpu 0: data deda40004000")
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if len(data) != 64 {
			t.Fatalf("captured %d bytes, want the 64-byte frames", len(data))
		}
		n++
	}
	if n == 0 || n != lines {
		t.Errorf("%d samples printed, %d captured: want the same, more than 0", lines, n)
	}
}
