package fecsim

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

// Transmit path (RM "Transmit buffer descriptors"; fec_main.c
// fec_enet_txq_submit_skb and fec_enet_tx_queue). A write to TDAR(q) while
// ETHEREN is set (and TCR.GTS clear) sends, synchronously on the writer's
// goroutine, every complete frame from the ring's current BD on: BDs with R
// set, up to the one with L. For each frame the device
//
//   - reads the BDs and copies their buffers (a first buffer shifted by 2 with
//     TACC.SHIFT16), refusing a BD of length 0, a buffer it cannot reach, and a
//     frame longer than RCR.MAX_FL (EIR.BABT);
//   - appends the FCS where the last BD has TC (ABC: a wrong one), padding
//     frames shorter than 60 bytes first; without TC the last 4 bytes must
//     already be the FCS;
//   - with enhanced BDs honours esc.TS (the 1588 counter at transmission into
//     the BD's ts word and ATSTMP, EIR.TS_AVAIL) and writes BDU;
//   - runs the checksum accelerator where the last BD's esc.IINS/PINS or
//     TACC.IPCHK/PROCHK ask (csum.go; needs TFWR.STRFWD and TC);
//   - clears R on each BD (one 32-bit store of length and status, last), sets
//     EIR.TXB per BD and EIR.TXF for the frame (with enhanced BDs only where
//     esc.INT is set), moves past W to the ring start;
//   - puts the frame on the wire (without FCS) with the lock released, or back
//     into its own receiver when RCR.LOOP is set.
//
// When the BD at the current position has R clear the ring is drained and TDAR
// clears. A frame whose later BDs are not ready yet waits (with TFWR.STRFWD; the
// model treats a missing STRFWD there as an underrun fault).
//
// Ownership: a BD with R set and its buffer belong to the device until it clears
// R. The wire sees the frame only during the send call.

// txRun is one step of the transmit engine (the device side's txT timer,
// armed by a TDAR write or GTS clearing): on every running ring it sends up to
// a few frames (all of them on a synchronous device side), then re-arms itself
// while a ring still has frames or a TDAR clear is pending (ERR006358).
func (m *Model) txRun() {
	m.txMu.Lock()
	defer m.txMu.Unlock()
	budget := 1 << 30
	if !m.sched.Synchronous() {
		budget = 1 + m.sched.IntN(txBurstMax)
	}
	again, held := false, false
	var wireWait time.Duration
	var active [3]bool
	m.mu.Lock()
	for q := range m.rings {
		r := &m.rings[q]
		if r.txClearing {
			r.txClearing, r.tdar = false, false
		}
		active[q] = r.tdar
	}
	m.mu.Unlock()
	for q := 0; q < m.info.rings; q++ {
		if !active[q] {
			continue
		}
		for i := 0; ; i++ {
			if i == budget {
				again = true
				break
			}
			if w := m.wire.TxWait(); w > 0 {
				wireWait = w // the TX FIFO is full: the wire has to carry some first
				break
			}
			m.mu.Lock()
			frame, sink, deliver, loop, more := m.txOneLocked(q)
			again = again || m.rings[q].txClearing
			m.mu.Unlock()
			if deliver {
				m.wire.Depart(len(frame))
				if loop {
					m.mu.Lock()
					m.receiveLocked(frame, true, false)
					m.mu.Unlock()
				} else if sink != nil {
					sink(frame)
				}
			}
			if !more {
				m.mu.Lock()
				held = held || m.txHeldLocked(q)
				m.wire.TxIdle() // drained, stopped, or waiting for the frame's next BD
				m.mu.Unlock()
				break
			}
		}
	}
	switch {
	case again:
		m.txT.Arm()
	case wireWait > 0:
		m.txT.ArmReal(wireWait) // the rest when the wire has room
	case held:
		m.txT.ArmIdle() // the running ring looks again for the frame's rest
	}
}

// txHeldLocked: ring q runs (TDAR set) but its frame waits for a later BD to
// become ready.
func (m *Model) txHeldLocked(q int) bool {
	r := &m.rings[q]
	return r.tdar && !r.txClearing && !r.txHung && m.ecr&ecrETHEREN != 0 && m.tcr&tcrGTS == 0 && !m.closed.Load()
}

// txBurstMax bounds the frames one engine step sends per ring.
const txBurstMax = 8

// txOneLocked handles the frame at ring q's current BD. more is false when the
// ring is drained or stopped. The frame (a slice of txScratch) is to be
// delivered when deliver is true. The steps are the RM's: the DMA fetches the
// frame's BDs (txFetchLocked), copies their buffers and writes the BDs back
// (txGatherLocked), the MAC finishes the frame (txMACLocked) and sends it
// onto the link (txLinkLocked) or back into its receiver.
func (m *Model) txOneLocked(q int) (frame []byte, sink func([]byte), deliver, loop, more bool) {
	r := &m.rings[q]
	if m.closed.Load() || m.ecr&ecrETHEREN == 0 || !r.tdar || m.tcr&tcrGTS != 0 || r.txHung || r.txClearing {
		return nil, nil, false, false, false
	}
	if m.txFaultLocked() { // fault.go
		return nil, nil, false, false, false
	}
	f, ok := m.txFetchLocked(q)
	if !ok {
		return nil, nil, false, false, false
	}
	data, ok := m.txGatherLocked(q, &f)
	if !ok {
		m.cnt.TxDropped++
		return nil, nil, false, false, true
	}
	data, ok = m.txMACLocked(r.txCur, data, &f)
	if !ok {
		return nil, nil, false, false, true
	}
	loop = m.rcr&rcrLOOP != 0
	if !loop && !m.txLinkLocked(data) {
		return nil, nil, false, false, true
	}
	m.countTxLocked(data)
	m.cnt.TxFrames++
	m.cnt.TxBytes += uint64(len(data))
	return data, m.phyLoopSinkLocked(m.wire.Sink()), true, loop, true // loopback.go
}

// txBDs is the frame txFetchLocked found at a ring's current BD.
type txBDs struct {
	ext     bool   // enhanced (ECR.EN1588) BDs
	le      bool   // little-endian BDs (ECR.DBSWP)
	size    uint32 // bytes per BD
	nbd     int    // BDs in the frame, the last with L
	total   int    // bytes in their buffers
	lastSC  uint16 // the last BD's status
	lastESC uint32 // the last enhanced BD's esc word
	bad     bool   // a BD the device refuses: the frame is dropped
}

// txFetchLocked walks ring q's BDs from the current one to the one with L;
// all must be ready. ok is false when there is no frame to send now (the ring
// drained, a BD not ready, or the ring unreachable).
func (m *Model) txFetchLocked(q int) (f txBDs, ok bool) {
	r := &m.rings[q]
	f.ext = m.ecr&ecrEN1588 != 0
	f.le = m.ecr&ecrDBSWP != 0
	f.size = uint32(bdSizeLeg)
	if f.ext {
		f.size = bdSizeExt
	}
	cur := r.txCur
	for {
		d, err := m.mem.View("tx-desc", uint64(cur), int(f.size))
		if err != nil {
			r.tdar = false
			return f, false
		}
		b := bdView{d, f.le}
		sc := b.sc()
		if sc&txR == 0 {
			if f.nbd == 0 {
				if m.info.err006358 {
					r.txClearing = true // TDAR clears at the next step
				} else {
					r.tdar = false
				}
				if b.otherOrderSC()&txR != 0 {
					m.faults.Add("tx", "TDAR", uint64(cur), "TX BD at 0x%08x is ready only in the other byte order: ECR.DBSWP is %v (set it for little-endian descriptors)", cur, f.le)
				}
			} else if m.tfwr&tfwrSTRFWD == 0 {
				m.faults.Add("tx", "TDAR", uint64(cur), "frame continues into BD 0x%08x that is not ready (R clear) without TFWR.STRFWD: the FIFO underruns (EIR.UN)", cur)
				m.raiseLocked(eirUN)
			}
			return f, false
		}
		l := int(b.length())
		if l == 0 {
			m.faults.Add("tx", "", uint64(cur), "TX BD at 0x%08x has length 0", cur)
			f.bad = true
		}
		f.total += l
		f.nbd++
		if sc&txL != 0 {
			f.lastSC = sc
			if f.ext {
				f.lastESC = b.esc()
			}
			return f, true
		}
		cur = m.nextBD(r.tdsr, cur, sc, f.size)
		if f.nbd > 4096 {
			m.faults.Add("tx", "", uint64(r.txCur), "TX frame spans more than 4096 BDs without L")
			r.tdar = false
			return f, false
		}
	}
}

// txGatherLocked copies the frame's buffers into txScratch (unless the frame
// is refused: a bad BD, longer than RCR.MAX_FL, a buffer out of reach), then
// writes every BD back (R clear, enhanced BDs' BDU and timestamp), raises the
// frame's events and moves ring q past it. ok is false for a refused frame.
func (m *Model) txGatherLocked(q int, f *txBDs) (data []byte, ok bool) {
	r := &m.rings[q]
	skip := 0
	if m.tacc&tacc16 != 0 {
		skip = 2
	}
	maxFL := int(m.rcr&rcrMaxFLMask) >> rcrMaxFLShift
	wire := f.total - skip
	if f.lastSC&txTC != 0 {
		wire += 4
	}
	bad := f.bad
	if !bad && wire > maxFL {
		m.faults.Add("tx", "RCR", uint64(r.txCur), "TX frame of %d bytes on the wire (FCS included) is longer than RCR.MAX_FL %d: babbling transmit (EIR.BABT)", wire, maxFL)
		m.raiseLocked(eirBABT)
		bad = true
	}
	if !bad && f.total > len(m.txScratch) {
		bad = true
	}
	data = m.txScratch[:0]
	cur := r.txCur
	var events uint32
	ts := m.timerNowLocked()
	for i := 0; i < f.nbd; i++ {
		d, _ := m.mem.View("tx-desc", uint64(cur), int(f.size))
		b := bdView{d, f.le}
		sc := b.sc()
		if !bad {
			l := int(b.length())
			buf, err := m.mem.View("tx-buffer", uint64(b.addr()), l)
			if err != nil {
				bad = true
			} else {
				data = append(data, buf...)
			}
		}
		raise := true
		if f.ext {
			esc := b.esc()
			raise = esc&txeINT != 0
			if esc&txeTS != 0 && i == f.nbd-1 {
				b.put32(bdTS, ts)
			}
			b.put32(bdBDU, bduDone)
		}
		b.writeHead(b.length(), sc&^txR)
		if raise {
			events |= eirTXBq[q]
			if i == f.nbd-1 {
				events |= eirTXFq[q]
			}
		}
		cur = m.nextBD(r.tdsr, cur, sc, f.size)
	}
	r.txCur = cur
	if f.ext && f.lastESC&txeTS != 0 {
		m.atstmp = ts
		events |= eirTSAVAIL
	}
	if events = m.coalesceLocked(q, events); events != 0 {
		m.raiseLocked(events)
	}
	if bad {
		return nil, false
	}
	if len(data) < skip {
		m.faults.Add("tx", "TACC", uint64(r.txCur), "TACC.SHIFT16 with a %d-byte frame", len(data))
		return nil, false
	}
	return data[skip:], true
}

// txMACLocked finishes the gathered frame as the MAC sends it: the FCS
// checked and stripped without TC (sent with a bad one on purpose with ABC),
// the checksum accelerator, padding to the minimum, the source address with
// TCR.ADDINS. at is the ring position faults name. ok is false for a frame
// not to be delivered, already counted as dropped.
func (m *Model) txMACLocked(at uint32, data []byte, f *txBDs) (out []byte, ok bool) {
	tc := f.lastSC&txTC != 0
	if !tc {
		// The driver supplied the FCS: check it, then strip it for the wire.
		if len(data) < 4 || crc32.ChecksumIEEE(data[:len(data)-4]) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
			m.faults.Add("tx", "", uint64(at), "TX frame without TC whose last 4 bytes are not its FCS: the partner drops it (set TC to let the MAC append the CRC)")
			m.cnt.TxDropped++
			return nil, false
		}
		data = data[:len(data)-4]
	} else if f.lastSC&txABC != 0 {
		m.cnt.TxDropped++ // sent with a bad CRC on purpose: the partner drops it
		m.countTxLocked(data)
		return nil, false
	}
	if !m.accelerateLocked(data, tc, f.ext, f.lastESC, at) {
		m.cnt.TxDropped++
		return nil, false
	}
	if tc && len(data) < 60 {
		// The MAC pads short frames to the 64-byte minimum when it appends
		// the CRC (txScratch has the room).
		k := len(data)
		data = data[:60]
		clear(data[k:])
	}
	if m.tcr&tcrADDINS != 0 && len(data) >= 12 {
		binary.BigEndian.PutUint32(data[6:], m.palr)
		binary.BigEndian.PutUint16(data[10:], uint16(m.paur>>16))
	}
	if len(data) < 14 {
		m.faults.Add("tx", "", uint64(at), "TX frame of %d bytes is shorter than an Ethernet header", len(data))
		m.cnt.TxDropped++
		return nil, false
	}
	return data, true
}

// txLinkLocked reports whether a finished frame reaches the partner: the
// link up, the SoC running the MAC, and the MAC's speed and duplex those of
// the PHY. A frame that does not is counted as dropped.
func (m *Model) txLinkLocked(data []byte) bool {
	if !m.phy.LinkUp() || m.socStoppedLocked() {
		m.cnt.TxDropped++ // the MAC sends into a dead link (or its SoC stopped it: soc.go)
		m.countTxLocked(data)
		return false
	}
	if mac, phy, bad := m.speedMismatchLocked(); bad {
		m.faults.Add("tx", "ECR", uint64(regECR), "frame sent with the MAC at %d Mb/s and the PHY at %d Mb/s (ECR.SPEED / RCR.RMII_10T): the partner receives garbage", mac, phy)
		m.cnt.TxDropped++
		return false
	}
	if st := m.phy.Link(); st.FullDuplex != (m.tcr&tcrFDEN != 0) {
		m.faults.Add("tx", "TCR", uint64(regTCR), "duplex mismatch: PHY full duplex %v, TCR.FDEN %v (late collisions and drops on hardware)", st.FullDuplex, m.tcr&tcrFDEN != 0)
		m.cnt.TxDropped++
		return false
	}
	return true
}

func (m *Model) countTxLocked(data []byte) {
	n := len(data) + 4
	m.mibInc(regRMONTPackets)
	m.mibAdd(regRMONTOctets, n)
	m.mibInc(regIEEETFrameOK)
	m.mibAdd(regIEEETOctetsOK, n)
	m.mibInc(regRMONTP64 + 4*sizeBucket(n))
	if data[0]&1 != 0 {
		if data[0]&data[1]&data[2]&data[3]&data[4]&data[5] == 0xFF {
			m.mibInc(regRMONTBC)
		} else {
			m.mibInc(regRMONTMC)
		}
	}
}

// accelerateLocked runs the checksum accelerator over a frame in the FIFO
// (csum.go) when its BD or TACC asks, and reports whether the frame may go.
func (m *Model) accelerateLocked(data []byte, tc, ext bool, esc uint32, at uint32) bool {
	perFrame := ext && esc&(txeIINS|txePINS) != 0
	ip := m.tacc&taccIPCHK != 0 || ext && esc&txeIINS != 0
	l4 := m.tacc&taccPROCHK != 0 || ext && esc&txePINS != 0
	if !ip && !l4 {
		return true
	}
	if m.tfwr&tfwrSTRFWD == 0 {
		m.faults.Add("tx", "TFWR", uint64(at), "checksum insertion (esc IINS/PINS or TACC) without TFWR.STRFWD: the reference manual requires store and forward")
		return false
	}
	if !tc {
		m.faults.Add("tx", "TxBD", uint64(at), "checksum insertion into a frame whose FCS the driver supplied (TC clear): the FCS no longer matches and the partner drops it")
		return false
	}
	m.checksumLocked(data, ip, l4, perFrame, at)
	return true
}
