package dataplane

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// The device's drops are the counters its driver names, each frame once: an
// overlapping event count (igb's RNBC) and a port that names none add
// nothing; the JSON carries the total and the counters, and the driver's
// discards apart.
func TestHardwareDropsCountsEachFrameOnce(t *testing.T) {
	ps := PortStats{Name: "p0", Hardware: []nic.Counter{
		{Name: "rx_missed_errors", Value: 5}, {Name: "rx_no_buffer_count", Value: 8},
		{Name: "rx_fifo_errors", Value: 3}, {Name: "rx_queue_0_drops", Value: 3}, {Name: "rx_crc_errors", Value: 0},
	}}
	if total, _ := HardwareDrops(&ps); total != 0 {
		t.Fatalf("a port naming no drop counters: %d drops", total)
	}
	ps.RxDropNames = []string{"rx_missed_errors", "rx_fifo_errors", "rx_crc_errors"}
	// The driver's discards are apart from the device's drops.
	ps.Hardware = append(ps.Hardware, nic.Counter{Name: "rx_desc_errors", Value: 1}, nic.Counter{Name: "rx_reset_discards", Value: 64})
	ps.RxDiscardNames = []string{"rx_desc_errors", "rx_reset_discards"}
	total, by := HardwareDrops(&ps)
	if total != 8 || len(by) != 2 || by[0].Name != "rx_missed_errors" || by[1].Name != "rx_fifo_errors" {
		t.Fatalf("total %d by %v: want 8 from rx_missed_errors and rx_fifo_errors", total, by)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, &Snapshot{Ports: []PortStats{ps}}, nil); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Ports []struct {
			DeviceDrops      uint64            `json:"device_drops"`
			DeviceDropsBy    map[string]uint64 `json:"device_drops_by"`
			DriverDiscards   uint64            `json:"driver_discards"`
			DriverDiscardsBy map[string]uint64 `json:"driver_discards_by"`
		} `json:"ports"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if p := out.Ports[0]; p.DeviceDrops != 8 || p.DeviceDropsBy["rx_fifo_errors"] != 3 || len(p.DeviceDropsBy) != 2 ||
		p.DriverDiscards != 65 || p.DriverDiscardsBy["rx_reset_discards"] != 64 || len(p.DriverDiscardsBy) != 2 {
		t.Fatalf("JSON: %+v", p)
	}
}
