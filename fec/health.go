package fec

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// Health implements nic.HealthChecker: ECR has reserved bits that read zero,
// so all ones means the block is gone (its clock gated or power domain off).
func (p *Port) Health() error {
	if p.r32(regECR) == 0xFFFFFFFF {
		return fmt.Errorf("fec %s: ECR reads 0xFFFFFFFF, the ENET is gone (clock gated or powered off): %w", p.name, nic.ErrNoDevice)
	}
	return nil
}

// LinkProblem implements nic.LinkProblemReporter: why the last Link found
// no link, when the PHY could not be read (a PHY that does not answer MDIO).
func (p *Port) LinkProblem() error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.linkErr == nil {
		return nil
	}
	return fmt.Errorf("fec %s: %w", p.name, p.linkErr)
}
