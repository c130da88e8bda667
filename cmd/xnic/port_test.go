package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
)

func runPort(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	rc := run(args, &out, &errb)
	return rc, out.String(), errb.String()
}

func TestInfoSimJSON(t *testing.T) {
	rc, out, errs := runPort(t, "info", "--sim", "igb", "--json")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var pi portInfo
	if err := json.Unmarshal([]byte(out), &pi); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if pi.Driver != "igb" || pi.Bus != "sim" || pi.Vendor != "0x8086" || pi.DeviceID != "0x10c9" || pi.Sim != "igb:82576" {
		t.Fatalf("identity %+v", pi)
	}
	if !pi.Link.Up || pi.Link.SpeedMbps != 1000 || !pi.Link.FullDuplex {
		t.Fatalf("link %+v", pi.Link)
	}
	if pi.MAC != "02:00:00:00:00:01" || !strings.HasPrefix(pi.Model, "82576") || pi.Queues != 1 || pi.MaxQueues != 16 {
		t.Fatalf("port %+v", pi)
	}
	if pi.PHYID == "" || pi.PHYID == "0x00000000" {
		t.Fatalf("PHY id %q", pi.PHYID)
	}
}

func TestInfoSimText(t *testing.T) {
	rc, out, errs := runPort(t, "info", "--sim", "igb", "--queues", "2")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	for _, want := range []string{"driver:  igb", "link:    up 1000 Mb/s full duplex", "queues:  2 of 16", "mac:     02:00:00:00:00:01"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRegsSim(t *testing.T) {
	rc, out, errs := runPort(t, "regs", "--sim", "igb")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	for _, want := range []string{"CTRL", "SLU=1", "STATUS", "LU=1", "SPEED=1000", "RCTL", "EN=1", "RAH0", "MAC=02:00:00:00:00:01", "RXDCTL0", "RDT0"} {
		if !strings.Contains(out, want) {
			t.Errorf("regs output lacks %q", want)
		}
	}
	rc, out, errs = runPort(t, "regs", "--json", "--sim", "igb")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var d igb.Dump
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	r, ok := d.Reg("STATUS")
	if !ok {
		t.Fatal("no STATUS in JSON dump")
	}
	if lu, _ := r.Field("LU"); lu != "1" {
		t.Fatalf("STATUS %+v", r)
	}
	for _, reg := range d.Registers {
		if reg.Name == "ICR" || reg.Name == "EICR" || reg.Name == "GPRC" {
			t.Fatalf("dump reads clear-on-read register %s", reg.Name)
		}
	}
}

// TestRegsRaw: --raw reads without bringing the port up: the receiver is off
// and the link down, as after power-on.
func TestRegsRaw(t *testing.T) {
	rc, out, errs := runPort(t, "regs", "--sim", "igb", "--raw", "--json")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var d igb.Dump
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	rctl, _ := d.Reg("RCTL")
	status, _ := d.Reg("STATUS")
	if en, _ := rctl.Field("EN"); en != "0" {
		t.Fatalf("RCTL %+v: the raw dump brought the port up", rctl)
	}
	if lu, _ := status.Field("LU"); lu != "0" {
		t.Fatalf("STATUS %+v", status)
	}
}

func TestStatsSim(t *testing.T) {
	rc, out, errs := runPort(t, "stats", "--sim", "igb", "--json")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var s struct {
		Port     string            `json:"port"`
		Counters map[string]uint64 `json:"counters"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rx_packets", "tx_packets", "rx_bytes", "rx_missed_errors", "rx_no_buffer_count", "rx_crc_errors", "tx_refused_dma", "rx_queue_0_packets"} {
		if _, ok := s.Counters[n]; !ok {
			t.Errorf("no counter %s", n)
		}
	}
	rc, out, _ = runPort(t, "stats", "--sim", "igb")
	if rc != 0 || !strings.Contains(out, "rx_packets") {
		t.Fatalf("text stats rc %d:\n%s", rc, out)
	}
}

func TestPortCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"info"}, 2, "--sim KIND[:VARIANT], e.g. igb"},
		{[]string{"info", "--sim", "e1000"}, 2, "igb"},
		{[]string{"info", "0000:03:00.0", "--sim", "igb"}, 2, "not several"},
		{[]string{"stats", "a", "b"}, 2, "one device"},
		{[]string{"regs", "not-a-bdf"}, 1, ""},
	} {
		rc, _, errs := runPort(t, c.args...)
		if rc != c.rc || !strings.Contains(errs, c.want) {
			t.Errorf("%v: rc %d (want %d), stderr %q (want %q)", c.args, rc, c.rc, errs, c.want)
		}
	}
}

// TestOpenPortSimTraffic: the port openPort gives for --sim carries frames
// both ways through its peer, which is what `xnic run --sim` builds on.
func TestOpenPortSimTraffic(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "igb"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	op.Sim.Peer.SetReceiver(func(f []byte) { got <- bytes.Clone(f) })
	frame := make([]byte, 64)
	copy(frame, op.MAC())
	frame[6] = 2
	if err := op.Sim.Peer.Send(frame); err != nil {
		t.Fatal(err)
	}
	bufs := make([]*dma.Buf, 4)
	if n := op.RxQueue(0).Recv(bufs); n != 1 || !bytes.Equal(bufs[0].Data(), frame) {
		t.Fatalf("Recv %d", n)
	}
	copy(bufs[0].Data()[0:6], []byte{2, 9, 9, 9, 9, 9})
	if op.TxQueue(0).Send(bufs[:1]) != 1 {
		t.Fatal("Send refused")
	}
	select {
	case f := <-got:
		if !bytes.Equal(f[:6], []byte{2, 9, 9, 9, 9, 9}) || len(f) != 64 {
			t.Fatalf("peer got %x", f)
		}
	default:
		t.Fatal("peer got nothing")
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openPort("x", portOptions{Sim: "igb"}); !errors.Is(err, errUsage) {
		t.Fatalf("BDF and --sim: %v", err)
	}
}
