package igbsim

import (
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// IEEE 1588 time sync of the I210 (I210 datasheet 7.8; Linux igb_ptp.c,
// igb_ptp_read_i210, igb_ptp_write_i210, igb_ptp_adjfine_82580,
// igb_ptp_rx_pktstamp). The clock is SYSTIMH seconds and SYSTIML nanoseconds
// (0 to 10^9-1) with the sub-nanosecond residue in SYSTIMR. Every 8 ns period
// it advances 8 ns plus TIMINCA.INCVALUE*2^-32 ns (ISGN: minus). Here it runs
// with the host's clock, scaled by TIMINCA (sim.PHClock).
//
// Reading SYSTIMR latches the whole clock; SYSTIML and SYSTIMH then return the
// latched value. Writing SYSTIML holds the nanoseconds; writing SYSTIMH sets
// the clock to both.
//
// With TSYNCRXCTL.EN and TYPE "all packets", a queue whose SRRCTL.TIMESTAMP is
// set gets each frame's receive time in a 16-byte header before it in the
// buffer (8 reserved bytes, then SYSTIML and SYSTIMH as they were when the
// frame arrived), counted in the write-back length, and TSIP in the status.
//
// With TSYNCTXCTL.EN, a frame whose first data descriptor has MAC.TSTAMP
// latches its transmit time (SYSTIML/H as it leaves) in TXSTMPL/H and sets
// TSYNCTXCTL.VALID, unless VALID is set already: the latch holds one
// timestamp until software reads TXSTMPH (Linux e1000_defines.h
// E1000_TSYNCTXCTL_*, igb_ptp.c igb_ptp_tx_hwtstamp; QEMU igb_core.c does
// the same), and a frame sent meanwhile gets none.
//
// The I350 runs the same way with its clock in the 82580's format, a 40-bit
// count of nanoseconds (ptp_82580.go). The 82576 keeps its clock in another
// (a 64-bit counter of TIMINCA increments): the model does not implement it;
// its time sync registers stay plain storage, and SRRCTL.TIMESTAMP on it is
// a fault.
const (
	regSYSTIML    reg = 0x0B600
	regSYSTIMH    reg = 0x0B604
	regTIMINCA    reg = 0x0B608
	regTSYNCRXCTL reg = 0x0B620
	regSYSTIMR    reg = 0x0B6F8
	regTSYNCTXCTL reg = 0x0B614
	regTXSTMPL    reg = 0x0B618
	regTXSTMPH    reg = 0x0B61C

	tsyncTxValid   uint32 = 1 << 0 // TXSTMPL/H hold a timestamp (read-only)
	tsyncTxEnabled uint32 = 1 << 4

	timincaISGN     uint32 = 1 << 31
	timincaIncValue uint32 = 0x7FFFFFFF

	tsyncRxValid   uint32 = 1 << 0 // a timestamp is latched in RXSTMPL/H (read-only)
	tsyncRxTypeMsk uint32 = 7 << 1
	tsyncRxTypeAll uint32 = 4 << 1 // all packets
	tsyncRxEnabled uint32 = 1 << 4

	srrctlTimestamp uint32 = 1 << 30 // timestamp in the buffer (I210/I350)

	rxStatTSIP = 1 << 15 // timestamp in packet

	tsHdrLen = 16
	nsPerSec = 1_000_000_000
)

// ptpState is the I210 time sync unit; guarded by Model.mu.
type ptpState struct {
	clock    *sim.PHClock
	latch    int64  // value latched by the last SYSTIMR read
	pendL    uint32 // SYSTIML written, waiting for SYSTIMH
	timinca  uint32
	tsyncRx  uint32
	tsyncTx  uint32 // EN and VALID
	txStamp  int64  // the latched TX timestamp, with VALID
	txNext   int64  // a frame's departure time, not yet in TXSTMPL/H
	txTaking bool   // txNext waits for the stamp timer to set VALID
	hasClock bool   // the device is an I210 or I350 (the clock formats modelled)
	fmt40    bool   // the I350: the 82580's 40-bit format (ptp_82580.go)
}

func (p *ptpState) reset(i210, i350 bool) {
	if p.clock == nil {
		p.clock = sim.NewPHClock()
	}
	p.clock.Set(0)
	p.clock.SetRate(0)
	p.latch, p.pendL, p.timinca, p.tsyncRx, p.hasClock, p.fmt40 = 0, 0, 0, 0, i210 || i350, i350
	p.tsyncTx, p.txStamp, p.txNext, p.txTaking = 0, 0, 0, false
}

// rxTimestamping reports whether frames get a timestamp header on a queue
// with SRRCTL srrctl.
func (p *ptpState) rxTimestamping(srrctl uint32) bool {
	return p.hasClock && srrctl&srrctlTimestamp != 0 &&
		p.tsyncRx&tsyncRxEnabled != 0 && p.tsyncRx&tsyncRxTypeMsk == tsyncRxTypeAll
}

// putTimestamp writes the header for a frame arriving now.
func (p *ptpState) putTimestamp(h []byte) {
	ns := p.clock.Now()
	clear(h[:8])
	sec, frac := p.split(ns)
	le.PutUint32(h[8:], frac)
	le.PutUint32(h[12:], sec)
}

// splitNS is SYSTIMH and SYSTIML for a clock value (seconds wrap at 2^32, a
// clock before 0 reads as 0).
func splitNS(ns int64) (sec, frac uint32) {
	if ns < 0 {
		return 0, 0
	}
	return uint32(ns / nsPerSec), uint32(ns % nsPerSec)
}

// readPTPLocked handles the time sync registers the model implements.
func (m *Model) readPTPLocked(off uint32) (uint32, bool) {
	p := &m.ptp
	if !p.hasClock {
		return 0, false
	}
	switch reg(off) {
	case regSYSTIMR:
		p.latch = p.clock.Now()
		return 0, true // sub-nanosecond residue: the model keeps whole ns
	case regSYSTIML:
		_, frac := p.split(p.latch)
		return frac, true
	case regSYSTIMH:
		sec, _ := p.split(p.latch)
		return sec, true
	case regTIMINCA:
		return p.timinca, true
	case regTSYNCRXCTL:
		return p.tsyncRx &^ tsyncRxValid, true // RXSTMPL/H latching is not modelled
	case regTSYNCTXCTL:
		return p.tsyncTx, true
	case regTXSTMPL:
		_, frac := p.split(p.txStamp)
		return frac, true
	case regTXSTMPH:
		sec, _ := p.split(p.txStamp)
		p.tsyncTx &^= tsyncTxValid // reading the high half frees the latch
		return sec, true
	}
	return 0, false
}

// writePTPLocked handles the time sync registers the model implements.
func (m *Model) writePTPLocked(off, val uint32) bool {
	p := &m.ptp
	if !p.hasClock {
		return false
	}
	switch reg(off) {
	case regSYSTIMR:
		return true // residue: whole nanoseconds only
	case regSYSTIML:
		if val >= nsPerSec && !p.fmt40 {
			m.faults.Add("write32", "SYSTIML", uint64(off), "SYSTIML %d: nanoseconds must be below 10^9", val)
			return true
		}
		p.pendL = val
	case regSYSTIMH:
		if p.fmt40 {
			m.writeSYSTIMH82580Locked(off, val)
			return true
		}
		p.clock.Set(int64(val)*nsPerSec + int64(p.pendL))
	case regTIMINCA:
		p.timinca = val
		// INCVALUE*2^-32 ns per 8 ns period is INCVALUE*2^-35 ns per ns.
		r := int64(val&timincaIncValue) << (sim.PHClockRateShift - 35)
		if val&timincaISGN != 0 {
			r = -r
		}
		p.clock.SetRate(r)
	case regTSYNCRXCTL:
		if val&tsyncRxEnabled != 0 && val&tsyncRxTypeMsk != tsyncRxTypeAll {
			m.faults.Add("write32", "TSYNCRXCTL", uint64(off), "TSYNCRXCTL type %d: only all packets (4) is modelled", (val&tsyncRxTypeMsk)>>1)
		}
		p.tsyncRx = val &^ tsyncRxValid
	case regTSYNCTXCTL:
		p.tsyncTx = p.tsyncTx&tsyncTxValid | val&tsyncTxEnabled
	case regTXSTMPL, regTXSTMPH:
		m.faults.Add("write32", regName(off), uint64(off), "write to a read-only TX timestamp register")
	default:
		return false
	}
	return true
}

// Clock is the model's I210 or I350 clock in nanoseconds, as SYSTIMH:SYSTIML
// would read now (before the I350's 40-bit wrap; for tests); ok is false on
// devices whose clock is not modelled.
func (m *Model) Clock() (ns int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ptp.hasClock {
		return 0, false
	}
	return m.ptp.clock.Now(), true
}

// stampOKLocked checks a data descriptor's MAC.TSTAMP at addr: the clock is
// modelled and TX timestamping is on, else a fault.
func (m *Model) stampOKLocked(addr uint64) bool {
	switch {
	case !m.ptp.hasClock:
		m.faults.Add("tx-desc", "", addr, "MAC.TSTAMP on the %s: its clock is not modelled", m.info.name)
	case m.ptp.tsyncTx&tsyncTxEnabled == 0:
		m.faults.Add("tx-desc", "", addr, "MAC.TSTAMP with TSYNCTXCTL.EN clear: no timestamp would be taken")
	default:
		return true
	}
	return false
}

// latchTxLocked takes the transmit timestamp of a frame leaving now, if the
// latch is free. The time is taken now, but TXSTMPL/H show it and VALID sets
// only when the stamp timer runs, a device latency later (after the frame's
// DD write-back, which follows at once): the MAC samples the clock as the
// frame's start of frame delimiter passes the MII and loads the register pair
// after that, on its own time, not the DMA's (I210 datasheet 7.8.3.4, TX
// timestamp; Linux's igb polls TSYNCTXCTL.VALID from a work item,
// igb_ptp_tx_work, rather than reading the registers at DD). A driver that
// reads TXSTMPL/H as soon as DD shows gets the previous frame's time.
func (m *Model) latchTxLocked() {
	p := &m.ptp
	if p.tsyncTx&tsyncTxEnabled == 0 || p.tsyncTx&tsyncTxValid != 0 || p.txTaking {
		return
	}
	p.txNext, p.txTaking = p.clock.Now(), true
	m.stampT.ArmAfter(m.sched.Between(stampLagMin, stampLagMax))
}

// The lag between a timestamped frame's DD write-back and TSYNCTXCTL.VALID.
// The DMA writes DD back once the frame is in the MAC's transmit packet buffer
// (I210 datasheet 7.2.3, descriptor write-back); the frame leaves, and is
// stamped, when the frames ahead of it in that buffer have: up to the time a
// full 20 KB transmit buffer (TXPBSIZE's default) takes at 1 Gb/s.
const (
	stampLagMin = 2 * time.Microsecond
	stampLagMax = 160 * time.Microsecond
)

// stampDone is the stamp timer: the time taken at departure reaches
// TXSTMPL/H and VALID sets (unless a reset or TSYNCTXCTL.EN cleared came
// between).
func (m *Model) stampDone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &m.ptp
	if !p.txTaking {
		return
	}
	p.txTaking = false
	if p.tsyncTx&tsyncTxEnabled != 0 {
		p.txStamp = p.txNext
		p.tsyncTx |= tsyncTxValid
	}
}
