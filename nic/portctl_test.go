package nic_test

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// TestPortCtl: an open port's LockOpen holds the lock; MarkClosed closes once;
// a closed port's LockOpen leaves the lock free and names the port.
func TestPortCtl(t *testing.T) {
	c := &nic.PortCtl{Prefix: "igb: 0000:01:00.0"}
	if err := c.LockOpen(); err != nil {
		t.Fatalf("open port: %v", err)
	}
	if c.TryLock() {
		t.Fatal("LockOpen on an open port left the lock free")
	}
	c.Unlock()
	if c.IsClosed() {
		t.Fatal("closed before MarkClosed")
	}
	if !c.MarkClosed() {
		t.Fatal("first MarkClosed reported the port already closed")
	}
	if c.MarkClosed() {
		t.Fatal("second MarkClosed closed the port again")
	}
	if !c.IsClosed() {
		t.Fatal("not closed after MarkClosed")
	}
	err := c.LockOpen()
	if !errors.Is(err, nic.ErrClosed) || err.Error() != "igb: 0000:01:00.0: "+nic.ErrClosed.Error() {
		t.Fatalf("closed port: %v, want ErrClosed named for the port", err)
	}
	if !c.TryLock() {
		t.Fatal("LockOpen on a closed port kept the lock")
	}
	c.Unlock()
	err = c.LockOpenFor("reset after tx timeout")
	if !errors.Is(err, nic.ErrClosed) || err.Error() != "igb: 0000:01:00.0: reset after tx timeout: "+nic.ErrClosed.Error() {
		t.Fatalf("LockOpenFor on a closed port: %v, want the operation named", err)
	}
	if !c.TryLock() {
		t.Fatal("LockOpenFor on a closed port kept the lock")
	}
	c.Unlock()
}
