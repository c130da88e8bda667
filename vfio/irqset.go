package vfio

import (
	"errors"
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// IRQInfo is what VFIO_DEVICE_GET_IRQ_INFO says of one interrupt index.
type IRQInfo struct {
	Index      IRQIndex
	Count      int  // vectors; 0 when the device has none of this kind
	Eventfd    bool // can signal an eventfd
	Maskable   bool
	Automasked bool // level-triggered: masked after each firing until unmasked
	NoResize   bool // vectors are enabled as a set
}

// IRQInfo asks the kernel about interrupt index i.
func (d *Device) IRQInfo(i IRQIndex) (IRQInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.irqInfo(i)
}

func (d *Device) irqInfo(i IRQIndex) (IRQInfo, error) {
	if d.closed {
		return IRQInfo{}, fmt.Errorf("vfio: %s: IRQ info: %w", d.addr, nic.ErrClosed)
	}
	if uint32(i) >= d.devInfo.NumIRQs {
		return IRQInfo{Index: i}, nil
	}
	b := newIRQInfoBuf(i)
	if _, err := ioctl(d.fd, reqDeviceGetIRQInfo, b); err != nil {
		return IRQInfo{}, fmt.Errorf("vfio: %s: VFIO_DEVICE_GET_IRQ_INFO(%v): %w", d.addr, i, err)
	}
	ii, err := parseIRQInfo(b)
	if err != nil {
		return IRQInfo{}, err
	}
	return IRQInfo{
		Index: i, Count: int(ii.Count),
		Eventfd:    ii.Flags&irqInfoEventfd != 0,
		Maskable:   ii.Flags&irqInfoMaskable != 0,
		Automasked: ii.Flags&irqInfoAutomasked != 0,
		NoResize:   ii.Flags&irqInfoNoresize != 0,
	}, nil
}

// EnableMSIX implements nic.Device: it tries MSI-X with min(n, available)
// vectors, then MSI with one, then INTx with one, and returns the vectors in
// order. Interrupts already enabled are torn down first.
func (d *Device) EnableMSIX(n int) ([]nic.IRQ, error) {
	return d.enable(n, IRQMSIX, IRQMSI, IRQIntx)
}

// EnableIRQs sets up interrupts of one kind only: min(n, available) MSI-X
// vectors, or one MSI or INTx vector. Interrupts already enabled are torn down
// first.
func (d *Device) EnableIRQs(kind IRQIndex, n int) ([]nic.IRQ, error) {
	if kind != IRQMSIX && kind != IRQMSI && kind != IRQIntx {
		return nil, fmt.Errorf("vfio: %s: %v is not a device interrupt kind: %w", d.addr, kind, ErrOutOfRange)
	}
	return d.enable(n, kind)
}

func (d *Device) enable(n int, kinds ...IRQIndex) ([]nic.IRQ, error) {
	if n <= 0 {
		return nil, fmt.Errorf("vfio: %s: %d interrupt vectors requested: %w", d.addr, n, ErrOutOfRange)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("vfio: %s: enable interrupts: %w", d.addr, nic.ErrClosed)
	}
	if len(d.irqs) > 0 {
		if err := d.disableIRQsLocked(); err != nil {
			return nil, err
		}
	}
	var tried []error
	for _, kind := range kinds {
		info, err := d.irqInfo(kind)
		if err != nil {
			tried = append(tried, err)
			continue
		}
		if info.Count == 0 || !info.Eventfd {
			tried = append(tried, fmt.Errorf("%v: not offered by the device", kind))
			continue
		}
		want := 1
		if kind == IRQMSIX {
			want = min(n, info.Count)
		}
		irqs, err := d.setupVectors(kind, want, info.Automasked)
		if err != nil {
			tried = append(tried, err)
			continue
		}
		d.irqs, d.irqIndex = irqs, kind
		out := make([]nic.IRQ, len(irqs))
		for i, q := range irqs {
			out[i] = q
		}
		return out, nil
	}
	return nil, fmt.Errorf("vfio: %s: no interrupt could be set up: %w", d.addr, errors.Join(tried...))
}

// setupVectors makes want eventfds and binds them to vectors 0..want-1 of kind.
func (d *Device) setupVectors(kind IRQIndex, want int, automasked bool) ([]*EventIRQ, error) {
	fds := make([]int32, 0, want)
	irqs := make([]*EventIRQ, 0, want)
	fail := func(err error) ([]*EventIRQ, error) {
		for _, q := range irqs {
			q.close()
		}
		return nil, err
	}
	for i := range want {
		fd, err := newEventfd()
		if err != nil {
			return fail(err)
		}
		var unmask func() error
		if automasked {
			unmask = func() error { return d.unmaskIntx() }
		}
		irqs = append(irqs, newEventIRQ(fd, kind, i, unmask))
		fds = append(fds, int32(fd))
	}
	b := irqSetBuf(irqSetDataEventfd|irqSetActionTrigger, kind, 0, uint32(want), fds)
	if _, err := ioctl(d.fd, reqDeviceSetIRQs, b); err != nil {
		return fail(fmt.Errorf("%v with %d vectors: VFIO_DEVICE_SET_IRQS: %w", kind, want, err))
	}
	return irqs, nil
}

// unmaskIntx re-enables the INTx line after it fired (VFIO masks it in the
// kernel's handler, since the device holds the level until the driver acks).
func (d *Device) unmaskIntx() error {
	b := irqSetBuf(irqSetDataNone|irqSetActionUnmask, IRQIntx, 0, 1, nil)
	_, err := ioctl(d.fd, reqDeviceSetIRQs, b)
	return err
}

// TriggerIRQ makes the kernel signal vector v as if the device had raised it
// (VFIO_DEVICE_SET_IRQS with DATA_NONE|ACTION_TRIGGER: loopback, for tests and
// diagnostics).
func (d *Device) TriggerIRQ(v int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v < 0 || v >= len(d.irqs) {
		return fmt.Errorf("vfio: %s: trigger vector %d of %d: %w", d.addr, v, len(d.irqs), ErrOutOfRange)
	}
	b := irqSetBuf(irqSetDataNone|irqSetActionTrigger, d.irqIndex, uint32(v), 1, nil)
	if _, err := ioctl(d.fd, reqDeviceSetIRQs, b); err != nil {
		return fmt.Errorf("vfio: %s: trigger %v vector %d: %w", d.addr, d.irqIndex, v, err)
	}
	return nil
}

// IRQKind is the interrupt mechanism in use, and how many vectors (0: none).
func (d *Device) IRQKind() (IRQIndex, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.irqIndex, len(d.irqs)
}

// DisableIRQs implements nic.Device: it disables the index in use
// (DATA_NONE|ACTION_TRIGGER with count 0) and closes the eventfds.
func (d *Device) DisableIRQs() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	return d.disableIRQsLocked()
}

func (d *Device) disableIRQsLocked() error {
	if len(d.irqs) == 0 {
		return nil
	}
	var errs []error
	b := irqSetBuf(irqSetDataNone|irqSetActionTrigger, d.irqIndex, 0, 0, nil)
	if _, err := ioctl(d.fd, reqDeviceSetIRQs, b); err != nil {
		errs = append(errs, fmt.Errorf("vfio: %s: disable %v: %w", d.addr, d.irqIndex, err))
	}
	for _, q := range d.irqs {
		errs = append(errs, q.close())
	}
	d.irqs = nil
	return errors.Join(errs...)
}
