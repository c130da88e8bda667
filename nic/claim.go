package nic

import (
	"errors"
	"fmt"
	"sync"
)

// ErrBusy is wrapped by an Open on a device another open port already drives.
var ErrBusy = errors.New("busy: another port of this process drives the device")

// claims holds the Devices an open port drives: one port per device, as the
// kernel binds one driver to a device. Keys are the Device values (pointers).
var claims sync.Map

// Claim marks dev as driven by the port of driver that is being opened. A
// second Claim before the returned release fails, wrapping ErrBusy, with the
// name of the driver that holds the device. release is idempotent.
func Claim(dev Device, driver string) (release func(), err error) {
	if prev, loaded := claims.LoadOrStore(dev, driver); loaded {
		return nil, fmt.Errorf("%s: %s: %w (a %v port; close it first)", driver, dev.Info().Name, ErrBusy, prev)
	}
	var once sync.Once
	return func() { once.Do(func() { claims.Delete(dev) }) }, nil
}

// OpenClaimed is the body of every driver's Open: it claims dev for driver,
// builds the port with open, and hands the claim's release to the port with
// keep (which the port's Close calls); when open fails the claim is released
// at once, so the device can be opened again.
func OpenClaimed[P any](dev Device, driver string, open func() (P, error), keep func(P, func())) (P, error) {
	release, err := Claim(dev, driver)
	if err != nil {
		var zero P
		return zero, err
	}
	p, err := open()
	if err != nil {
		release()
		return p, err
	}
	keep(p, release)
	return p, nil
}
