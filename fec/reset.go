package fec

import (
	"fmt"
)

// ResetPort implements nic.Resetter as Linux's fec_enet_timeout_work does
// after a TX timeout (fec_restart): the MAC is stopped and reset (a graceful
// stop that does not complete, as on a hung transmitter, is not an error:
// Linux's fec_stop only warns), the rings start over with their buffers back
// in their pools, and the MAC starts again at the link's speed. It must not
// run while a queue is polled or sent on (the dataplane parks them).
func (p *Port) ResetPort(reason string) error {
	if err := p.ctl.LockOpenFor("reset after " + reason); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	_ = p.halt() // a graceful stop that does not complete is no error here
	if err := p.reset(); err != nil {
		return fmt.Errorf("fec: %s: reset after %s: %w", p.name, reason, err)
	}
	p.w32(regEIR, 0xFFFFFFFF)
	p.stats.rebase(p)
	p.start()
	return nil
}

// halt stops the MAC before a restart: the transmitter gracefully, then the
// receiver at once. With ETHEREN clear the MAC takes no frame and its FIFO is
// reset (the reference manuals' ECR.ETHEREN), so the MIB read next is final
// (ECR.RESET clears it; the caller rebases after the reset, before the MAC
// counts again). What the link partner sends from here until the restart is
// counted by no register. It reports a graceful stop that did not complete.
func (p *Port) halt() error {
	err := p.gracefulStop()
	p.w32(regECR, p.r32(regECR)&^uint32(ecrETHEREN))
	p.stats.collect(p)
	return err
}
