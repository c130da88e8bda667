package dwmacsim

import (
	"bytes"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// Transmit path (databook "Transmit DMA"). A tail-pointer write (or ST, or TE
// or TXQEN becoming set) resumes the channel's TX DMA, which runs on the device
// side's time (sim.Sched: a few microseconds later, a few frames per step, on
// the background goroutine or at a later register access; inside the write
// with Config.Sched.Sync): descriptors from the current pointer up to the
// tail are read and checked under mu, the frames go to the wire with mu
// released (txMu keeps transmissions in order), then every descriptor of each
// frame is written back with OWN clear (FD/LD as in the frame, the status in
// the last one) and TI is set when a descriptor of the frame asked for IOC.
// The DMA stops at the tail (suspended, no status) or at a descriptor without
// OWN (TBU). A frame whose LD descriptor is not before the tail waits for a
// later tail write. The MAC pads frames shorter than 60 bytes and appends the
// FCS (CPC = 0). With MAC_Configuration.TE clear the MTL holds the frames: the
// DMA waits.
//
// Ownership: descriptors with OWN set from the current pointer up to the tail,
// and their buffers, belong to the device until the write-back clears OWN. The
// wire sees a frame only during the send call.
//
// Per-frame requests: TDES3.CIC runs the checksum engine on a copy of the
// frame (coe.go); TDES2.TTSE in any of the frame's descriptors, with
// MAC_Timestamp_Control.TSENA, timestamps it as it leaves: the write-back of
// its last descriptor then has TTSS and the system time (ptp.go) in DES0
// (nanoseconds) and DES1 (seconds), written before DES3. Without TSENA no
// timestamp is taken (TTSS clear). On an enhanced ring a launch time holds the
// frame, and those behind it, until the system time reaches it (tbs.go).
//
// Refused descriptors (FD missing at the start of a frame, FD inside one,
// buffer length 0, FL not the sum of the buffer lengths, context descriptors
// and TSO frames the engine refuses (tso.go), checksum insertion on a core
// without TXCOESEL, VLAN insertion, buffer
// 2, CPC != 0, a buffer address with high bits while EAME is off, frames over
// 9022 bytes, a launch time the model refuses) are faults: the frame is not
// sent and its descriptors are written back with DE and ES so the ring keeps
// moving.

// txFrame is one frame gathered from the ring.
type txFrame struct {
	data  []byte // the frame: a view of device memory or a slice of txArena
	first uint32 // index of its first descriptor
	ndesc uint32 // descriptors it used
	bad   bool   // refused: written back with DE|ES
	ioc   bool
	ttse  bool   // a descriptor asked for a timestamp
	cic   uint32 // TDES3.CIC of the first descriptor, shifted down
	at    uint64 // the first descriptor's IOVA (for faults)
	wb    uint32 // write-back status of the last descriptor (checksum errors)
	// padded is how many zero bytes the MAC added to reach 60.
	padded int
	ctxt   bool // a context descriptor (tso.go): nothing to send
	// TSO (tso.go): tso is the first descriptor's TSE; tsoHL its B1L (the
	// headers), tsoTHL and tsoTPL its THL and TPL; segs the segments the
	// engine made (views of txArena), nil for a frame sent as it is.
	tso                   bool
	tsoHL, tsoTHL, tsoTPL uint32
	segs                  [][]byte
	one                   [1][]byte // frames' backing for a frame sent whole
}

// frames returns what fr puts on the wire: nothing for a refused frame or a
// context descriptor, its TSO segments, or the frame itself.
func (fr *txFrame) frames() [][]byte {
	switch {
	case fr.bad || fr.ctxt:
		return nil
	case fr.segs != nil:
		return fr.segs
	}
	fr.one[0] = fr.data
	return fr.one[:]
}

// gatherResult says why gathering a frame stopped.
type gatherResult uint8

const (
	gatherOK         gatherResult = iota
	gatherNotOwned                // a descriptor without OWN: TBU
	gatherIncomplete              // the frame's LD is not before the tail yet
	gatherDMAError                // the ring or a buffer is not reachable
	gatherHold                    // the frame's launch time has not come
)

const txBatchMax = 64

var zeroPad [minFrame]byte

// txRun is one step of the TX DMA (the device side's txT timer, armed by a
// tail write, ST, TE or TXQEN): each channel with work sends up to a few
// frames (everything on a synchronous device side) and the step re-arms
// itself while a channel has more.
func (m *Model) txRun() {
	m.txMu.Lock()
	defer m.txMu.Unlock()
	m.TxStep(&m.txPend, m.txT, txBatchMax, txStepMax, m.transmitChannel)
}

// txStepMax bounds the frames one asynchronous TX step sends per channel.
const txStepMax = 8

// txStoppedLocked reports whether channel c's TX DMA (ring r) does not run
// now: stopped, suspended, the transmitter off, or an injected hang or
// removal (fault.go); an injected bus error on the descriptor fetch, or
// descriptors for an MTL queue that is not enabled (a fault), stop it too.
func (m *Model) txStoppedLocked(c int, r *ring) bool {
	if m.closed || !r.run || r.susp != suspNone || m.macConfig&cfgTE == 0 || m.inj.On(sim.FaultTxHang) || m.inj.On(sim.FaultRemoval) {
		return true
	}
	if m.inj.Take(sim.FaultBusError) { // fault.go: the descriptor fetch fails
		m.dmaErrorLocked(c, true)
		return true
	}
	if m.mtlq[c].txOp&mtlTXQENMask != mtlTXQENOn {
		m.faults.Add("tx", regName(regMTLQBase+uint32(c)*mtlQStride+mtlTxOpMode), uint64(c),
			"TX DMA of channel %d has descriptors to send but MTL TX queue %d is not enabled (TXQEN must be 2)", c, c)
		return true
	}
	return false
}

// transmitChannel sends frames of channel c in batches of up to budget; on an
// asynchronous device side it stops after one batch and reports whether the
// channel has more to send.
func (m *Model) transmitChannel(c, budget int) (more bool) {
	for {
		m.mu.Lock()
		ch := &m.ch[c]
		r := &ch.tx
		if m.txStoppedLocked(c, r) {
			m.wire.TxIdle()
			m.mu.Unlock()
			return false
		}
		gen, seq := m.gen, r.seq
		// base is the normal descriptor of entry 0 (after TDES4-7 in the
		// enhanced format), stride the descriptor size.
		base, size, eame := m.ringBase(r)+uint64(r.ds()-descSize), r.n(), m.eame()
		stride := uint64(r.ds())
		batch, arena := m.txBatch[:0], m.txArena[:0]
		m.txSegs = m.txSegs[:0]
		cur, consumed := r.cur, uint32(0)
		res, stop := gatherOK, suspNone
		var wireWait time.Duration
		for len(batch) < budget {
			if wireWait = m.wire.TxWait(); wireWait > 0 {
				break // the TX FIFO is full: the wire has to carry some first
			}
			var fr txFrame
			var next uint32
			fr, next, res = m.gatherLocked(c, base, stride, size, cur, r.tailRaw, &arena, eame)
			if res != gatherOK {
				break
			}
			batch = append(batch, fr)
			p := &batch[len(batch)-1]
			if p.tso && !p.bad {
				m.segmentLocked(c, p, &arena) // tso.go
			}
			if p.cic != 0 && !p.bad {
				m.coeFrameLocked(c, p, &arena)
			}
			for _, f := range p.frames() {
				m.wire.Depart(len(f))
			}
			consumed += fr.ndesc
			cur = next
			if cur == r.tailRaw {
				stop = suspTail
				break
			}
		}
		switch res {
		case gatherNotOwned:
			stop = suspOwn
		case gatherIncomplete:
			stop = suspTail // the frame continues beyond the tail: wait there
		}
		if len(batch) == 0 && wireWait > 0 {
			m.txPend |= 1 << c
			m.txT.ArmReal(wireWait)
			m.txBatch, m.txArena = batch, arena
			m.mu.Unlock()
			return false
		}
		if len(batch) == 0 {
			m.wire.TxIdle() // suspended, stopped or holding for a launch time
			if res == gatherDMAError {
				m.dmaErrorLocked(c, true)
			}
			if res == gatherHold {
				m.holdLocked(c)
			}
			m.settleTxLocked(c, r, stop, seq)
			m.txBatch, m.txArena = batch, arena
			m.mu.Unlock()
			return false
		}
		linkOK := m.phy.LinkUp() && m.speedMatchLocked() && m.pathUpLocked(true)
		sink := m.loopSinkLocked(m.wire.Sink()) // loopback.go
		m.mu.Unlock()

		if sink != nil && linkOK {
			for i := range batch {
				for _, f := range batch[i].frames() {
					sink(f)
				}
			}
		}

		m.mu.Lock()
		if gen != m.gen || !r.run {
			// Reset or channel stopped while the frames were on the wire: the
			// ring is no longer the DMA's to write back.
			m.wire.TxIdle()
			m.txBatch, m.txArena = batch[:0], arena[:0]
			m.mu.Unlock()
			return false
		}
		ioc := m.writeBackLocked(batch, base, stride, size, linkOK)
		r.cur = (r.cur + consumed) % size
		if ioc {
			m.raiseLocked(c, stTI)
		}
		m.settleTxLocked(c, r, stop, seq)
		if res == gatherDMAError || res == gatherHold {
			m.wire.TxIdle() // the channel stops, or waits for a launch time
		}
		if res == gatherDMAError {
			// The frames before the refused access went out and are written
			// back; the refused one stops the channel.
			m.dmaErrorLocked(c, true)
		}
		m.txBatch, m.txArena = batch[:0], arena[:0]
		m.mu.Unlock()
		if res == gatherDMAError {
			return false
		}
		if res == gatherHold {
			m.mu.Lock()
			m.holdLocked(c)
			m.mu.Unlock()
			return false
		}
		if wireWait > 0 {
			m.mu.Lock()
			m.txPend |= 1 << c
			m.txT.ArmReal(wireWait) // the rest when the wire has room
			m.mu.Unlock()
			return false
		}
		if stop == suspNone && !m.sched.Synchronous() {
			return true // the next step goes on
		}
	}
}

// writeBackLocked counts the batch's frames and writes their descriptors
// back (OWN clear; FD and LD as in the frame, the status in its last, a
// context descriptor's own format); it reports whether one asked for IOC.
func (m *Model) writeBackLocked(batch []txFrame, base, stride uint64, size uint32, linkOK bool) (ioc bool) {
	for i := range batch {
		fr := &batch[i]
		// The counters read the frame (a view of the buffer):
		// before the write-back hands the buffer back.
		for _, f := range fr.frames() {
			m.countTxLocked(f, linkOK)
		}
		if linkOK && !fr.bad && !fr.ctxt {
			m.cnt.TxPadding += uint64(fr.padded)
			m.countTSOLocked(fr)
		}
		idx := fr.first
		for k := uint32(0); k < fr.ndesc; k++ {
			d, err := m.mem.View("tx-writeback", base+uint64(idx)*stride, descSize)
			if err == nil && fr.ctxt {
				storeDES3(d, ctxtWriteback(fr.bad))
			} else if err == nil {
				var w3 uint32
				if k == 0 {
					w3 |= d3FD
				}
				if k == fr.ndesc-1 {
					w3 |= d3LD | m.txStatusLocked(fr, d)
				}
				storeDES3(d, w3)
			}
			idx = (idx + 1) % size
		}
		ioc = ioc || fr.ioc
		if fr.bad {
			m.cnt.TxDescErrors++
			m.cnt.TxDropped++
		}
	}
	return ioc
}

// settleTxLocked applies where the TX DMA stopped, taking into account tail
// writes made while the frames were on the wire (seq changed): they resume a
// suspension the DMA would otherwise have entered.
func (m *Model) settleTxLocked(c int, r *ring, stop uint8, seq uint32) {
	switch stop {
	case suspOwn:
		if r.seq == seq {
			r.susp = suspOwn
		}
		m.raiseLocked(c, stTBU)
	case suspTail:
		if r.cur == r.tailRaw || r.seq == seq {
			r.susp = suspTail
		}
	}
	if r.susp != suspNone {
		m.wire.TxIdle() // nothing more until the driver hands over more
	}
}

func (m *Model) countTxLocked(f []byte, linkOK bool) {
	wire := len(f) + fcsLen
	m.mmcInc(mmcTxFramesGB, 1)
	m.mmcInc(mmcTxFramesG, 1)
	m.mmcInc(mmcTxOctetsGB, uint32(wire))
	m.mmcInc(mmcTxOctetsG, uint32(wire))
	m.mmcInc(mmcTx64+mmcBucket(wire), 1)
	switch {
	case f[0]&f[1]&f[2]&f[3]&f[4]&f[5] == 0xff:
		m.mmcInc(mmcTxBcastG, 1)
		m.mmcInc(mmcTxBcastGB, 1)
	case f[0]&1 != 0:
		m.mmcInc(mmcTxMcastG, 1)
		m.mmcInc(mmcTxMcastGB, 1)
	default:
		m.mmcInc(mmcTxUcastGB, 1)
	}
	if !linkOK {
		m.cnt.TxDropped++ // sent into a dead link or at the wrong speed
		return
	}
	m.cnt.TxFrames++
	m.cnt.TxBytes += uint64(len(f))
}

// gatherLocked reads the frame whose first descriptor is at start.
func (m *Model) gatherLocked(c int, base, stride uint64, size, start, tail uint32, arena *[]byte, eame bool) (fr txFrame, next uint32, res gatherResult) {
	r := &m.ch[c].tx
	fr.first = start
	idx := start
	total := uint32(0)
	var fl uint32
	ok := true
	var first []byte
	gathered := false
	mark := len(*arena)
	for k := uint32(0); ; k++ {
		if k > 0 && idx == tail {
			return txFrame{}, start, gatherIncomplete
		}
		if k == size {
			m.faults.Add("tx-desc", "", base+uint64(start)*stride, "TX frame without LD spans the whole ring of %d descriptors", size)
			fr.bad = true
			return fr, idx, gatherOK
		}
		at := base + uint64(idx)*stride
		d, err := m.mem.View("tx-desc", at, descSize)
		if err != nil {
			return txFrame{}, start, gatherDMAError
		}
		m.checkFetchedLocked("TX", r, idx, d, at)
		d3 := loadDES3(d)
		if d3&d3OWN == 0 {
			return txFrame{}, start, gatherNotOwned
		}
		if stride != descSize && k == 0 {
			switch m.launchLocked(at) {
			case launchHold:
				return txFrame{}, start, gatherHold
			case launchBad:
				ok = false
			}
		}
		fr.ndesc++
		d2 := le.Uint32(d[des2:])
		if k == 0 && d3&d3CTXT != 0 { // tso.go: it stands alone
			fr.ctxt, fr.at = true, at
			fr.bad = !ok || !m.contextLocked(c, d, d3, at)
			return fr, (idx + 1) % size, gatherOK
		}
		if k == 0 {
			fr.tso = d3&td3TSE != 0
		}
		if ok {
			ok = m.checkTxDescLocked(c, d, d2, d3, k == 0, fr.tso, eame, at)
		}
		if k == 0 && fr.tso {
			fr.tsoHL, fr.tsoTHL, fr.tsoTPL = d2&td2B1LMask, (d3&td3THLMask)>>td3THLShift, d3&td3TPLMask
			fr.at = at
		} else if k == 0 {
			fl = d3 & td3FLMask
			fr.cic, fr.at = (d3&td3CICMask)>>td3CICShift, at
		}
		fr.ttse = fr.ttse || d2&td2TTSE != 0
		ln := d2 & td2B1LMask
		if ok {
			total += ln
			if limit := uint32(maxTxFrame); total > limit && (!fr.tso || total > tsoMaxFrame) {
				if fr.tso {
					limit = tsoMaxFrame
				}
				m.faults.Add("tx-desc", "", at, "TX frame of more than %d bytes", limit)
				ok = false
			}
		}
		if ok {
			addr := descAddr(d, eame)
			v, err := m.mem.View("tx-buffer", addr, int(ln))
			if err != nil {
				return txFrame{}, start, gatherDMAError
			}
			switch {
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
		if d2&td2IOC != 0 {
			fr.ioc = true
		}
		idx = (idx + 1) % size
		if d3&d3LD != 0 || (k == 0 && d3&d3CTXT != 0) {
			break // a context descriptor stands alone
		}
	}
	if ok && !fr.tso && fl != total {
		m.faults.Add("tx-desc", "", base+uint64(start)*stride, "TDES3.FL %d in the first descriptor differs from the frame's buffer lengths %d", fl, total)
		ok = false
	}
	if !ok {
		*arena = (*arena)[:mark]
		fr.bad = true
		return fr, idx, gatherOK
	}
	data := first
	if gathered {
		data = (*arena)[mark:]
	}
	if len(data) < minFrame && !fr.tso { // the MAC pads (CPC = 0); TSO: each segment
		fr.padded = minFrame - len(data)
		s := len(*arena)
		*arena = append(*arena, data...)
		*arena = append(*arena, zeroPad[:minFrame-len(data)]...)
		data = (*arena)[s:]
	}
	fr.data = data
	return fr, idx, gatherOK
}

// checkTxDescLocked reports whether a TX read descriptor is one the model
// accepts, recording a fault otherwise.
func (m *Model) checkTxDescLocked(c int, d []byte, d2, d3 uint32, firstDesc, tso, eame bool, at uint64) bool {
	var why string
	switch {
	case d3&d3CTXT != 0:
		why = "context descriptor (CTXT) inside a frame: the previous descriptor had no LD"
	case firstDesc && d3&d3FD == 0:
		why = "descriptor owned by the DMA at the start of a frame without FD"
	case !firstDesc && d3&d3FD != 0:
		why = "FD inside a frame: the previous descriptor had no LD"
	case d2&td2B1LMask == 0:
		why = "TX descriptor with buffer 1 length 0"
	case d2&td2B2LMask != 0:
		why = "TX descriptor with a buffer 2 length: buffer 2 is not modelled"
	case d2&td2VTIR != 0:
		why = "VLAN tag insertion (VTIR) is not modelled"
	case firstDesc && tso && m.tsoFirstLocked(c) != "":
		why = m.tsoFirstLocked(c)
	case firstDesc && !tso && d3&td3CICMask != 0 && m.cfg.NoTxCOE:
		why = "checksum insertion (CIC) requested, but HW_FEATURE0.TXCOESEL is not advertised"
	case firstDesc && d3&td3CPCMask != 0:
		why = "CPC other than 0 (CRC/pad insertion control) is not modelled"
	case !eame && le.Uint32(d[des1:]) != 0:
		why = "buffer address high word in DES1 with DMA_SysBus_Mode.EAME off: the DMA would use only DES0"
	default:
		return true
	}
	m.faults.Add("tx-desc", "", at, "%s (DES2 0x%08x DES3 0x%08x)", why, d2, d3)
	return false
}

// fetchTxLocked is the descriptor fetch a tail write starts on a running TX
// DMA: the descriptors from the old tail up to the new one are read at once,
// so their content is fixed then; gatherLocked checks that it still is.
//
// A descriptor without OWN followed by one with OWN among them is a fault:
// the DMA suspends at the first (TBU) and the frames after it wait, though
// the tail says they are the DMA's. A driver that hands descriptors over in
// order never leaves such a hole; one that writes 32-byte enhanced
// descriptors on a channel without EDSE does (ETDES4-7 read as a descriptor
// without OWN, the normal part after it as one with).
func (m *Model) fetchTxLocked(r *ring, from uint32) {
	n := r.n()
	if from == noTail || r.tailRaw == noTail || !m.mem.DMAEnabled() {
		return
	}
	if uint32(len(r.fetchedOK)) != n {
		r.fetched, r.fetchedOK = make([]byte, int(n)*descSize), make([]bool, n)
	}
	base, stride := m.ringBase(r)+uint64(r.ds()-descSize), uint64(r.ds())
	hole := noTail
	for i, k := from%n, uint32(0); i != r.tailRaw%n && k < n; k++ {
		at := base + uint64(i)*stride
		if m.mem.Check(at, descSize) != nil {
			return // faulted when the DMA gets there
		}
		d, err := m.mem.View("tx-fetch", at, descSize)
		if err != nil {
			return
		}
		copy(r.fetched[int(i)*descSize:], d)
		r.fetchedOK[i] = true
		switch own := loadDES3(d)&d3OWN != 0; {
		case !own && hole == noTail:
			hole = i
		case own && hole != noTail:
			m.faults.Add("tx-desc", "TxDesc_Tail", at, "TX descriptor %d without OWN before descriptor %d with OWN, both before the tail: the DMA stops at the first (on a channel without EDSE, enhanced descriptors look like this)", hole, i)
			hole = n // once per tail write
		}
		if i++; i == n {
			i = 0
		}
	}
}

// checkFetchedLocked reports descriptor idx of the kind ("TX" or "RX") ring r
// changed since the tail write that handed it over: the driver wrote it after
// moving the tail.
func (m *Model) checkFetchedLocked(kind string, r *ring, idx uint32, d []byte, at uint64) {
	if int(idx) >= len(r.fetchedOK) || !r.fetchedOK[idx] {
		return
	}
	r.fetchedOK[idx] = false
	o := int(idx) * descSize
	if !bytes.Equal(r.fetched[o:o+descSize], d[:descSize]) {
		m.faults.Add(strings.ToLower(kind)+"-desc", kind+"Desc_Tail", at, "%s descriptor %d changed after the tail write handed it to the running DMA (which fetched it then): write descriptors before moving the tail", kind, idx)
	}
}

// coeFrameLocked runs the checksum engine on fr for TX channel c: on a copy
// of the frame in the arena (the engine works in the MTL's FIFO, never on the
// buffer in memory).
func (m *Model) coeFrameLocked(c int, fr *txFrame, arena *[]byte) {
	s := len(*arena)
	*arena = append(*arena, fr.data...)
	f := (*arena)[s:]
	// Padding is the MAC's, after the engine: run it on the frame as the
	// descriptors gave it.
	n := len(f)
	if fr.padded > 0 {
		n -= fr.padded
	}
	fr.wb = m.coeLocked(c, f[:n], fr.cic, fr.at)
	fr.data = f
}

// txStatusLocked is the write-back status of fr's last descriptor d, with the
// timestamp written into d when the frame asked for one and the timestamp
// unit runs.
func (m *Model) txStatusLocked(fr *txFrame, d []byte) uint32 {
	if fr.bad {
		return tw3DE | tw3ES
	}
	w := fr.wb
	if fr.ttse && m.ptp.tcr&tcrTSENA != 0 {
		sec, ns := m.ptp.now()
		le.PutUint32(d[des0:], ns)
		le.PutUint32(d[des1:], sec)
		w |= tw3TTSS
	}
	return w
}
