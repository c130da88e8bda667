package vfiouser

import "time"

// Message-only DMA. A DMA_MAP without a descriptor (QEMU's guest RAM not in a
// shared memfd) is given to the model as a mirror (sim.Memory.MapMessages):
// each View of it fetches the bytes with DMA_READ, and what the device wrote
// goes back with DMA_WRITE at sim.Memory.WriteBack, which the session calls
// before it signals any interrupt eventfd (a driver that takes the interrupt
// then finds the descriptors and frames written, as PCIe ordering gives it:
// the MSI write does not pass the data writes) and every flushEvery while such
// ranges are mapped (for a driver that polls its rings). Each access is a
// round trip to the client: slow, for tests and bring-up.
//
// A client that holds a lock while it waits for a register read, which its
// own DMA_READ service needs (QEMU), can leave a device access of the model
// waiting: Session.call gives such a request up after clientWaitLimit, the
// model logs the access as a fault, and the register read is answered.

// flushEvery is how often the device's writes to message-only memory are sent
// when no interrupt sends them first.
const flushEvery = time.Millisecond

// flushLoop runs on its own goroutine until stop is closed: it writes the
// device's writes back every flushEvery while message-only ranges are mapped.
func (s *Session) flushLoop(stop <-chan struct{}) {
	defer close(s.flushDone)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.writeBack()
		}
	}
}

// writeBack sends the device's writes to message-only memory, if there is any
// (without the model's lock when the model has viewed none of it).
func (s *Session) writeBack() {
	if s.dma.msg.Load() == 0 || !s.dev.Memory().Watched() {
		return
	}
	if err := s.dev.Memory().WriteBack(); err != nil {
		s.logf("vfiouser: write-back of message-only memory: %v", err)
	}
}
