package igbsim

import "github.com/xnic-dev/xnic/sim"

// Transmit offloads (82576 datasheet 7.2.2.2-7.2.2.3, 7.2.5; I210 datasheet
// 7.2.2.2, 7.2.7.5, 7.8): the context descriptor loads one of the queue's two
// context slots; a data descriptor with POPTS.TXSM has the checksum engine sum
// the frame from MACLEN+IPLEN of its context (IDX) to the end, the field
// included, and store the complement at the field L4T places (6 bytes in for
// UDP, 16 for TCP): the software put the pseudo-header's sum there
// (sim.InsertPartial). The frame in memory is never written: the sum goes
// into the copy on the wire. MAC.TSTAMP latches the transmit time in
// TXSTMPL/H (ptp.go). On an SR queue in Qav mode with launch times (qav.go)
// every frame needs a context right ahead of it, whose LaunchTime it waits
// for.
//
// Faults (the frame is not sent): a context with reserved bits set (IDX 6:5,
// TUCMD 10:4, the command bits), L4T 11b; a context with a LaunchTime on a
// queue that does not launch on time (the hardware would send at once,
// ignoring it); TXSM naming a slot never loaded, or whose MACLEN/IPLEN are
// below the datasheet's minimums (14, 20) or place the field beyond the frame;
// L4T SCTP or IXSM (not modelled); TSTAMP with TSYNCTXCTL.EN clear (no
// timestamp would come) or on a device whose clock is not modelled; a frame
// on a timed queue without a context ahead.

// txContext is one context slot.
type txContext struct {
	valid                bool
	macIPLens, tucmd, lt uint32
}

// offload is what a frame's first data descriptor asks of the engine.
type offload struct {
	csum         bool
	start, field int // sum from start, field at start+field
	tstamp       bool
}

// loadContextLocked decodes the context descriptor d at addr into its slot
// on TX queue q.
func (m *Model) loadContextLocked(q int, x *txQueue, d []byte, addr uint64) {
	mli, lt := le.Uint32(d[ctxMacIPLens:]), le.Uint32(d[ctxLaunch:])
	cmd, idx := le.Uint32(d[ctxTypeTucmd:]), le.Uint32(d[ctxMssIdx:])
	switch {
	case cmd&ctxCmdResvd != 0:
		m.faults.Add("tx-desc", "", addr, "context descriptor with reserved command bits set (0x%08x)", cmd&ctxCmdResvd)
	case cmd&ctxTucmdResvd != 0:
		m.faults.Add("tx-desc", "", addr, "context descriptor with reserved TUCMD bits 10:4 set (0x%08x)", cmd&ctxTucmdResvd)
	case cmd>>ctxL4TShift&ctxL4TMask == 3:
		m.faults.Add("tx-desc", "", addr, "context descriptor with L4T 11b (reserved)")
	case idx&ctxIdxResvd != 0:
		m.faults.Add("tx-desc", "", addr, "context descriptor IDX %d: the queue has 2 context slots (IDX bits 6:5 reserved)", idx>>ctxIdxShift&7)
	case lt&ctxLaunchResvd != 0:
		m.faults.Add("tx-desc", "", addr, "context descriptor with bits 31:25 of the LaunchTime dword set")
	case lt != 0 && !m.timedLocked(q):
		m.faults.Add("tx-desc", "", addr, "context descriptor with LaunchTime %d on TX queue %d, which is not an SR queue with launch time (TQAVCTRL.DataTranTIM, TQAVCC.QueueMode): the frame would leave at once", lt, q)
	default:
		x.ctx[idx>>ctxIdxShift&1] = txContext{valid: true, macIPLens: mli, tucmd: cmd, lt: lt}
		x.ahead, x.aheadLT = true, lt
		return
	}
	x.ahead = false
}

// dataOffloadLocked decodes the offloads the first data descriptor of a frame
// asks for (cmd and olinfo) into o, and reports false (after a fault) when the
// device would refuse or misbehave.
func (m *Model) dataOffloadLocked(q int, x *txQueue, cmd, olinfo uint32, addr uint64, o *offload) bool {
	if m.timedLocked(q) && !x.ahead {
		m.faults.Add("tx-desc", "", addr, "frame on TX queue %d (an SR queue with launch time) without a context descriptor ahead of it (I210 datasheet 7.2.2.2.7)", q)
		return false
	}
	x.ahead = false
	if olinfo&txoIdxResvd != 0 {
		m.faults.Add("tx-desc", "", addr, "data descriptor IDX %d: the queue has 2 context slots", olinfo>>txoIdxShift&7)
		return false
	}
	if olinfo&txoIXSM != 0 {
		m.faults.Add("tx-desc", "", addr, "IPv4 header checksum insertion (POPTS.IXSM) is not modelled")
		return false
	}
	if cmd&txCmdTSTAMP != 0 && !m.stampOKLocked(addr) {
		return false
	}
	o.tstamp = cmd&txCmdTSTAMP != 0
	if olinfo&txoTXSM == 0 {
		return true
	}
	c := x.ctx[olinfo>>txoIdxShift&1]
	mac, ip := int(c.macIPLens>>ctxMACLenShift&ctxMACLenMask), int(c.macIPLens&ctxIPLenMask)
	switch {
	case !c.valid:
		m.faults.Add("tx-desc", "", addr, "TXSM with context slot %d, which no context descriptor loaded since the queue was enabled", olinfo>>txoIdxShift&1)
	case mac < minMACLenOffload || ip < minIPLenOffload:
		m.faults.Add("tx-desc", "", addr, "TXSM with MACLEN %d, IPLEN %d: the datasheet wants at least 14 and 20", mac, ip)
	case c.tucmd>>ctxL4TShift&ctxL4TMask == ctxL4TTCP:
		o.csum, o.start, o.field = true, mac+ip, 16
	case c.tucmd>>ctxL4TShift&ctxL4TMask == ctxL4TUDP:
		o.csum, o.start, o.field = true, mac+ip, 6
	default:
		m.faults.Add("tx-desc", "", addr, "SCTP checksum insertion (L4T 10b) is not modelled")
	}
	return o.csum
}

// applyOffloadLocked puts the checksum into the frame going out: data is
// copied into the arena first unless it already is there (gathered). It
// returns the frame to send, or nil after a fault.
func (m *Model) applyOffloadLocked(o *offload, data []byte, inArena bool, arena *[]byte, addr uint64) []byte {
	if !o.csum {
		return data
	}
	if !inArena {
		s := len(*arena)
		*arena = append(*arena, data...)
		data = (*arena)[s:]
	}
	if err := sim.InsertPartial(data, o.start, o.field); err != nil {
		m.faults.Add("tx-desc", "", addr, "TXSM: the context's checksum field lies outside the frame (%v)", err)
		return nil
	}
	return data
}
