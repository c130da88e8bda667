package nic

import (
	"errors"
	"fmt"
)

// DisableIRQs tears down a port's interrupt vectors at Close
// (Device.DisableIRQs), with the error, if any, saying what failed; nil
// otherwise, which errors.Join drops.
func DisableIRQs(dev Device) error {
	if err := dev.DisableIRQs(); err != nil {
		return fmt.Errorf("disabling interrupts: %w", err)
	}
	return nil
}

// FreeQueues ends a driver's Close once its MAC and DMA are stopped: it frees
// the TX queues first, so that buffers still in flight go back to their pools
// (perhaps RX pools), then the RX queues. Every error is kept, after errs
// (what Close met before); together they are returned as
// "family: name: close: ...", or nil when there were none.
func FreeQueues[T, R any](family, name string, errs []error, tx []T, freeTx func(T) error, rx []R, freeRx func(R) error) error {
	for _, q := range tx {
		if err := freeTx(q); err != nil {
			errs = append(errs, err)
		}
	}
	for _, q := range rx {
		if err := freeRx(q); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %s: close: %w", family, name, err)
	}
	return nil
}
