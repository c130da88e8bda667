package sim

import "runtime"

// Device-level faults (inject.go): the ones every model shows the same way.
//
//   - removal: the function is gone from the bus; every register read
//     completes with all ones (a master abort) and writes are dropped; the
//     models start no DMA once it is on (Removed), so no access of theirs
//     faults (one already under way when the device went completes);
//   - irq-lost: an MSI-X message the device sends never arrives;
//   - irq-storm: every enabled vector fires continuously;
//   - link-down and phy-dead: the PHY loses its partner, or stops answering.
//
// The model's own faults (tx-hang, rx-stall, bus-error, desc-error) are the
// model's to apply where its datasheet says they show; it asks the injector.

// SetInjector hands the device the model's fault injector; phy (nil if the
// model has none here) takes the link and PHY faults. Call it before Start.
func (d *Device) SetInjector(in *Injector, phy *PHY) {
	d.inj.Store(in)
	in.SetHooks(FaultHooks{
		Start: func(k FaultKind) { d.faultStart(k, phy) },
		End:   func(k FaultKind) { d.faultEnd(k, phy) },
	})
}

// Injector is the device's fault injector, or nil.
func (d *Device) Injector() *Injector { return d.inj.Load() }

// Removed reports whether the device was surprise-removed.
func (d *Device) Removed() bool { return d.inj.Load().On(FaultRemoval) }

func (d *Device) faultStart(k FaultKind, phy *PHY) {
	switch k {
	case FaultIRQStorm:
		go d.storm()
	case FaultLinkDown:
		if phy != nil {
			phy.SetConnected(false)
		}
	case FaultPHYDead:
		if phy != nil {
			phy.SetDead(true)
		}
	}
}

func (d *Device) faultEnd(k FaultKind, phy *PHY) {
	switch k {
	case FaultLinkDown:
		if phy != nil {
			phy.SetConnected(true)
		}
	case FaultPHYDead:
		if phy != nil {
			phy.SetDead(false)
		}
	}
}

// storm fires every enabled vector, as fast as this goroutine runs (yielding
// between rounds), until the storm ends or the device closes.
func (d *Device) storm() {
	in := d.inj.Load()
	for in.On(FaultIRQStorm) && !d.closed.Load() {
		if p := d.irqs.Load(); p != nil {
			for _, q := range *p {
				q.signal()
			}
		}
		runtime.Gosched()
	}
}

// irqLost reports (and counts) an interrupt the injector loses.
func (d *Device) irqLost() bool {
	in := d.inj.Load()
	if in == nil || !(in.On(FaultIRQLost) || in.Take(FaultIRQLost)) {
		return false
	}
	d.lostInjected.Add(1)
	return true
}

// LostInjected counts interrupts the injector lost.
func (d *Device) LostInjected() uint64 { return d.lostInjected.Load() }
