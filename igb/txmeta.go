package igb

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Per-frame TX requests (dma.Buf.TxFlags; nic.TxMetaQueue), as Linux igb
// carries out an skb's CHECKSUM_PARTIAL, SKBTX_HW_TSTAMP and skb->tstamp
// (igb_main.c igb_tx_csum, igb_tx_ctxtdesc, igb_xmit_frame_ring; igb_ptp.c
// igb_ptp_tx_work).
//
// Checksum: a context descriptor (desc.go) ahead of the data descriptor tells
// the engine where the L4 header starts (MACLEN + IPLEN) and what it is (L4T
// UDP or TCP, which places the field 6 or 16 bytes in); the data descriptor's
// POPTS.TXSM asks for the sum, IDX names the context slot. The engine sums
// from MACLEN+IPLEN to the end of the frame, the field included, and stores
// the complement there: CHECKSUM_PARTIAL, the sender having put the
// pseudo-header's sum in the field. So the hardware does exactly the requests
// whose CsumOffset is 16 or 6 and whose CsumStart splits into a MACLEN of 14
// to 127 and an IPLEN of 20 to 511 (I210 datasheet 7.2.2.2.1-2).
//
// Contexts: the queue has two context slots (82576 datasheet 7.2.2.2, I210
// 7.2.2.2.7: IDX bit 4); UDP uses slot 0, TCP slot 1, and a context equal to
// what its slot holds is not sent again (Linux sends one per frame; a run of
// frames of one flow shape then costs one descriptor each, not two). On a
// queue set up for launch time every frame gets its own context, as the I210
// requires there (7.2.2.2.7 note: IDX is ignored and each timed frame needs a
// context ahead of it); one with no launch time of its own is given the clock's
// present value, so it leaves at once.
//
// Timestamps: the port has one TXSTMPL/H latch (TSYNCTXCTL.VALID, held until
// TXSTMPH is read), so at most one frame asks for a timestamp at a time, port
// wide (Port.txStampBusy); another frame that asks while one is in flight is
// sent without, completes with OK false and counts in tx_hwtstamp_skipped, as
// Linux igb_xmit_frame_ring does. Reclaim pushes the completion into the
// queue's nic.StampRing when the frame's DD shows, waiting (at later Reclaims)
// for VALID up to txStampTimeout. Only the I210/I211 clock format is driven
// (ptp.go): other MACs do not offer timestamps.
//
// Launch time (I210 queues 0 and 1 with Config.LaunchTime): the context's
// LaunchTime field holds the launch time's fraction of a second in 32 ns units,
// which the MAC compares with SYSTIML only (I210 datasheet 7.2.2.2.3): a time
// up to 0.5 s ahead is in the future, anything else is expired and leaves at
// once. CheckTxMeta therefore refuses launch times 0.5 s or more ahead of the
// clock; earlier ones are sent at the clock's present value.

// txStampTimeout is how long Reclaim waits for the latch after the frame's DD
// before completing it with OK false (counted in tx_hwtstamp_timeouts). Linux
// waits IGB_PTP_TX_TIMEOUT, 15 s; the MAC latches the time as the frame
// leaves, so a second is already far beyond it.
const txStampTimeout = time.Second

// launchAhead is the furthest ahead a launch time may lie (I210 7.2.2.2.3).
const launchAhead = nsPerSec / 2

// txMetaState is a TX queue's request state; like the queue it belongs to one
// goroutine, except the counters, which Stats reads atomically.
type txMetaState struct {
	caps  nic.TxMetaCaps // immutable after setupTx
	timed bool           // the queue holds frames until their launch time; immutable

	ctx   [2]txCtx // what each context slot holds, as we last loaded it
	ctxOK [2]bool  // the slot was loaded since the queue was enabled

	// asked[i] says what the frame starting at descriptor i asked: stampNone,
	// stampLatched (its descriptor has TSTAMP) or stampSkipped. inflight
	// counts the entries not stampNone. waitSince is when Reclaim first found
	// the latched frame done but the latch not yet valid (zero: not waiting).
	asked     []uint8
	inflight  int
	waitSince time.Time

	stamps nic.StampRing
	req    txReq // Send's scratch for the frame at hand (prepare, putReq)

	skipped  atomic.Uint64 // tx_hwtstamp_skipped
	timeouts atomic.Uint64 // tx_hwtstamp_timeouts
	dropped  atomic.Uint64 // tx_hwtstamp_dropped: stamps.Dropped, mirrored for Stats

	port *Port
}

const (
	stampNone uint8 = iota
	stampLatched
	stampSkipped
)

func (m *txMetaState) init(p *Port, q, n int) {
	m.port = p
	m.asked = make([]uint8, n)
	m.caps = nic.TxMetaChecksum
	if hasI210Clock(p.model.MAC) {
		m.caps |= nic.TxMetaTimestamp
	}
	if p.cfg.LaunchTime&(1<<q) != 0 {
		m.timed = true
		m.caps |= nic.TxMetaLaunchTime
	}
}

// txReq is what Send writes for one frame beyond a plain data descriptor.
type txReq struct {
	ctx    int    // 1: a context descriptor goes ahead of the data
	slot   int    // the context slot
	c      txCtx  // what the context loads
	olinfo uint32 // TXSM and IDX for the data descriptor
	stamp  bool   // the frame asks for a timestamp
}

var _ nic.TxMetaQueue = (*txQueue)(nil)

// TxMeta is what this queue carries out: checksums always, timestamps on the
// I210/I211, launch times on a queue Config.LaunchTime set up.
func (q *txQueue) TxMeta() nic.TxMetaCaps { return q.meta.caps }

// TxStamps moves completed timestamp requests into out (nic.TxMetaQueue).
func (q *txQueue) TxStamps(out []nic.TxStamp) int { return q.meta.stamps.Pop(out) }

// CheckTxMeta reports why the queue cannot do what b asks, or nil.
func (q *txQueue) CheckTxMeta(b *dma.Buf) error {
	if b == nil {
		return fmt.Errorf("%w: no buffer", nic.ErrTxMeta)
	}
	if q.stopped {
		return fmt.Errorf("%w: igb: %s: %w", nic.ErrTxMeta, q.port.name, nic.ErrClosed)
	}
	clock := int64(-1)
	var r txReq
	return q.prepare(b, &r, &clock)
}

// prepare checks b's requests against the hardware and fills r. clock is the
// device clock in ns once read (-1 before), read at most once per Send burst,
// and only for launch times.
func (q *txQueue) prepare(b *dma.Buf, r *txReq, clock *int64) error {
	*r = txReq{}
	if err := nic.CheckTxRequest(q.meta.caps, b); err != nil {
		return err
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 {
		if err := q.checksumCtx(b, r); err != nil {
			return err
		}
	}
	if q.meta.timed {
		if err := q.launchCtx(b, r, clock); err != nil {
			return err
		}
	} else if r.olinfo != 0 && q.meta.ctxOK[r.slot] && q.meta.ctx[r.slot] == r.c {
		r.ctx = 0 // the slot holds this context already
	}
	r.stamp = b.TxFlags&dma.TxFlagTimestamp != 0
	return nil
}

// checksumCtx is the context and olinfo of b's checksum request, or why the
// engine cannot do it.
func (q *txQueue) checksumCtx(b *dma.Buf, r *txReq) error {
	var tucmd uint32
	switch b.CsumOffset {
	case 16:
		tucmd, r.slot = tucmdL4TCP, 1
	case 6:
		tucmd, r.slot = 0, 0
	default:
		return fmt.Errorf("%w: checksum offset %d: the igb engine stores the sum only at a TCP (16) or UDP (6) checksum field (context L4T)", nic.ErrTxMeta, b.CsumOffset)
	}
	start := int(b.CsumStart)
	if start < minMACLen+minIPLen || start > maxMACLen+maxIPLen {
		return fmt.Errorf("%w: checksum start %d: the context encodes it as MACLEN (%d-%d) + IPLEN (%d-%d), so %d to %d",
			nic.ErrTxMeta, start, minMACLen, maxMACLen, minIPLen, maxIPLen, minMACLen+minIPLen, maxMACLen+maxIPLen)
	}
	if b.Off < 0 || b.Off+b.Len > len(b.Mem) {
		return fmt.Errorf("%w: frame [%d, +%d) outside its %d-byte buffer", nic.ErrTxMeta, b.Off, b.Len, len(b.Mem))
	}
	f := b.Data()
	mac := minMACLen
	if et := uint16(f[12])<<8 | uint16(f[13]); (et == 0x8100 || et == 0x88a8) && start >= 18+minIPLen {
		mac = 18 // the tag is the software's: MACLEN counts it (I210 Table 7-30)
	}
	mac = max(mac, start-maxIPLen) // IPLEN at most 511: the rest goes into MACLEN
	ip := start - mac
	if et := uint16(f[mac-2])<<8 | uint16(f[mac-1]); et == 0x0800 {
		tucmd |= tucmdIPv4
	}
	r.c = txCtx{macIPLens: uint32(mac)<<txcMACLenShift | uint32(ip), tucmd: tucmd}
	r.ctx, r.olinfo = 1, txoTXSM|uint32(r.slot)<<txoIdxShift
	return nil
}

// launchCtx fills the LaunchTime of b's context on a timed queue: b's launch
// time, or the clock's present value for a frame without one or with one
// already past.
func (q *txQueue) launchCtx(b *dma.Buf, r *txReq, clock *int64) error {
	if *clock < 0 {
		*clock = q.port.clockNow()
	}
	at := *clock
	if b.TxFlags&dma.TxFlagLaunchTime != 0 {
		lt := int64(b.LaunchTime)
		if b.LaunchTime > 1<<62 || lt-at >= launchAhead {
			return fmt.Errorf("%w: launch time %d ns is %d ns ahead of the clock: the I210 compares only the fraction of a second, so at most 0.5 s ahead (datasheet 7.2.2.2.3)",
				nic.ErrTxMeta, b.LaunchTime, lt-at)
		}
		at = max(at, lt)
	}
	r.c.launch = launchField(at)
	r.ctx, r.slot, r.olinfo = 1, 0, r.olinfo&^(1<<txoIdxShift) // IDX is ignored here (7.2.2.2.7)
	return nil
}

// launchField is the context's LaunchTime for a clock value: its fraction of
// a second in 32 ns units, rounded up so the frame never leaves early.
func launchField(ns int64) uint32 {
	v := (ns%nsPerSec + launchTimeUnitNS - 1) / launchTimeUnitNS
	if v == nsPerSec/launchTimeUnitNS {
		v = 0 // the start of the next second
	}
	return uint32(v) & txcLaunchMask
}

// putReq writes the descriptors of a frame with requests from q.Tail on (its
// context, if any, then its data descriptors) and moves q.Tail past them.
func (q *txQueue) putReq(b *dma.Buf, iova uint64, segs int, r *txReq) {
	first := q.Tail
	if r.ctx != 0 {
		off := q.Tail * descSize
		putTxCtx(q.Ring.CPU[off:off+descSize], r.c, r.slot)
		q.meta.ctx[r.slot], q.meta.ctxOK[r.slot] = r.c, true
		if q.Tail++; q.Tail == q.N {
			q.Tail = 0
		}
	}
	var cmd uint32
	if r.stamp {
		kind := stampSkipped
		if q.port.txStampBusy.CompareAndSwap(false, true) {
			kind, cmd = stampLatched, txCmdTSTAMP
		} else {
			q.meta.skipped.Add(1)
		}
		q.meta.asked[first] = kind
		q.meta.inflight++
	}
	if segs == 1 {
		off := q.Tail * descSize
		putTxMeta(q.Ring.CPU[off:off+descSize], iova, b.Len, cmd, r.olinfo)
		if q.Tail++; q.Tail == q.N {
			q.Tail = 0
		}
		return
	}
	q.splitTx(iova, b.Len, cmd, r.olinfo)
}

// refused completes a frame Send took but did not send (its memory or owner
// was refused): a timestamp it asked for is not taken.
func (m *txMetaState) refused(b *dma.Buf) {
	if b != nil && b.TxFlags&dma.TxFlagTimestamp != 0 {
		m.push(nic.TxStamp{Addr: b.DataIOVA()})
	}
}

func (m *txMetaState) push(s nic.TxStamp) {
	m.stamps.Push(s)
	m.dropped.Store(m.stamps.Dropped)
}

// complete finishes the timestamp request of the done frame b starting at
// descriptor i. It reports false when the latch is not valid yet (the frame
// stays in flight; Reclaim looks again later).
func (m *txMetaState) complete(i int, b *dma.Buf) bool {
	s := nic.TxStamp{Addr: b.DataIOVA()}
	if m.asked[i] == stampLatched {
		p := m.port
		if p.r32(regTSYNCTXCTL)&tsyncTxValid != 0 {
			ns := p.r32(regTXSTMPL)
			sec := p.r32(regTXSTMPH) // reading it frees the latch
			s.Time, s.OK = uint64(sec)*nsPerSec+uint64(ns), true
		} else {
			now := time.Now()
			if m.waitSince.IsZero() {
				m.waitSince = now
			}
			if now.Sub(m.waitSince) < txStampTimeout {
				return false
			}
			m.timeouts.Add(1)
			p.r32(regTXSTMPH) // clear a latch that may still come
		}
		m.waitSince = time.Time{}
		p.txStampBusy.Store(false)
	}
	m.asked[i] = stampNone
	m.inflight--
	m.push(s)
	return true
}

// release gives up the port's latch if a frame still in flight holds it (the
// queue is being freed).
func (m *txMetaState) release() {
	for i, k := range m.asked {
		if k == stampLatched {
			m.port.txStampBusy.Store(false)
		}
		m.asked[i] = stampNone
	}
	m.inflight = 0
}

// clockNow reads the I210 clock (SYSTIMR latches SYSTIML/H), serialised with
// the PHC's own register sequences.
func (p *Port) clockNow() int64 {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	return phc{p}.read()
}
