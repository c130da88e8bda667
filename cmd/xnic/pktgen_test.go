package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestPktgenSim(t *testing.T) {
	var out bytes.Buffer
	if err := dpPktgenCmd([]string{"--sim", "igb", "--count", "5000", "--size", "128", "--burst", "16", "--json"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var r dpPktgenResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if r.Sent != 5000 || r.Bytes != 5000*128 || r.Wire != 5000 || r.PPS <= 0 {
		t.Errorf("result %+v: want 5000 frames of 128 bytes on the wire", r)
	}
	for _, args := range [][]string{
		{"--sim", "igb", "--size", "10"},
		{"--sim", "igb", "--dst", "nothing"},
		{"--sim", "igb", "--count", "0"},
	} {
		if err := dpPktgenCmd(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("pktgen %q succeeded", args)
		}
	}
}
