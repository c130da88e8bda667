package igb

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Health implements nic.HealthChecker: STATUS reads all ones only when the
// function is gone (Linux igb_rd32 then reports "PCIe link lost" and detaches
// the netdev).
func (p *Port) Health() error {
	if p.r32(regSTATUS) == 0xFFFFFFFF {
		return fmt.Errorf("igb %s: PCIe link lost: STATUS reads 0xFFFFFFFF, the device is gone: %w", p.name, nic.ErrNoDevice)
	}
	return nil
}
