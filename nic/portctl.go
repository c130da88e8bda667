package nic

import (
	"fmt"
	"sync"
)

// PortCtl is a port's control lock and the closed flag it guards. Every
// driver runs its control register sequences (MDIO, filters, the PTP clock,
// a reset) under the lock and refuses them once Close has run; Close marks
// the port closed once, under the same lock, before it tears anything down.
type PortCtl struct {
	sync.Mutex
	Closed bool   // Close has run; guarded by the Mutex
	Prefix string // names the port in errors ("family: name"); immutable after Open
}

// LockOpen takes the lock and returns nil on an open port; on a closed one it
// releases the lock and returns ErrClosed, wrapped as "Prefix: ...".
func (c *PortCtl) LockOpen() error { return c.LockOpenFor("") }

// LockOpenFor is LockOpen for an operation the error names: "Prefix: what:
// ...".
func (c *PortCtl) LockOpenFor(what string) error {
	c.Lock()
	if c.Closed {
		c.Unlock()
		return c.ErrClosedFor(what)
	}
	return nil
}

// ErrClosed is ErrClosed wrapped as "Prefix: ...".
func (c *PortCtl) ErrClosed() error { return c.ErrClosedFor("") }

// ErrClosedFor is ErrClosed wrapped as "Prefix: what: ..." ("Prefix: ..."
// when what is empty).
func (c *PortCtl) ErrClosedFor(what string) error {
	if what == "" {
		return fmt.Errorf("%s: %w", c.Prefix, ErrClosed)
	}
	return fmt.Errorf("%s: %s: %w", c.Prefix, what, ErrClosed)
}

// IsClosed reports whether Close has run, taking the lock.
func (c *PortCtl) IsClosed() bool {
	c.Lock()
	defer c.Unlock()
	return c.Closed
}

// MarkClosed marks the port closed and reports whether this call did: Close
// tears the port down only then, so a second Close does nothing.
func (c *PortCtl) MarkClosed() bool {
	c.Lock()
	defer c.Unlock()
	if c.Closed {
		return false
	}
	c.Closed = true
	return true
}
