package dataplane

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// Following a link whose speed or duplex changed. A MAC like igb's follows
// the PHY by itself, and dwmac's Link reprograms MAC_Configuration in place;
// the FEC has to be restarted (Linux fec_enet_adjust_link: fec_restart), its
// rings starting over, which must not race a poll or a send. For such ports
// (nic.LinkAdjuster) the link monitor parks the port's poll goroutines
// between two polls, takes every TX queue of the port (so nothing else sends
// on them: other ports' redirects, CPU workers, XSKs, the stack), restarts
// the MAC, and lets everything go again. Frames the rings held are lost, as
// they are in Linux; the buffers go back to their pools.

// parkWait bounds how long the monitor waits for the pollers to park: a
// poller asleep on a model's interrupt wakes within the idle timeout.
const parkWait = time.Second

// followLinks restarts the ports whose MAC no longer matches their link.
func (e *Engine) followLinks() {
	for _, p := range e.ports {
		if a, ok := p.p.(nic.LinkAdjuster); ok && p.gone.Load() == nil && a.LinkMismatch() {
			e.adjustLink(p, a)
		}
	}
}

// adjustLink runs a.AdjustLink with port p's queues parked.
func (e *Engine) adjustLink(p *port, a nic.LinkAdjuster) {
	var restarted bool
	e.withParked(p, "a link change", func() {
		var err error
		_, restarted, err = a.AdjustLink()
		if err != nil {
			e.fail(fmt.Errorf("dataplane: port %s: following the link: %w", p.p.Name(), err))
		}
	}, func() bool { return restarted })
	if restarted {
		p.linkRestarts.Add(1)
	}
}

// withParked runs fn with port p's poll goroutines parked between two polls
// and every TX queue of the port held (reclaimed first), so nothing polls or
// sends on the port meanwhile. When restarted reports true after fn, the
// rings started over: their buffers are back in their pools.
func (e *Engine) withParked(p *port, why string, fn func(), restarted func() bool) {
	resume := make(chan struct{})
	p.resume.Store(&resume)
	p.adjusting.Store(true)
	defer func() {
		p.adjusting.Store(false)
		close(resume)
	}()
	for _, pl := range p.pollers {
		wakeIRQ(pl.rxq.IRQ())
	}
	deadline := time.NewTimer(e.idle + parkWait)
	defer deadline.Stop()
	for n := 0; n < len(p.pollers); n++ {
		select {
		case <-p.parked:
		case <-e.done:
			return
		case <-deadline.C:
			e.fail(fmt.Errorf("dataplane: port %s: its poll goroutines did not pause for %s within %v", p.p.Name(), why, e.idle+parkWait))
			return
		}
	}
	for _, t := range p.txqs {
		t.mu.Lock()
		t.reclaim()
	}
	fn()
	done := restarted()
	for _, t := range p.txqs {
		if done {
			t.outstanding = 0 // the rings started over: their buffers are back in their pools
			t.stalled = 0
		}
		t.mu.Unlock()
	}
}

// park holds the poll goroutine while its port's MAC restarts: it hands its
// own TX queue's completions back, says it is parked, and waits.
func (pl *poller) park() {
	pl.reclaimOwn()
	resume := *pl.port.resume.Load()
	pl.port.parked <- struct{}{}
	select {
	case <-resume:
	case <-pl.e.done:
	}
}
