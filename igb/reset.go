package igb

import (
	"fmt"
)

// ResetPort implements nic.Resetter as Linux's igb_reset_task does after a
// "Detected Tx Unit Hang" (igb_reinit_locked: igb_down, igb_up): the device is
// reset (CTRL.RST, reset above) and set up again as it was, with the same
// rings, pools, interrupt vectors and filters; the rings start over, every
// buffer they held back in its pool (frames in flight are lost). The
// registers software programmed are read before the reset and written back
// after it (filters, RSS, interrupt routing and moderation, queue controls,
// RCTL and TCTL), the PHY renegotiates as at Open. It must not run while a
// queue is polled or sent on: the dataplane parks them.
func (p *Port) ResetPort(reason string) error {
	if p.ctl.IsClosed() {
		return p.ctl.ErrClosedFor("reset after " + reason)
	}
	saved := p.saveConfig()
	// The receiver first, as igb_down does: with RCTL.EN clear the MAC takes
	// no frame and MPC does not count (82576 datasheet 8.19.x, "does not
	// increment if receives are not enabled"), so the statistics read next
	// are final: the reset clears them. Frames the link partner sends from
	// here until RCTL is written back are counted by no register.
	p.w32(regRCTL, saved.rctl&^uint32(rctlEN))
	p.collectStats()
	// The device first: CTRL.RST stops both DMA engines, so nothing fetches
	// or writes a descriptor while the rings start over (igb_down disables
	// the queues and resets before igb_clean_all_rx_rings).
	resetErr := p.reset()
	p.stats.Collect(len(hwCounters)+len(p.rx), func([]uint64) { clear(p.rqdpcSeen) }) // CTRL.RST cleared RQDPC
	for _, q := range p.tx {
		q.dropInflight()
	}
	for _, q := range p.rx {
		q.dropPosted(resetErr == nil)
	}
	if resetErr != nil {
		return fmt.Errorf("igb: %s: reset after %s: %w", p.name, reason, resetErr)
	}
	if err := p.setupLink(); err != nil {
		return fmt.Errorf("igb: %s: reset after %s: %w", p.name, reason, err)
	}
	saved.restore(p)
	for i, q := range p.rx {
		srr := saved.srrctl[i]
		if err := p.enableRing("RX", rxBlock(q.idx), q.Ring, q.N, func() { p.w32(rxBlock(q.idx)+qSRRCTL, srr) }, saved.rxdctl[i]|uint32(dctlEnable)); err != nil {
			return fmt.Errorf("igb: %s: reset after %s: RX queue %d: %w", p.name, reason, q.idx, err)
		}
		q.refill()
	}
	for i, q := range p.tx {
		if err := p.enableRing("TX", txBlock(q.idx), q.Ring, q.N, nil, saved.txdctl[i]|uint32(dctlEnable)); err != nil {
			return fmt.Errorf("igb: %s: reset after %s: TX queue %d: %w", p.name, reason, q.idx, err)
		}
	}
	p.setupPTP()
	p.w32(regRCTL, saved.rctl)
	p.w32(regTCTL, saved.tctl)
	p.r32(regSTATUS) // flush posted writes
	return nil
}

// savedConfig is what software programmed, read back before a reset.
type savedConfig struct {
	rctl, tctl, rxcsum, mrqc, gpie, eiac, eiam, ivarMisc uint32
	mta                                                  [128]uint32
	reta                                                 [retaEntries / 4]uint32
	rssrk                                                [rssKeyLen / 4]uint32
	ral0, rah0                                           uint32
	ivar                                                 [8]uint32
	eitr                                                 []uint32
	srrctl, rxdctl, txdctl                               []uint32
}

func (p *Port) saveConfig() *savedConfig {
	s := &savedConfig{rctl: p.r32(regRCTL), tctl: p.r32(regTCTL), rxcsum: p.r32(regRXCSUM), mrqc: p.r32(regMRQC),
		gpie: p.r32(regGPIE), eiac: p.r32(regEIAC), eiam: p.r32(regEIAM), ivarMisc: p.r32(regIVAR_MISC),
		ral0: p.r32(regRAL0), rah0: p.r32(regRAH0)}
	for i := range s.mta {
		s.mta[i] = p.r32(regMTA + reg(4*i))
	}
	for i := range s.reta {
		s.reta[i] = p.r32(regRETA + reg(4*i))
	}
	for i := range s.rssrk {
		s.rssrk[i] = p.r32(regRSSRK + reg(4*i))
	}
	for i := range s.ivar {
		s.ivar[i] = p.r32(regIVAR0 + reg(4*i))
	}
	for i := range p.irqs {
		s.eitr = append(s.eitr, p.r32(regEITR(i)))
	}
	for _, q := range p.rx {
		s.srrctl = append(s.srrctl, p.r32(rxBlock(q.idx)+qSRRCTL))
		s.rxdctl = append(s.rxdctl, p.r32(rxBlock(q.idx)+qDCTL))
	}
	for _, q := range p.tx {
		s.txdctl = append(s.txdctl, p.r32(txBlock(q.idx)+qDCTL))
	}
	return s
}

// restore writes back the filters, RSS and interrupt routing (not RCTL and
// TCTL: the caller enables the receiver and transmitter last).
func (s *savedConfig) restore(p *Port) {
	for i, v := range s.mta {
		p.w32(regMTA+reg(4*i), v)
	}
	p.w32(regRAL0, s.ral0)
	p.w32(regRAH0, s.rah0)
	p.w32(regRXCSUM, s.rxcsum)
	for i, v := range s.rssrk {
		p.w32(regRSSRK+reg(4*i), v)
	}
	for i, v := range s.reta {
		p.w32(regRETA+reg(4*i), v)
	}
	p.w32(regMRQC, s.mrqc)
	if p.irqs == nil {
		return
	}
	p.w32(regGPIE, s.gpie)
	for i, v := range s.ivar {
		p.w32(regIVAR0+reg(4*i), v)
	}
	for i, v := range s.eitr {
		p.w32(regEITR(i), v)
	}
	p.w32(regIVAR_MISC, s.ivarMisc)
	p.w32(regEIAC, s.eiac)
	p.w32(regEIAM, s.eiam)
	var mask uint32
	for _, q := range p.rx {
		mask |= q.eims
	}
	p.w32(regEIMS, mask|1<<len(p.rx))
	p.w32(regIMS, uint32(icrLSC))
}

// dropInflight gives every buffer on the TX ring back to its pool and starts
// the ring over (the device is being reset: those frames are lost).
func (q *txQueue) dropInflight() {
	q.meta.release()
	q.Reset(q.meta.refused)
	q.Report(0) // the frames Send reclaimed before the reset are not reported
}

// dropPosted gives every posted RX buffer back to its pool and starts the
// ring over. The frames the device wrote back whole (DD and EOP) and software
// did not take are lost: counted in rx_reset_discards when count (the device
// is stopped, so the count is final).
func (q *rxQueue) dropPosted(count bool) {
	if count {
		q.DiscardWritten(rxWritten)
	}
	q.Reset()
	q.discard = false
}

// rxWritten reports whether the device wrote descriptor d back (DD) and
// whether it holds the end of a frame (EOP).
func rxWritten(d []byte) (done, last bool) {
	st := le32(d[rxwStatErr:])
	return st&rxStatDD != 0, st&rxStatEOP != 0
}
