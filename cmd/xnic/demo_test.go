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
		if r.Rx == 0 || r.Verdicts != r.Rx || r.Aborted != 0 || r.Errors != 0 {
			t.Errorf("%s: rx %d, %s %d, aborted %d, errors %d", r.Phase, r.Rx, r.Verdict, r.Verdicts, r.Aborted, r.Errors)
		}
		// DROP sends nothing; TX and REDIRECT send every frame (adjust_tail one
		// ICMP error per ping).
		want := r.Verdicts
		if r.Verdict == "XDP_DROP" {
			want = 0
		}
		if r.WireOut != want {
			t.Errorf("%s: %d frames on the wire, want %d", r.Phase, r.WireOut, want)
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
