package dataplane

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
)

func TestReports(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer stopAndCheck(t, e, ps...)
	prev := e.Snapshot()
	for i := 0; i < 300; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionDrop, 0, 0, uint32(i), 64))
	}
	for i := 0; i < 100; i++ {
		ps[0].Rx(0).Inject(frame(bpf.ActionTX, 0, 0, uint32(i), 64))
	}
	waitFor(t, "400 frames", func() bool { return e.Snapshot().Ports[0].Counters[RxPackets] == 400 })
	cur := e.Snapshot()
	cur.Time = prev.Time.Add(2 * time.Second) // a known interval
	rs := RatesBetween(&prev, &cur)
	if len(rs) != 1 || rs[0].RxPPS != 200 || rs[0].Drop != 150 || rs[0].TX != 50 || rs[0].TxPPS != 50 {
		t.Fatalf("rates %+v, want rx 200 drop 150 tx 50 over 2 s", rs)
	}
	var line bytes.Buffer
	FormatRates(&line, rs)
	if !strings.Contains(line.String(), "rx         200 pps") || !strings.Contains(line.String(), "drop         150") {
		t.Errorf("rate line %q", line.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, &cur, rs); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Ports []struct {
			Port     string            `json:"port"`
			Drop     float64           `json:"drop_pps"`
			Counters map[string]uint64 `json:"counters"`
		} `json:"ports"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("JSON %s: %v", js.Bytes(), err)
	}
	if got.Ports[0].Port != "mem0" || got.Ports[0].Drop != 150 || got.Ports[0].Counters["rx_xdp_tx"] != 100 {
		t.Errorf("JSON %s", js.Bytes())
	}
	var sum bytes.Buffer
	FormatSummary(&sum, &cur)
	if !strings.Contains(sum.String(), "rx_xdp_drop") || !strings.Contains(sum.String(), "300") || strings.Contains(sum.String(), "hardware:") {
		t.Errorf("summary:\n%s", sum.String())
	}
	if Group(1487962) != "1,487,962" || Group(12) != "12" || Group(-1234) != "-1,234" {
		t.Errorf("Group: %s %s %s", Group(1487962), Group(12), Group(-1234))
	}
}
