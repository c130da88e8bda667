package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgRunPcapng: prog run reads the pcapng `xnic run --dump` writes
// (pcapdump), frame by frame, and refuses a pcapng without frames.
func TestProgRunPcapng(t *testing.T) {
	in := writeUDPPcap(t, 9, net.HardwareAddr{2, 0, 0, 0, 0, 1})
	frames, err := readPcap(in)
	if err != nil || len(frames) != 9 {
		t.Fatalf("%d frames, %v", len(frames), err)
	}
	for i, f := range frames {
		if len(f.data) != 64+i%7*10 {
			t.Fatalf("frame %d: %d bytes", i, len(f.data))
		}
	}
	rc, out, errs := runPort(t, "prog", "run", examplePath(t, "xdp_drop_count"), "--in", in)
	if rc != 0 || !strings.Contains(out, "8: XDP_DROP len 74") || !strings.Contains(out, "9 frames: XDP_DROP 9") {
		t.Fatalf("rc %d: %s %s", rc, out, errs)
	}
	empty := filepath.Join(t.TempDir(), "empty.pcapng")
	b, _ := os.ReadFile(in)
	// The section header block alone: its length is in bytes 4-8.
	n := int(b[4]) | int(b[5])<<8 | int(b[6])<<16 | int(b[7])<<24
	if err := os.WriteFile(empty, b[:n], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readPcap(empty); err == nil {
		t.Fatal("a pcapng without frames was read")
	}
}
