package dataplane

import (
	"github.com/xnic-dev/xnic/nic"
)

// Ports whose device is gone (nic.HealthChecker: registers read all ones,
// Linux igb's "PCIe link lost"). The link monitor asks every port each tick
// (100 ms); a port that fails stops for good: its poll goroutines park until
// the engine stops (asleep, not spinning), its error is kept for the stats
// and the run's summary, and every other port runs on. So a removal is
// reported within one tick plus the time a poller takes to park (the idle
// timeout).

// checkHealth stops the ports whose device is gone.
func (e *Engine) checkHealth() {
	for _, p := range e.ports {
		hc, ok := p.p.(nic.HealthChecker)
		if !ok || p.gone.Load() != nil {
			continue
		}
		if err := hc.Health(); err != nil {
			e.retire(p, err)
		}
	}
}

// retire parks port p's pollers until the engine stops and records why.
func (e *Engine) retire(p *port, err error) {
	p.gone.Store(&err)
	never := make(chan struct{}) // closed by nobody: the pollers wait for e.done
	p.resume.Store(&never)
	p.adjusting.Store(true)
	for _, pl := range p.pollers {
		wakeIRQ(pl.rxq.IRQ())
	}
}

// goneErr is why the port stopped, or nil.
func (p *port) goneErr() error {
	if e := p.gone.Load(); e != nil {
		return *e
	}
	return nil
}
