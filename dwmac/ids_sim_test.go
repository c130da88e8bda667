package dwmac_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
)

// TestIntelTablesAgree holds the model's table of Intel mGbE parts equal to
// the driver's: both come from dwmac-intel.c, kept apart on purpose (a model
// never imports its driver), so a change to one must be made to the other.
func TestIntelTablesAgree(t *testing.T) {
	drv := map[uint16]dwmac.Model{}
	for _, m := range dwmac.Models() {
		if m.Integration == dwmac.IntegrationIntel {
			drv[m.Device] = m
		}
	}
	parts := dwmacsim.IntelParts()
	if len(parts) != len(drv) {
		t.Errorf("the model has %d Intel parts, the driver %d", len(parts), len(drv))
	}
	for _, p := range parts {
		d, ok := drv[p.Device]
		switch {
		case !ok:
			t.Errorf("8086:%04x (%s) is a model part the driver does not know", p.Device, p.Name)
		case d.RxQueues != p.RxQueues || d.TxQueues != p.TxQueues:
			t.Errorf("8086:%04x: the driver configures %d RX/%d TX queues, the model has %d/%d", p.Device, d.RxQueues, d.TxQueues, p.RxQueues, p.TxQueues)
		case d.Name != p.Name:
			t.Errorf("8086:%04x: named %q by the driver, %q by the model", p.Device, d.Name, p.Name)
		case d.PTPClockHz != p.PTPClockHz:
			t.Errorf("8086:%04x: PTP reference clock %d Hz for the driver, %d for the model", p.Device, d.PTPClockHz, p.PTPClockHz)
		}
	}
}
