package dwmac

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Health implements nic.HealthChecker: MAC_Version (SNPSVER, USERVER, the
// upper half reserved) reads all ones only when the device is gone.
func (p *Port) Health() error {
	if p.r32(regMACVersion) == 0xFFFFFFFF {
		return fmt.Errorf("dwmac %s: MAC_Version reads 0xFFFFFFFF, the device is gone (PCIe link lost or powered off): %w", p.name, nic.ErrNoDevice)
	}
	return nil
}

// LinkProblem implements nic.LinkProblemReporter: why the last Link found
// no link, when the PHY could not be read (a PHY that does not answer MDIO)
// or the EQOS TX clock cannot serve the link (txclock.go).
func (p *Port) LinkProblem() error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.lastLinkE == nil && p.txClockProblem() != nil {
		return p.txClockProblem()
	}
	if p.lastLinkE == nil {
		return nil
	}
	return fmt.Errorf("dwmac %s: %w", p.name, p.lastLinkE)
}
