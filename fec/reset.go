package fec

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// ResetPort implements nic.Resetter as Linux's fec_enet_timeout_work does
// after a TX timeout (fec_restart): the MAC is stopped and reset (a graceful
// stop that does not complete, as on a hung transmitter, is not an error:
// Linux's fec_stop only warns), the rings start over with their buffers back
// in their pools, and the MAC starts again at the link's speed. It must not
// run while a queue is polled or sent on (the dataplane parks them).
func (p *Port) ResetPort(reason string) error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if p.closed {
		return fmt.Errorf("fec: %s: reset after %s: %w", p.name, reason, nic.ErrClosed)
	}
	p.stats.collect(p) // the reset clears the MIB: keep what it counted
	_ = p.stopMAC()    // ECR.RESET whether or not the graceful stop completed
	if ecrBits(p.r32(regECR))&ecrRESET != 0 {
		return fmt.Errorf("fec: %s: reset after %s: ECR.RESET did not clear: %w", p.name, reason, nic.ErrTimeout)
	}
	p.start()
	p.stats.rebase(p)
	return nil
}
