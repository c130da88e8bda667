package igbsim

import (
	"bytes"
	"time"
)

// Transmit path (82576 datasheet 7.2). A write to TDT of an enabled queue (with
// TCTL.EN) fetches the descriptors it hands over at once (a descriptor changed
// after that is a fault) and sends the frames in [TDH, TDT) on the device
// side's time (Model.txRun, a few frames per step): descriptors are read and
// checked under mu, the frames go to the wire
// with mu released (txMu keeps transmits in order), then descriptors with RS get
// DD written back, statistics count and TDH advances. A frame whose EOP
// descriptor is not yet before TDT waits for a later tail write.
//
// Ownership: descriptors in [TDH, TDT) and their buffers belong to the device
// until TDH moves past them (and DD is set where RS asked for it). The wire sees
// a frame only during the send call; nothing keeps it.
//
// Refused descriptors (legacy format, bad DTYP, length 0, frame over 9728
// bytes, missing IFCS, wrong PAYLEN, TSO or VLAN insertion, buffers outside the
// mapped memory) are faults: the frame is not sent, its descriptors are still
// consumed and written back so the ring keeps moving.

// txFrame is one frame gathered from the ring.
type txFrame struct {
	data  []byte // the frame: a view of device memory or a slice of txArena
	desc  []byte // device view of its first descriptor (nil if unreadable)
	first uint32 // index of its first descriptor
	ndesc uint32 // descriptors it used
	send  bool   // false: refused (faulted) or a lone context descriptor
	bad   bool   // refused
	stamp bool   // latch its transmit time (MAC.TSTAMP)
}

const txBatchMax = 64

// txPBBytes is the transmit packet buffer: how far the MAC may run ahead of
// the wire (I210 TXPBSIZE after reset 0x04000014: 20 KB for TxPB0; the model
// uses it for every family).
const txPBBytes = 20 << 10

var zeroPad [minFrameNoFCS]byte

// txRun is one step of the transmit engine (the device side's txT timer,
// armed by a TDT write or TCTL.EN): sim.ModelBase.TxStep over the queues.
func (m *Model) txRun() {
	m.txMu.Lock()
	defer m.txMu.Unlock()
	m.TxStep(&m.txPend, m.txT, txBatchMax, txStepMax, m.transmitQueue)
}

// txStepMax bounds the frames one asynchronous transmit step sends per queue.
const txStepMax = 8

// transmitQueue sends queue q's frames in batches of up to budget; on an
// asynchronous device side it stops after one batch and reports whether the
// queue has more.
func (m *Model) transmitQueue(q, budget int) (more bool) {
	for {
		m.mu.Lock()
		x := &m.tx[q]
		if x.dctl&dctlEnable == 0 || m.tctl&tctlEN == 0 || m.ctrl&ctrlGIOMasterDi != 0 || x.len == 0 || m.txStoppedLocked() {
			m.wire.TxIdle()
			m.mu.Unlock()
			return false
		}
		if !m.mem.DMAEnabled() {
			m.faults.Add("tx", regName(txBlockHigh+uint32(q)*blockHighLn+qTail), uint64(q),
				"TX queue %d has descriptors to send while bus mastering is off", q)
			m.wire.TxIdle()
			m.mu.Unlock()
			return false
		}
		gen := m.gen
		base, size := x.base(), x.len/descSize
		head, tail := x.head, x.tail
		psp := m.tctl&tctlPSP != 0
		sink := m.loopSinkLocked(m.pcsSinkLocked(m.wire.Sink())) // loopback.go, pcs.go
		batch, arena := m.txBatch[:0], m.txArena[:0]
		// Translate the whole ring once per pass (an IOTLB hit for every
		// descriptor after the first), when all of it is mapped; otherwise
		// each descriptor is translated, and faulted, on its own.
		ring := m.ringView("tx-desc", base, size)
		x.hold = 0
		var wireWait time.Duration
		for head != tail && len(batch) < budget {
			if wireWait = m.wire.TxWait(); wireWait > 0 {
				break // the TX packet buffer is full: the wire has to carry some first
			}
			batch = append(batch, txFrame{})
			fr := &batch[len(batch)-1]
			next, complete := m.gatherLocked(q, x, fr, ring, base, size, head, tail, &arena, psp)
			if !complete {
				batch = batch[:len(batch)-1]
				break
			}
			if fr.send {
				m.wire.Depart(len(fr.data))
			}
			head = next
		}
		if x.hold > 0 {
			m.holdLocked(q, x.hold) // the frame at head waits for its launch time
		}
		if len(batch) == 0 && wireWait > 0 {
			m.txPend |= 1 << q
			m.txT.ArmReal(wireWait)
		} else if len(batch) == 0 {
			m.wire.TxIdle() // drained, or waiting for the driver or a launch time
		}
		m.mu.Unlock()
		if len(batch) == 0 {
			m.txBatch, m.txArena = batch, arena
			return false
		}

		if sink != nil {
			for i := range batch {
				if batch[i].send {
					sink(batch[i].data)
				}
			}
		}

		m.mu.Lock()
		if gen != m.gen || x.dctl&dctlEnable == 0 {
			// Reset or queue disabled while the frames were on the wire: the ring
			// is no longer ours to write back.
			m.wire.TxIdle()
			m.mu.Unlock()
			return false
		}
		raise := false
		for i := range batch {
			fr := &batch[i]
			if fr.send && fr.stamp {
				m.latchTxLocked() // it has left: before its DD
			}
			// Statistics read the frame (a view of the buffer): before the
			// write-back, after which the buffer is the driver's again.
			switch {
			case fr.send:
				wire := len(fr.data) + 4
				m.incStat(stGPTC)
				m.incStat(stTPT)
				m.addStat64(stGOTCL, wire)
				m.addStat64(stTOTL, wire)
				m.incStat(stPTC64 + sizeBucket(wire))
				if fr.data[0]&1 != 0 {
					if fr.data[0]&fr.data[1]&fr.data[2]&fr.data[3]&fr.data[4]&fr.data[5] == 0xFF {
						m.incStat(stBPTC)
					} else {
						m.incStat(stMPTC)
					}
				}
				m.cnt.TxFrames++
				m.cnt.TxBytes += uint64(len(fr.data))
			case fr.bad:
				m.cnt.TxDropped++
			}
			idx := fr.first
			for k := uint32(0); k < fr.ndesc; k++ {
				d, err := fr.desc, error(nil)
				if k > 0 || d == nil {
					d, err = m.descView(ring, "tx-writeback", base, idx)
				}
				if err == nil && le.Uint32(d[txdCmd:])&txCmdRS != 0 {
					storeStatus(d, txwStatus, txStatDD)
					raise = true
				}
				if idx++; idx >= size {
					idx %= size
				}
			}
		}
		x.head = head
		if raise {
			m.raiseQueueLocked(q, true)
		}
		more := head != x.tail
		held := x.hold > 0
		if held {
			m.wire.TxIdle() // the wire idles until the launch time
		}
		m.txBatch, m.txArena = batch[:0], arena[:0]
		m.mu.Unlock()
		if held {
			return false // holdLocked has armed the timer
		}
		if more && wireWait > 0 {
			m.mu.Lock()
			m.txPend |= 1 << q
			m.txT.ArmReal(wireWait) // the rest when the wire has room
			m.mu.Unlock()
			return false
		}
		if more && !m.sched.Synchronous() {
			return true // the next step goes on
		}
	}
}

// ringView is the device's view of a whole descriptor ring of size
// descriptors at base, or nil when part of it is not mapped (then descView
// translates, and faults, descriptor by descriptor, as before). Kept for one
// TDT pass or one InjectBurst, never longer: sim.Memory has no unmap signal.
func (m *Model) ringView(op string, base uint64, size uint32) []byte {
	n := int(size) * descSize
	if m.mem.Check(base, n) != nil {
		return nil
	}
	v, err := m.mem.View(op, base, n)
	if err != nil {
		return nil
	}
	return v
}

// descView is descriptor idx of the ring at base: a slice of ring when the
// ring was translated whole (and idx is inside it), else its own translation (a
// fault named op when unmapped).
func (m *Model) descView(ring []byte, op string, base uint64, idx uint32) ([]byte, error) {
	if o := int(idx) * descSize; o+descSize <= len(ring) {
		return ring[o : o+descSize : o+descSize], nil
	}
	return m.mem.View(op, base+uint64(idx)*descSize, descSize)
}

// gatherLocked reads the frame starting at descriptor head into *fr (zeroed by
// the caller). It reports complete=false when the frame's EOP descriptor is not
// before tail yet. ring is the ring's view from ringView, or nil.
//
// On a queue that launches on time, a frame whose launch time has not come is
// left where it is: complete is false and x.hold says how long it waits.
func (m *Model) gatherLocked(q int, x *txQueue, fr *txFrame, ring []byte, base uint64, size, head, tail uint32, arena *[]byte, psp bool) (next uint32, complete bool) {
	fr.first = head
	idx := head
	total := 0
	ok := true
	var paylen uint32
	var first []byte
	var off offload
	start := len(*arena)
	gathered := false
	if w := m.launchHoldLocked(q, x, ring, base, head); w > 0 {
		x.hold = time.Duration(w)
		return head, false
	}
	for {
		if idx == tail {
			return head, false
		}
		addr := base + uint64(idx)*descSize
		d, err := m.descView(ring, "tx-desc", base, idx)
		fr.ndesc++
		if idx++; idx >= size { // (idx+1) % size without a division
			idx %= size
		}
		if err != nil { // the ring itself is gone: consume one descriptor
			fr.bad = true
			return idx, true
		}
		if fr.ndesc == 1 {
			fr.desc = d
		}
		m.checkFetchedLocked(x, (idx+size-1)%size, d, addr)
		cmd := le.Uint32(d[txdCmd:])
		if cmd&txCmdDEXT == 0 {
			m.faults.Add("tx-desc", "", addr, "legacy TX descriptor (DEXT clear, cmd 0x%08x): only advanced descriptors are modelled", cmd)
			ok = false
		} else if dtyp := cmd & txDTYPMask; dtyp == txDTYPCtxt {
			if fr.ndesc == 1 { // a context descriptor ahead of a frame: loaded and consumed
				m.loadContextLocked(q, x, d, addr)
				return idx, true
			}
			m.faults.Add("tx-desc", "", addr, "context descriptor inside a frame")
			ok = false
		} else if dtyp != txDTYPData {
			m.faults.Add("tx-desc", "", addr, "TX descriptor type DTYP=%d: want 3 (data) or 2 (context)", dtyp>>20)
			ok = false
		}
		ln := int(cmd & txLenMask)
		if ok && ln == 0 {
			m.faults.Add("tx-desc", "", addr, "TX data descriptor with length 0")
			ok = false
		}
		if fr.ndesc == 1 && ok {
			paylen = le.Uint32(d[txdOlinfo:]) >> txPaylenShift
			switch {
			case cmd&txCmdTSE != 0:
				m.faults.Add("tx-desc", "", addr, "TCP segmentation (TSE) is not modelled")
				ok = false
			case cmd&txCmdVLE != 0:
				m.faults.Add("tx-desc", "", addr, "VLAN insertion (VLE) is not modelled")
				ok = false
			case cmd&txCmdIFCS == 0:
				m.faults.Add("tx-desc", "", addr, "TX frame without IFCS: it would leave without an FCS and be dropped by the receiver")
				ok = false
			default:
				ok = m.dataOffloadLocked(q, x, cmd, le.Uint32(d[txdOlinfo:]), addr, &off)
			}
		}
		if ok {
			total += ln
			if total > maxTxFrame {
				m.faults.Add("tx-desc", "", addr, "TX frame of more than %d bytes", maxTxFrame)
				ok = false
			}
		}
		if ok {
			v, err := m.mem.View("tx-buffer", le.Uint64(d[txdAddr:]), ln)
			switch {
			case err != nil:
				ok = false
			case first == nil && !gathered:
				first = v
			default:
				if !gathered {
					*arena = append(*arena, first...)
					gathered = true
				}
				*arena = append(*arena, v...)
			}
		}
		if cmd&txCmdEOP != 0 || fr.ndesc >= size {
			break
		}
	}
	if ok && paylen != uint32(total) {
		m.faults.Add("tx-desc", "", base+uint64(fr.first)*descSize, "PAYLEN %d in the first descriptor differs from the frame length %d", paylen, total)
		ok = false
	}
	if !ok {
		fr.bad = true
		return idx, true
	}
	data := first
	if gathered {
		data = (*arena)[start:]
	}
	if data = m.applyOffloadLocked(&off, data, gathered, arena, base+uint64(fr.first)*descSize); data == nil {
		fr.bad = true
		return idx, true
	}
	fr.stamp = off.tstamp
	if psp && len(data) < minFrameNoFCS {
		s := len(*arena)
		*arena = append(*arena, data...)
		*arena = append(*arena, zeroPad[:minFrameNoFCS-len(data)]...)
		data = (*arena)[s:]
	}
	fr.data = data
	fr.send = true
	return idx, true
}

// fetchTxLocked is the descriptor fetch a TDT write starts: the device reads
// descriptors [from, to) at once (the 82576 prefetches on a tail update), so
// their content is fixed then; gatherLocked checks that it still is.
func (m *Model) fetchTxLocked(x *txQueue, from, to uint32) {
	m.fetchLocked(x.fetched, x.fetchedOK, x.base(), x.len, from, to)
}

// fetchLocked copies descriptors [from, to) of the ring at base (len bytes)
// from the device's view into fetched and marks them in ok.
func (m *Model) fetchLocked(fetched []byte, ok []bool, base uint64, len32, from, to uint32) {
	size := uint32(len(ok))
	if size == 0 || len32/descSize != size || !m.mem.DMAEnabled() {
		return
	}
	ring := m.ringView("fetch", base, size)
	if ring == nil {
		return // faulted per descriptor when used
	}
	for i := from; i != to; {
		o := int(i) * descSize
		copy(fetched[o:o+descSize], ring[o:o+descSize])
		ok[i] = true
		if i++; i == size {
			i = 0
		}
	}
}

// changedLocked reports (and forgets) whether descriptor idx differs from its
// copy in fetched.
func changedLocked(fetched []byte, ok []bool, idx uint32, d []byte) bool {
	if int(idx) >= len(ok) || !ok[idx] {
		return false
	}
	ok[idx] = false
	o := int(idx) * descSize
	return !bytes.Equal(fetched[o:o+descSize], d[:descSize])
}

// checkFetchedLocked reports descriptor idx changed since the TDT write that
// handed it over: the driver wrote it after moving the tail.
func (m *Model) checkFetchedLocked(x *txQueue, idx uint32, d []byte, addr uint64) {
	if changedLocked(x.fetched, x.fetchedOK, idx, d) {
		m.faults.Add("tx-desc", "TDT", addr, "TX descriptor %d changed after the TDT write handed it to the device (the device fetched it then): write descriptors before moving the tail", idx)
	}
}

// launchHoldLocked is how long (ns) the frame at head of TX queue q waits for
// its launch time: 0 unless the queue launches on time, a context was just
// consumed and the descriptor at head is the data it times.
func (m *Model) launchHoldLocked(q int, x *txQueue, ring []byte, base uint64, head uint32) int64 {
	if !x.ahead || !m.timedLocked(q) {
		return 0
	}
	d, err := m.descView(ring, "tx-desc", base, head)
	if err != nil || le.Uint32(d[txdCmd:])&txDTYPMask != txDTYPData {
		return 0 // gatherLocked faults or handles it
	}
	return m.launchWaitLocked(x.aheadLT)
}

// holdLocked arranges for TX queue q to be looked at again when its held frame
// is due, d from now: exactly then when it is near, else at the device's idle
// polls (which Settle does not wait for: the frame waits for the clock, not for
// the device).
func (m *Model) holdLocked(q int, d time.Duration) {
	m.txPend |= 1 << q
	if d <= time.Millisecond {
		m.txT.ArmAfter(d)
	} else {
		m.txT.ArmIdle()
	}
}
