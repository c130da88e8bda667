package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/control"
)

// TestProgTraceFollowsRun: bpf_printk lines of a running program reach
// `xnic prog trace` through the control socket, one per frame, in order,
// with the frame's length as the program printed it.
func TestProgTraceFollowsRun(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	const frames = 40
	pcap := writeUDPPcap(t, frames, net.HardwareAddr{0x02, 0x1b, 0x5e, 0, 0, 1})
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: filepath.Join("..", "..", "dataplane", "bpf", "testdata", "features.o"), sec: "xdp_events", interval: time.Second, tap: "none", peer: "pcap:" + pcap, peerRate: 2000, workers: -1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- dpRun(ctx, o, &out, &errOut) }()
	waitFor(t, "the control socket", func() bool { return control.Alive(control.Path("igbsim0")) })
	rc, got, errs := runPort(t, "prog", "trace", "--control", "igbsim0", "--lines", fmt.Sprint(frames), "--duration", "10s")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != frames {
		t.Fatalf("%d lines for %d frames:\n%s", len(lines), frames, got)
	}
	for i, l := range lines {
		// writeUDPPcap's frame i is 64 + i%7*10 bytes.
		if want := fmt.Sprintf("len %d queue 0", 64+i%7*10); l != want {
			t.Fatalf("line %d: %q, want %q", i, l, want)
		}
	}
}

// TestTraceHub: a late follower gets the backlog, then live lines; the
// backlog keeps the last traceBacklog lines; writing allocates nothing while
// nobody follows.
func TestTraceHub(t *testing.T) {
	h := newTraceHub()
	for i := 0; i < traceBacklog+5; i++ {
		fmt.Fprintf(h, "line %d\n", i)
	}
	back, ch := h.subscribe()
	if len(back) != traceBacklog || string(back[0]) != "line 5" || string(back[len(back)-1]) != fmt.Sprintf("line %d", traceBacklog+4) {
		t.Fatalf("backlog %d lines, first %q", len(back), back[0])
	}
	h.Write([]byte("live\n"))
	if l := <-ch; string(l) != "live" {
		t.Fatalf("live line %q", l)
	}
	h.unsubscribe(ch)
	line := []byte("len 64 queue 0\n")
	if n := testing.AllocsPerRun(1000, func() { h.Write(line) }); n != 0 {
		t.Fatalf("%v allocations per line without followers", n)
	}
}
