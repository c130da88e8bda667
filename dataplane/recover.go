package dataplane

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// TX hang detection and port resets, once for every driver (the drivers give
// the reset: nic.Resetter). Like Linux's igb_clean_tx_irq ("Detected Tx Unit
// Hang"), stmmac's and fec's netdev watchdogs: a TX queue with frames on its
// ring whose completions have not moved for TxTimeout is hung. The link
// monitor looks every tick (100 ms), so a hang is found between TxTimeout and
// TxTimeout plus a tick after the last completion. It counts tx_timeouts,
// parks the port's queues, resets the port (ResetPort: the rings start over,
// their buffers back in their pools), counts resets and the frames that were
// on the TX rings and never left (recovery_lost), and lets the queues go. A
// port without nic.Resetter is only counted and reported.

// DefaultTxTimeout is Config.TxTimeout's default: one second, as igb's hang
// check (tx_timeout_factor * HZ).
const DefaultTxTimeout = time.Second

// monitorTick is how often the link monitor runs.
const monitorTick = 100 * time.Millisecond

// checkTxHangs finds hung TX queues and resets their ports.
func (e *Engine) checkTxHangs() {
	limit := int((e.txTimeout + monitorTick - 1) / monitorTick)
	for _, p := range e.ports {
		if p.gone.Load() != nil {
			continue
		}
		hung := -1
		for i, t := range p.txqs {
			t.mu.Lock()
			t.reclaim()
			switch {
			case t.outstanding <= 0 || t.completed != t.seen:
				t.stalled = 0
			default:
				t.stalled++
			}
			t.seen = t.completed
			if t.stalled >= limit && hung < 0 {
				hung = i
			}
			t.mu.Unlock()
		}
		if hung >= 0 {
			p.txTimeouts.Add(1)
			e.resetPort(p, fmt.Sprintf("TX queue %d hung: no completion for %v", hung, e.txTimeout))
		}
	}
}

// resetPort resets port p with its queues parked, when its driver can.
func (e *Engine) resetPort(p *port, reason string) {
	r, ok := p.p.(nic.Resetter)
	if !ok {
		p.lastEvent.Store(&reason)
		return
	}
	var err error
	var lost int
	start := time.Now()
	defer func() { p.resetTime.Add(int64(time.Since(start))) }()
	e.withParked(p, "a reset", func() {
		for _, t := range p.txqs {
			lost += max(t.outstanding, 0)
		}
		err = r.ResetPort(reason)
	}, func() bool { return err == nil })
	if err != nil {
		e.fail(fmt.Errorf("dataplane: port %s: reset after %s: %w", p.p.Name(), reason, err))
		return
	}
	p.resets.Add(1)
	p.recoveryLost.Add(uint64(lost))
	msg := "reset: " + reason
	p.lastEvent.Store(&msg)
}
