package vfiouser

import (
	"encoding/binary"
	"sync"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
	"golang.org/x/sys/unix"
)

// Interrupts. The model raises numbered vectors on its sim.Device (Signal); the
// server enables as many model vectors as the client has eventfds for (INTx and
// MSI: one, every model interrupt goes to vector 0 as the models do without
// MSI-X mode; MSI-X: up to the highest sub-index with an eventfd), and one
// forwarder goroutine per model vector waits on it and writes the eventfd of the
// active index. At most one of INTx, MSI and MSI-X is active, as with the
// kernel's vfio-pci. INTx is automasked: after a signal the line stays masked
// until the client unmasks it (SET_IRQS ACTION_UNMASK), which, as a level
// interrupt would, fires again if the model signalled meanwhile.

type irqVec struct {
	fd      int  // eventfd, or -1
	masked  bool // ACTION_MASK (or INTx automask)
	pending bool // a signal arrived while masked or without an eventfd
}

// irqState is the session's interrupt configuration. mu guards everything.
type irqState struct {
	dev          *sim.Device // immutable
	stats        *Stats      // immutable
	beforeSignal func()      // immutable once the session starts: runs before a signal is delivered

	mu      sync.Mutex
	vecs    [NumIRQIdx][]irqVec
	active  int // IRQIntx, IRQMSI, IRQMSIX, or -1
	enabled int // model vectors enabled, forwarded by workers
	workers sync.WaitGroup
	closed  bool
	one     [8]byte // the eventfd increment, 1 in host order
}

func newIRQState(dev *sim.Device, msixVectors int, stats *Stats) *irqState {
	q := &irqState{dev: dev, stats: stats, active: -1}
	q.vecs[IRQIntx] = make([]irqVec, 1)
	q.vecs[IRQMSI] = make([]irqVec, 1)
	q.vecs[IRQMSIX] = make([]irqVec, msixVectors)
	q.vecs[IRQErr] = make([]irqVec, 1) // AER error and device request
	q.vecs[IRQReq] = make([]irqVec, 1) // notifications: kept, never signalled
	for i := range q.vecs {
		for j := range q.vecs[i] {
			q.vecs[i][j].fd = -1
		}
	}
	binary.LittleEndian.PutUint64(q.one[:], 1)
	return q
}

// info is DEVICE_GET_IRQ_INFO's flags and count for an index. ERR and REQ
// have one eventfd each, as the kernel's vfio-pci gives a PCIe function; the
// server keeps them and never signals them: a model has no AER errors and is
// never asked to be unplugged.
func (q *irqState) info(idx int) (flags uint32, count int) {
	switch idx {
	case IRQIntx:
		return IRQInfoEventfd | IRQInfoMaskable | IRQInfoAutomasked, 1
	case IRQMSI, IRQMSIX:
		return IRQInfoEventfd | IRQInfoNoResize, len(q.vecs[idx])
	case IRQErr, IRQReq:
		return IRQInfoEventfd, 1
	}
	return 0, 0
}

// set applies one SET_IRQS. It owns fds (closes those it does not keep).
func (q *irqState) set(s IRQSet, fds []int) error {
	kept, err := q.apply(s, fds)
	if !kept {
		closeFds(fds)
	}
	return err
}

// apply checks and applies s; kept reports that the eventfds were taken.
func (q *irqState) apply(s IRQSet, fds []int) (kept bool, err error) {
	if s.Index >= NumIRQIdx {
		return false, fail(unix.EINVAL, "SET_IRQS index %d: the device has %d", s.Index, NumIRQIdx)
	}
	idx := int(s.Index)
	data, action := s.Flags&irqSetDataMask, s.Flags&irqSetActionMask
	if data != IRQSetDataEventfd && len(fds) > 0 {
		return false, fail(unix.EINVAL, "SET_IRQS with %d descriptors but no DATA_EVENTFD", len(fds))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, fail(unix.ENODEV, "SET_IRQS after the session ended")
	}
	if data == IRQSetDataNone && action == IRQSetActionTrigger && s.Count == 0 {
		q.disableLocked(idx)
		return false, nil
	}
	if n := len(q.vecs[idx]); uint64(s.Start)+uint64(s.Count) > uint64(n) || s.Count == 0 {
		return false, fail(unix.EINVAL, "SET_IRQS index %d sub-indexes [%d, +%d): it has %d", idx, s.Start, s.Count, n)
	}
	switch {
	case idx == IRQErr || idx == IRQReq:
		if data != IRQSetDataEventfd || action != IRQSetActionTrigger || len(fds) > 1 {
			return false, fail(unix.EINVAL, "SET_IRQS index %d (a notification) takes one eventfd with DATA_EVENTFD|ACTION_TRIGGER", idx)
		}
		q.assignLocked(idx, 0, 1, fds)
		return true, nil
	case data == IRQSetDataEventfd && action != IRQSetActionTrigger:
		return false, fail(unix.ENOTSUP, "SET_IRQS index %d: eventfds for mask/unmask events are not supported", idx)
	case data == IRQSetDataEventfd:
		if len(fds) != 0 && len(fds) != int(s.Count) {
			return false, fail(unix.EINVAL, "SET_IRQS index %d: %d eventfds for count %d", idx, len(fds), s.Count)
		}
		if len(fds) > 0 && q.active >= 0 && q.active != idx {
			return false, fail(unix.EINVAL, "SET_IRQS index %d while index %d is active: disable it first", idx, q.active)
		}
		q.assignLocked(idx, s.Start, s.Count, fds)
		q.activeLocked(idx)
		return true, nil
	}
	for i := uint32(0); i < s.Count; i++ {
		if data != IRQSetDataBool || s.Bools[i] != 0 {
			q.actLocked(idx, int(s.Start+i), action)
		}
	}
	return false, nil
}

// assignLocked gives sub-indexes [start, start+count) of idx the eventfds fds
// (none: de-assigned), closing the ones they had.
func (q *irqState) assignLocked(idx int, start, count uint32, fds []int) {
	for i := uint32(0); i < count; i++ {
		v := &q.vecs[idx][start+i]
		if v.fd >= 0 {
			unix.Close(v.fd)
		}
		v.fd = -1
		if len(fds) > 0 {
			v.fd = fds[i]
		}
	}
}

// actLocked applies a client's trigger, mask or unmask to sub-index v of idx.
// An unmask delivers a signal held meanwhile.
func (q *irqState) actLocked(idx, v int, action uint32) {
	vec := &q.vecs[idx][v]
	switch action {
	case IRQSetActionTrigger:
		if idx == q.active {
			q.fireLocked(idx, v)
		}
	case IRQSetActionMask:
		vec.masked = true
	case IRQSetActionUnmask:
		if !vec.masked {
			return
		}
		vec.masked = false
		if vec.pending && idx == q.active && (idx != IRQIntx || !q.intxDisabled()) {
			q.fireLocked(idx, v)
		}
	}
}

// disableLocked drops every eventfd of idx and its masks.
func (q *irqState) disableLocked(idx int) {
	for i := range q.vecs[idx] {
		v := &q.vecs[idx][i]
		if v.fd >= 0 {
			unix.Close(v.fd)
		}
		*v = irqVec{fd: -1}
	}
	if q.active == idx {
		q.active = -1
		q.reconfigureLocked(0)
	}
}

// activeLocked makes idx active if it has an eventfd (inactive otherwise) and
// enables the model vectors it needs.
func (q *irqState) activeLocked(idx int) {
	n := 0
	for i, v := range q.vecs[idx] {
		if v.fd >= 0 {
			n = i + 1
		}
	}
	if n == 0 {
		if q.active == idx {
			q.active = -1
			q.reconfigureLocked(0)
		}
		return
	}
	q.active = idx
	if idx != IRQMSIX {
		n = 1
	}
	q.reconfigureLocked(n)
}

// reconfigureLocked enables n model vectors and starts their forwarders (the
// old ones end when DisableIRQs closes their vectors).
func (q *irqState) reconfigureLocked(n int) {
	if n == q.enabled {
		return
	}
	_ = q.dev.DisableIRQs()
	q.enabled = 0
	if n == 0 {
		return
	}
	irqs, err := q.dev.EnableMSIX(n)
	if err != nil {
		return // the model is closed: its interrupts go nowhere
	}
	q.enabled = len(irqs)
	for v, irq := range irqs {
		q.workers.Add(1)
		go q.forward(v, irq)
	}
}

// forward runs on its own goroutine: it waits on model vector v and delivers
// each signal until the vector is torn down.
func (q *irqState) forward(v int, irq nic.IRQ) {
	defer q.workers.Done()
	for {
		ok, err := irq.Wait(-1)
		if err != nil {
			return
		}
		if ok {
			if q.beforeSignal != nil {
				q.beforeSignal() // the data before the interrupt
			}
			q.deliver(v)
		}
	}
}

func (q *irqState) deliver(v int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.active < 0 || v >= len(q.vecs[q.active]) {
		q.stats.IRQsPending.Add(1)
		return
	}
	vec := &q.vecs[q.active][v]
	if vec.masked || vec.fd < 0 || (q.active == IRQIntx && q.intxDisabled()) {
		vec.pending = true
		q.stats.IRQsPending.Add(1)
		return
	}
	q.fireLocked(q.active, v)
}

// intxDisabled reports the command register's Interrupt Disable bit (PCI 3.0,
// 6.2.2: the function must not assert INTx while it is set).
func (q *irqState) intxDisabled() bool {
	cmd, err := q.dev.ReadConfig(sim.PCICommand, 2)
	return err != nil || uint16(cmd)&sim.PCICommandINTxDisable != 0
}

// commandWritten runs after a write to the command register: clearing
// Interrupt Disable delivers an INTx the disable held back.
func (q *irqState) commandWritten() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.active != IRQIntx || q.intxDisabled() {
		return
	}
	if v := &q.vecs[IRQIntx][0]; v.pending && !v.masked {
		q.fireLocked(IRQIntx, 0)
	}
}

// fireLocked writes the eventfd of idx's sub-index v (or leaves it pending).
func (q *irqState) fireLocked(idx, v int) {
	vec := &q.vecs[idx][v]
	if vec.fd < 0 {
		vec.pending = true
		return
	}
	vec.pending = false
	if _, err := unix.Write(vec.fd, q.one[:]); err == nil {
		q.stats.IRQsSent.Add(1)
	}
	if idx == IRQIntx {
		vec.masked = true // automasked until the client unmasks
	}
}

// pendingBit reports whether MSI-X vector v has a signal held back.
func (q *irqState) pendingBit(v int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return v < len(q.vecs[IRQMSIX]) && q.vecs[IRQMSIX][v].pending
}

// close drops every eventfd, tears the model's vectors down and waits for the
// forwarders to end.
func (q *irqState) close() {
	q.mu.Lock()
	q.closed = true
	for idx := range q.vecs {
		q.disableLocked(idx)
	}
	q.active = -1
	q.reconfigureLocked(0)
	q.mu.Unlock()
	q.workers.Wait()
}
