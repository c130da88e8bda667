package dwmacsim

import (
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// DMA channels (databook "DMA channel registers"; stmmac dwmac4_dma.c and
// dwmac4_lib.c for the order a driver programs them).
//
// Ring indices: software writes the tail pointer (the address of the
// descriptor after the last one it handed over); the model alone moves the
// current descriptor pointer (cur), which DMA_CH_Current_App_*Desc reports.
// Following the databook: descriptors from cur up to one before the tail are
// the DMA's; the DMA processes them until cur == tail, then suspends, and a
// tail write that moves the tail away from cur resumes it. It also suspends,
// with TBU or RBU, at a descriptor whose OWN bit is clear, and any tail write
// resumes it then (the write is the "poll demand" that refetches the
// descriptor). The comparison is on addresses: a tail of base + N*16 (what
// stmmac writes at RX init, the ring wholly the device's) never equals cur,
// which wraps from base + (N-1)*16 to base after Ring_Length + 1 descriptors.
// A channel started with cur == tail is suspended at once (the TX init case).

// Suspension states of a ring.
const (
	suspNone uint8 = iota // running: the descriptor at cur may be used
	suspTail              // cur reached the tail pointer
	suspOwn               // the descriptor at cur was not the DMA's (TBU/RBU)
)

// noTail is tailRaw when the tail pointer does not lie in the ring (never
// written): it never equals cur.
const noTail = ^uint32(0)

// ring is one direction of a DMA channel.
type ring struct {
	baseHi, baseLo uint32
	baseSet        bool // low word written since reset
	lenReg         uint32
	lenSet         bool
	tail           uint32 // low 32 bits of the tail address, as written
	tailRaw        uint32 // the tail as a descriptor offset from base, 0..N (N: past the end), or noTail
	tailSet        bool
	cur            uint32 // next descriptor the DMA looks at; written only by the model
	seq            uint32 // counts tail writes (a TX write during a send resumes after it)
	run            bool   // ST / SR set and the process not stopped by an error
	susp           uint8  // suspNone, suspTail or suspOwn
	curBuf         uint64 // last buffer address used (Current_App_*Buffer)
	// enhanced: TX descriptors are the 32-byte enhanced format
	// (DMA_CH_Tx_Control.EDSE, for time-based scheduling): TDES4-7 (launch
	// time) then the normal TDES0-3. Set only while the channel is stopped.
	enhanced bool
	// fetched holds the normal descriptors a tail write handed to the
	// running DMA as it fetched them then (fetchedOK marks which); one that
	// differs when the DMA processes it was written after the tail.
	fetched   []byte
	fetchedOK []bool
}

func (r *ring) n() uint32 { return r.lenReg + 1 }

// ds is the ring's descriptor size in bytes (its stride).
func (r *ring) ds() uint32 {
	if r.enhanced {
		return enhDescSize
	}
	return descSize
}

// advance moves cur past k descriptors, suspending at the tail.
func (r *ring) advance(k uint32) {
	r.cur = (r.cur + k) % r.n()
	if r.cur == r.tailRaw {
		r.susp = suspTail
	}
}

// retail recomputes tailRaw after the base or the length changed.
func (r *ring) retail() {
	r.tailRaw = noTail
	if r.tailSet && r.baseSet && r.lenSet && r.tail >= r.baseLo {
		if d := r.tail - r.baseLo; d%r.ds() == 0 && d/r.ds() <= r.n() {
			r.tailRaw = d / r.ds()
		}
	}
}

// channel is one DMA channel's registers.
type channel struct {
	control, txCtrl, rxCtrl uint32
	intEn, status           uint32
	rxWdt, slot             uint32
	missed                  uint32 // DMA_CH_Miss_Frame_Cnt
	tx, rx                  ring
	wdt                     *time.Timer // RX interrupt watchdog; immutable after New
	wdtArmed                bool
	wdtDeadline             time.Time // when the armed watchdog runs out (coalesce.go)
	mss                     uint32    // TX: the last context descriptor's MSS, 0 before one (tso.go)
}

// pendingLocked is the set of enabled causes that hold the interrupt line:
// NIS with NIE or AIS with AIE.
func (ch *channel) pendingLocked(nie, aie uint32) uint32 {
	var groups uint32
	if ch.intEn&nie != 0 {
		groups |= stNormal
	}
	if ch.intEn&aie != 0 {
		groups |= stAbnormal
	}
	return ch.status & ch.intEn & groups
}

func (m *Model) ringBase(r *ring) uint64 {
	if m.eame() {
		return uint64(r.baseHi)<<32 | uint64(r.baseLo)
	}
	return uint64(r.baseLo)
}

func (m *Model) readChanLocked(c int, r, off uint32) uint32 {
	if c >= m.nch {
		m.Unimplemented("read32", off)
		return 0
	}
	if !m.hasDirLocked("read32", "DMA channel", c, chanDir(r), off) {
		return 0
	}
	ch := &m.ch[c]
	switch r {
	case chControl:
		return ch.control
	case chTxControl:
		return ch.txCtrl
	case chRxControl:
		return ch.rxCtrl
	case chTxBaseHi:
		return ch.tx.baseHi
	case chTxBaseLo:
		return ch.tx.baseLo
	case chRxBaseHi:
		return ch.rx.baseHi
	case chRxBaseLo:
		return ch.rx.baseLo
	case chTxTail:
		return ch.tx.tail
	case chRxTail:
		return ch.rx.tail
	case chTxRingLen:
		return ch.tx.lenReg
	case chRxRingLen:
		return ch.rx.lenReg
	case chIntEn:
		return ch.intEn
	case chRxWdt:
		return ch.rxWdt
	case chSlot:
		return ch.slot
	case chCurTxDesc:
		return ch.tx.baseLo + ch.tx.cur*ch.tx.ds()
	case chCurRxDesc:
		return ch.rx.baseLo + ch.rx.cur*descSize
	case chCurTxBufH:
		return uint32(ch.tx.curBuf >> 32)
	case chCurTxBuf:
		return uint32(ch.tx.curBuf)
	case chCurRxBufH:
		return uint32(ch.rx.curBuf >> 32)
	case chCurRxBuf:
		return uint32(ch.rx.curBuf)
	case chStatus:
		return ch.status
	case chMissFrame:
		v := min(ch.missed, 0x7ff)
		if ch.missed > 0x7ff {
			v |= 1 << 15 // MFCO: counter overflowed
		}
		ch.missed = 0
		return v
	}
	m.Unimplemented("read32", off)
	return 0
}

func (m *Model) writeChanLocked(c int, r, off, val uint32) (kick uint32) {
	if c >= m.nch {
		m.Unimplemented("write32", off)
		return 0
	}
	if !m.hasDirLocked("write32", "DMA channel", c, chanDir(r), off) {
		return 0
	}
	ch := &m.ch[c]
	switch r {
	case chControl:
		if val&ctlDSLMask != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "DSL=%d (descriptor skip) is not modelled: descriptors are packed", (val&ctlDSLMask)>>ctlDSLShift)
			return 0
		}
		if val&ctlSPH != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "split header (SPH) is not modelled")
			return 0
		}
		ch.control = val
	case chTxControl:
		return m.writeTxControlLocked(c, ch, off, val)
	case chRxControl:
		m.writeRxControlLocked(c, ch, off, val)
	case chTxBaseHi, chTxBaseLo, chRxBaseHi, chRxBaseLo, chTxRingLen, chRxRingLen:
		m.writeRingRegLocked(c, ch, r, off, val)
	case chTxTail:
		old := ch.tx.tailRaw
		if m.writeTailLocked("TX", c, &ch.tx, off, val) && ch.tx.run {
			m.fetchTxLocked(&ch.tx, old)
			return 1 << c
		}
	case chRxTail:
		old := ch.rx.tailRaw
		if m.writeTailLocked("RX", c, &ch.rx, off, val) && ch.rx.run {
			m.fetchRxLocked(&ch.rx, old)
			m.drainAllLocked() // rxfifo.go: waiting frames take the new descriptors
		} else if ch.rx.run {
			m.fetchRxLocked(&ch.rx, old)
		}
	case chIntEn:
		m.writeIntEnLocked(c, ch, off, val)
	case chRxWdt:
		m.writeRxWdtLocked(c, off, val)
	case chSlot:
		ch.slot = val
	case chStatus:
		ch.status &^= val & stW1C
		if val&stFBE != 0 {
			ch.status &^= stTEB | stREB
		}
	case chCurTxDesc, chCurRxDesc, chCurTxBufH, chCurTxBuf, chCurRxBufH, chCurRxBuf, chMissFrame:
		m.readOnly(off, val)
	default:
		m.Unimplemented("write32", off)
	}
	return 0
}

// writeRingRegLocked stores a base or length register. The databook forbids
// changing them while the direction runs; writing the base (low word) or the
// length moves the current pointer back to the base, and the stopped DMA
// fetches afresh from there: descriptors it had fetched before (fetchedOK)
// are no longer checked against later writes (a recovery rewrites them).
func (m *Model) writeRingRegLocked(c int, ch *channel, r, off, val uint32) {
	x, kind := &ch.tx, "TX"
	if r == chRxBaseHi || r == chRxBaseLo || r == chRxRingLen {
		x, kind = &ch.rx, "RX"
	}
	if x.run {
		bit := "ST"
		if kind == "RX" {
			bit = "SR"
		}
		m.faults.Add("write32", regName(off), uint64(off), "%s ring of channel %d reprogrammed while the channel runs (clear %s first)", kind, c, bit)
		return
	}
	switch r {
	case chTxBaseHi, chRxBaseHi:
		x.baseHi = val
	case chTxBaseLo, chRxBaseLo:
		if val%descSize != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "%s descriptor list address 0x%08x not 16-byte aligned (the DMA ignores the low bits of a 128-bit bus)", kind, val)
			return
		}
		x.baseLo, x.baseSet, x.cur = val, true, 0
		clear(x.fetchedOK) // a new list: what the DMA prefetched from the old is gone
		x.retail()
	case chTxRingLen, chRxRingLen:
		if val&^ringLenMask != 0 {
			m.faults.Add("write32", regName(off), uint64(off), "%s ring length register 0x%x: the field is 10 bits (at most 1024 descriptors)", kind, val)
			return
		}
		x.lenReg, x.lenSet, x.cur = val, true, 0
		clear(x.fetchedOK)
		x.retail()
	}
	x.susp = suspNone
}

// writeTailLocked checks and stores a tail pointer. It reports whether the
// write resumed the DMA.
func (m *Model) writeTailLocked(kind string, c int, x *ring, off, val uint32) bool {
	if !x.baseSet {
		m.faults.Add("write32", regName(off), uint64(off), "%s tail pointer of channel %d written before its descriptor list address", kind, c)
		return false
	}
	if !x.lenSet {
		// stmmac writes the tail pointers before the ring lengths: the check
		// waits for the length (and the start).
		if (val-x.baseLo)%x.ds() != 0 || val < x.baseLo {
			m.faults.Add("write32", regName(off), uint64(off), "%s tail pointer 0x%08x below the ring base 0x%08x of channel %d or not on a descriptor boundary", kind, val, x.baseLo, c)
			return false
		}
		x.tail, x.tailSet = val, true
		x.retail()
		x.seq++
		return false
	}
	n := x.n()
	d := val - x.baseLo
	if val < x.baseLo || d%x.ds() != 0 || d/x.ds() > n {
		m.faults.Add("write32", regName(off), uint64(off), "%s tail pointer 0x%08x outside the ring [0x%08x, 0x%08x] of channel %d or not on a descriptor boundary", kind, val, x.baseLo, x.baseLo+n*x.ds(), c)
		return false
	}
	x.tail, x.tailRaw, x.tailSet = val, d/x.ds(), true
	x.seq++
	switch {
	case x.susp == suspOwn:
		x.susp = suspNone // poll demand: refetch the descriptor at cur
	case x.susp == suspTail && x.cur != x.tailRaw:
		x.susp = suspNone
	}
	return x.susp == suspNone
}

// start starts the direction at cur: suspended at once when cur is the tail.
func (r *ring) start() {
	r.run, r.susp = true, suspNone
	if r.cur == r.tailRaw {
		r.susp = suspTail
	}
}

// checkStartLocked validates a ring when its direction starts.
func (m *Model) checkStartLocked(kind string, c int, x *ring, off uint32) bool {
	base := m.ringBase(x)
	switch {
	case !x.baseSet || !x.lenSet:
		m.faults.Add("write32", regName(off), uint64(off), "%s DMA of channel %d started before its descriptor list address and ring length were set", kind, c)
	case x.tailSet && x.tailRaw == noTail:
		m.faults.Add("write32", regName(off), uint64(off), "%s DMA of channel %d started with its tail pointer 0x%08x outside the ring [0x%08x, 0x%08x]", kind, c, x.tail, x.baseLo, x.baseLo+x.n()*x.ds())
	case x.baseHi != 0 && !m.eame():
		m.faults.Add("write32", regName(off), uint64(off), "%s ring of channel %d has high address bits 0x%x but DMA_SysBus_Mode.EAME is off: the DMA would use only the low 32 bits", kind, c, x.baseHi)
	case uint64(x.baseLo)+uint64(x.n())*uint64(x.ds()) > 1<<32:
		m.faults.Add("write32", regName(off), uint64(off), "%s ring of channel %d crosses a 4 GiB boundary (the tail pointer holds only the low 32 bits)", kind, c)
	case m.mem.Check(base, int(x.n()*x.ds())) != nil:
		m.faults.Add("write32", regName(off), uint64(off), "%s ring [0x%x, +%d) of channel %d is not mapped for the device", kind, base, x.n()*x.ds(), c)
	default:
		return true
	}
	return false
}

// checkPBL refuses a programmable burst length other than 1, 2, 4, 8, 16 or
// 32 beats (TxPBL/RxPBL 21:16; 0 is left alone as a not-yet-programmed value).
func (m *Model) checkPBL(off, val uint32) bool {
	pbl := val & pblMask >> pblShift
	if pbl != 0 && pbl&(pbl-1) != 0 {
		m.faults.Add("write32", regName(off), uint64(off), "PBL %d: the burst length must be 1, 2, 4, 8, 16 or 32 beats", pbl)
		return false
	}
	return true
}

func (m *Model) writeTxControlLocked(c int, ch *channel, off, val uint32) (kick uint32) {
	if val&txcTSE != 0 && !m.hasTSO() {
		m.faults.Add("write32", regName(off), uint64(off), "TSE (TSO) set, but HW_FEATURE1.TSOEN is not advertised")
		return 0
	}
	if edse := val&txcEDSE != 0; edse != ch.tx.enhanced {
		switch {
		case edse && !m.hasTBS():
			// Without TBS the bit is reserved: it reads back 0 (stmmac's
			// dwmac4_enable_tbs checks that).
			val &^= txcEDSE
		case ch.txCtrl&txcST != 0 || val&txcST != 0:
			m.faults.Add("write32", regName(off), uint64(off), "EDSE changed on TX channel %d while it runs or in the write that starts it: the descriptor size must be set while the channel is stopped", c)
			return 0
		default:
			ch.tx.enhanced = edse
			ch.tx.retail()
		}
	}
	if !m.checkPBL(off, val) {
		return 0
	}
	was := ch.txCtrl & txcST
	if was != 0 && val&txcST == 0 {
		m.inj.Clear(sim.FaultTxHang) // fault.go: a stopped TX DMA starts over
	}
	if val&txcST != 0 && was == 0 && !m.checkStartLocked("TX", c, &ch.tx, off) {
		val &^= txcST
	}
	ch.txCtrl = val
	switch {
	case val&txcST != 0 && was == 0:
		ch.tx.start()
		return 1 << c
	case val&txcST == 0 && was != 0:
		ch.tx.run, ch.tx.susp = false, suspNone
		m.raiseLocked(c, stTPS)
	}
	return 0
}

func (m *Model) writeRxControlLocked(c int, ch *channel, off, val uint32) {
	if !m.checkPBL(off, val) {
		return
	}
	was := ch.rxCtrl & rxcSR
	if was != 0 && val&rxcSR == 0 {
		m.inj.Clear(sim.FaultRxStall) // fault.go: a stopped RX DMA starts over
	}
	if val&rxcSR != 0 && was == 0 {
		bs := (val & rxcRBSZMask) >> 1
		switch {
		case !m.checkStartLocked("RX", c, &ch.rx, off):
			val &^= rxcSR
		case bs == 0 || bs%16 != 0:
			m.faults.Add("write32", regName(off), uint64(off), "RX DMA of channel %d started with RBSZ %d: want a non-zero multiple of 16 bytes", c, bs)
			val &^= rxcSR
		}
	} else if was != 0 && (ch.rxCtrl^val)&rxcRBSZMask != 0 {
		m.faults.Add("write32", regName(off), uint64(off), "RBSZ of channel %d changed while the RX DMA runs", c)
		val = val&^rxcRBSZMask | ch.rxCtrl&rxcRBSZMask
	}
	ch.rxCtrl = val
	switch {
	case val&rxcSR != 0 && was == 0:
		ch.rx.start()
	case val&rxcSR == 0 && was != 0:
		ch.rx.run, ch.rx.susp = false, suspNone
		m.raiseLocked(c, stRPS)
	}
}

// writeIntEnLocked stores the interrupt enables, refusing the other version's
// summary bit positions, and re-signals causes that are still pending (the
// line is a level: enabling a pending cause raises it).
func (m *Model) writeIntEnLocked(c int, ch *channel, off, val uint32) {
	valid := ieCauses | m.ieNIE | m.ieAIE
	if bad := val &^ valid; bad != 0 {
		layout := "4.10 and later: NIE bit 15, AIE bit 14"
		if m.cfg.SNPSVER < 0x41 {
			layout = "4.00: NIE bit 16, AIE bit 15"
		}
		m.faults.Add("write32", regName(off), uint64(off), "interrupt enable 0x%08x sets reserved bits 0x%x for SNPSVER 0x%02x (%s)", val, bad, m.cfg.SNPSVER, layout)
		val &= valid
	}
	old := ch.pendingLocked(m.ieNIE, m.ieAIE)
	ch.intEn = val
	if now := ch.pendingLocked(m.ieNIE, m.ieAIE); now&^old != 0 {
		m.signalLocked(c, now&^old)
	}
}

// pendingTxLocked is the mask of running TX channels (to resume after TE or
// TXQEN is set).
func (m *Model) pendingTxLocked() (mask uint32) {
	for c := 0; c < m.nch; c++ {
		if m.ch[c].tx.run {
			mask |= 1 << c
		}
	}
	return mask
}

// dmaErrorLocked handles a refused DMA access (unmapped address, bus
// mastering off): a fatal bus error stops the direction, as the hardware's
// FBE does, and the driver must restart the channel.
func (m *Model) dmaErrorLocked(c int, tx bool) {
	ch := &m.ch[c]
	// TEB/REB bit 0 is 1 for a read transfer, 0 for a write (databook
	// DMA_CH_Status): TX reads memory, RX writes it.
	if tx {
		ch.tx.run = false
		ch.status = ch.status&^stTEB | 1<<16
	} else {
		ch.rx.run = false
		ch.status &^= stREB
	}
	m.raiseLocked(c, stFBE)
}
