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
