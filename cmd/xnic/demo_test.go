package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	res, err := dpDemo(context.Background(), simSpec{Fam: family("igb"), Variant: "82576", N: 1}, 250*time.Millisecond, 64, false, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d phases, want 4", len(res))
	}
	for _, r := range res {
		// Every frame received got the phase's verdict; nothing aborted.
		if r.Rx == 0 || r.Verdicts != r.Rx || r.Aborted != 0 {
			t.Errorf("%s: rx %d, %s %d, aborted %d", r.Phase, r.Rx, r.Verdict, r.Verdicts, r.Aborted)
		}
		// DROP sends nothing; TX and REDIRECT send every frame (adjust_tail one
		// ICMP error per ping) or count it lost: the TX ring was full, or the
		// other port had no buffer to copy it into, as a kernel driver counts
		// XDP_TX and ndo_xdp_xmit failures.
		want := r.Verdicts - r.Errors
		if r.Verdict == "XDP_DROP" {
			want = 0
			if r.Errors != 0 {
				t.Errorf("%s: %d errors", r.Phase, r.Errors)
			}
		}
		if r.WireOut != want {
			t.Errorf("%s: %d frames on the wire, want %d (%d verdicts, %d lost)", r.Phase, r.WireOut, want, r.Verdicts, r.Errors)
		}
		// The wire carries as much out as in, so a full TX ring means the
		// models' goroutines lost the CPU to the dataplane's (the machine's
		// CPUs are shared with other tests): a few frames. A driver that
		// stops reclaiming loses nearly all of them.
		if r.Errors > r.Verdicts/100 {
			t.Errorf("%s: %d of %d frames lost after their verdict", r.Phase, r.Errors, r.Verdicts)
		}
	}
	if !strings.Contains(out.String(), "== adjust_tail ICMP") {
		t.Errorf("output:\n%s", out.String())
	}
	var js bytes.Buffer
	if err := dpDemoCmd([]string{"--phase", "100ms", "--json"}, &js, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"phase": "redirect port0->port1"`) {
		t.Errorf("JSON:\n%s", js.String())
	}
}
