package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
