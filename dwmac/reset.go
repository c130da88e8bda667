package dwmac

// ResetPort implements nic.Resetter as stmmac_tx_err does for each channel
// after a TX timeout or error: the channel's TX DMA stopped, its in-flight
// buffers back to their pools (counted in tx_errors), descriptors cleared,
// the list address rewritten, restarted; the RX rings start over the same
// way (fatal.go's recover). It must not run while a queue is polled or sent
// on: the dataplane parks them.
func (p *Port) ResetPort(reason string) error {
	if err := p.ctl.LockOpenFor("reset after " + reason); err != nil {
		return err
	}
	defer p.ctl.Unlock()
	for _, q := range p.tx {
		q.fatal.seen = p.fatal[q.idx].gen.Load()
		q.recover()
	}
	for _, q := range p.rx {
		q.fatal.seen = p.fatal[q.idx].gen.Load()
		q.recover()
	}
	return nil
}
