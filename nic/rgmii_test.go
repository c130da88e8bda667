package nic_test

import (
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// TestRGMIITxClock: the table is RGMII's (include/linux/phy.h rgmii_clock),
// both ways, and has nothing for speeds RGMII does not run.
func TestRGMIITxClock(t *testing.T) {
	want := map[int]uint64{1000: 125_000_000, 100: 25_000_000, 10: 2_500_000}
	if got := nic.RGMIISpeeds(); len(got) != 3 || got[0] != 1000 || got[2] != 10 {
		t.Fatalf("RGMIISpeeds %v", got)
	}
	for mbps, hz := range want {
		if got, ok := nic.RGMIITxClockHz(mbps); !ok || got != hz {
			t.Errorf("RGMIITxClockHz(%d) = %d, %v", mbps, got, ok)
		}
		if got, ok := nic.RGMIISpeedAt(hz); !ok || got != mbps {
			t.Errorf("RGMIISpeedAt(%d) = %d, %v", hz, got, ok)
		}
	}
	for _, mbps := range []int{0, 2500, 5000} {
		if _, ok := nic.RGMIITxClockHz(mbps); ok {
			t.Errorf("RGMIITxClockHz(%d) answered", mbps)
		}
	}
	if _, ok := nic.RGMIISpeedAt(50_000_000); ok {
		t.Error("RGMIISpeedAt(50 MHz) answered")
	}
}
