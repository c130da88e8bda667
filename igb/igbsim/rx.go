package igbsim

import (
	"hash/crc32"

	"github.com/xnic-dev/xnic/sim"
)

// Receive path (82576 datasheet 7.1). A frame arriving from the wire (Inject, or
// a wire attached with Attach) passes the size checks and the address filter,
// picks a queue (RSS or queue 0), and is written by DMA into the buffers of the
// next descriptors between RDH and RDT, then the descriptors are written back
// and RDH advances. Frames larger than one buffer (SRRCTL.BSIZEPKT) are split
// across descriptors as the datasheet does: DD on each, EOP on the last, which
// alone carries the RSS hash and packet type. A frame that finds too few free
// descriptors waits in the receive packet buffer (rxfifo.go) or, with the
// queue's SRRCTL.DROP_EN, is dropped and counted in its RQDPC.
//
// Ownership: a descriptor in [RDH, RDT) and its buffer belong to the device; the
// model writes the buffer, then the write-back with the status dword last, then
// moves RDH past it, handing both back to software.

// Inject delivers frame as if it arrived from the wire: destination MAC to the
// end of the payload, no preamble, no FCS. It reports whether the frame was
// written to an RX ring. frame is not kept. It does not allocate.
func (m *Model) Inject(frame []byte) bool {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	ok := m.receiveLocked(frame, nil)
	m.mu.Unlock()
	return ok
}

// InjectBurst delivers frames back to back, each as Inject does (same checks,
// counters, faults and interrupts), and reports how many were written to an RX
// ring. The burst holds the register lock once and translates each RX ring it
// touches once (like an IOTLB filled for the burst) when all of the ring is
// mapped; otherwise each descriptor is translated, and faulted, on its own.
// frames are not kept. It does not allocate.
func (m *Model) InjectBurst(frames [][]byte) int {
	var rings rxRingViews
	n := 0
	m.wire.ArriveBurst(frames)
	m.mu.Lock()
	for _, f := range frames {
		if m.receiveLocked(f, &rings) {
			n++
		}
	}
	m.mu.Unlock()
	return n
}

// rxRingViews are the RX rings translated during one burst, by queue.
type rxRingViews struct {
	tried uint32 // queues whose ring was looked up
	view  [maxQueuesAny][]byte
}

// maxQueuesAny bounds the queues of every modelled device (devInfo.maxQueues).
const maxQueuesAny = 16

// rxDesc is descriptor idx of RX queue q's ring at base (size descriptors):
// from the burst's translation of the whole ring when there is one, else
// translated alone.
func (m *Model) rxDesc(rv *rxRingViews, q int, base uint64, size, idx uint32) ([]byte, error) {
	if rv == nil || q >= maxQueuesAny {
		return m.mem.View("rx-desc", base+uint64(idx)*descSize, descSize)
	}
	if rv.tried&(1<<q) == 0 {
		rv.tried |= 1 << q
		rv.view[q] = m.ringView("rx-desc", base, size)
	}
	return m.descView(rv.view[q], "rx-desc", base, idx)
}

// InjectBadFCS delivers frame as if it arrived with a wrong FCS: the MAC drops
// it and counts it in CRCERRS (when receiving is on and the link is up).
func (m *Model) InjectBadFCS(frame []byte) {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	if !m.closed && m.rctl&rctlEN != 0 && m.linkUpLocked() {
		m.incStat(stCRCERRS)
		m.cnt.RxErrors++
	} else {
		m.cnt.RxNoLink++
	}
	m.mu.Unlock()
}

func (m *Model) receiveLocked(frame []byte, rv *rxRingViews) bool {
	if m.closed || m.rctl&rctlEN == 0 || !m.linkUpLocked() || m.inj.On(sim.FaultRemoval) {
		m.cnt.RxNoLink++
		return false
	}
	n := len(frame)
	wire := n + 4
	if n < 14 || wire < 64 {
		m.incStat(stRUC)
		m.cnt.RxErrors++
		return false
	}
	maxLen := maxStdFrameNoFCS + 4
	if m.rctl&rctlLPE != 0 {
		maxLen = int(m.rlpml)
	}
	if wire > maxLen {
		m.incStat(stROC)
		m.cnt.RxErrors++
		return false
	}
	mcast := frame[0]&1 != 0
	bcast := mcast && frame[0]&frame[1]&frame[2]&frame[3]&frame[4]&frame[5] == 0xFF
	if !m.acceptLocked(frame[:6], mcast, bcast) {
		m.cnt.RxFiltered++
		return false
	}
	m.incStat(stTPR)
	m.addStat64(stTORL, wire)
	return m.toFIFOLocked(frame, rv) // rxfifo.go: on to dmaRxLocked, or waits
}

// dmaRxLocked is the receive DMA for a frame that passed the MAC: queue
// selection, then the frame into the buffers of the queue's next free
// descriptors. It reports rxNoDesc, having changed nothing, when the queue has
// too few free descriptors.
func (m *Model) dmaRxLocked(frame []byte, rv *rxRingViews) (rxOutcome, int) {
	n := len(frame)
	wire := n + 4
	mcast := frame[0]&1 != 0
	bcast := mcast && frame[0]&frame[1]&frame[2]&frame[3]&frame[4]&frame[5] == 0xFF

	q, hash, rssType, pktType, ok := m.selectQueueLocked(frame)
	if !ok {
		return rxDropped, q
	}
	r := &m.rx[q]
	if r.dctl&dctlEnable == 0 {
		m.missLocked()
		return rxDropped, q
	}
	if m.ctrl&ctrlGIOMasterDi != 0 {
		m.cnt.RxNoLink++ // DMA blocked by GIO master disable: nothing reaches memory
		return rxDropped, q
	}
	if !m.mem.DMAEnabled() {
		m.faults.Add("rx", "", uint64(q), "frame for enabled RX queue %d while bus mastering is off", q)
		m.cnt.RxMissed++
		return rxDropped, q
	}

	// What reaches the buffer (82576 datasheet 7.4.3.3, I210 7.8.2.4): the
	// receive timestamp header first when the queue asks for it; the frame
	// without its 802.1Q tag when CTRL.VME strips it (the tag goes to the
	// write-back, VP set); the FCS last unless RCTL.SECRC strips it.
	var vlanTCI uint16
	strip := m.ctrl&ctrlVME != 0 && n >= 18 && frame[12] == 0x81 && frame[13] == 0x00
	ts := m.ptp.rxTimestamping(r.srrctl)
	data := frame
	if strip || ts || m.rctl&rctlSECRC == 0 {
		k := 0
		if ts {
			m.ptp.putTimestamp(m.crcBuf[:tsHdrLen])
			k = tsHdrLen
		}
		if strip {
			vlanTCI = uint16(frame[14])<<8 | uint16(frame[15])
			k += copy(m.crcBuf[k:], frame[:12])
			k += copy(m.crcBuf[k:], frame[16:])
		} else {
			k += copy(m.crcBuf[k:], frame)
		}
		if m.rctl&rctlSECRC == 0 { // the FCS of the frame as it was on the wire
			le.PutUint32(m.crcBuf[k:], crc32.ChecksumIEEE(frame))
			k += 4
		}
		data = m.crcBuf[:k]
	}
	bsize := int(r.srrctl&srrctlBSizeMask) << 10
	ndesc := 1
	if len(data) > bsize {
		ndesc = (len(data) + bsize - 1) / bsize
	}
	size := r.len / descSize
	free := r.tail - r.head // descriptors [RDH, RDT) are the device's
	if r.tail < r.head {
		free += size
	}
	if r.head >= size || r.tail >= size { // stale after a ring resize
		free = (r.tail + size - r.head) % size
	}
	if int(free) < ndesc {
		return rxNoDesc, q
	}
	base := r.base()
	head := r.head
	for i := 0; i < ndesc; i++ {
		d, err := m.rxDesc(rv, q, base, size, head)
		if err != nil {
			m.cnt.RxMissed++
			return rxDropped, q
		}
		if changedLocked(r.fetched, r.fetchedOK, head, d) {
			m.faults.Add("rx-desc", "RDT", base+uint64(head)*descSize, "RX descriptor %d changed after the RDT write handed it to the device (which may fetch it at once): write descriptors before moving the tail", head)
		}
		chunk := data[i*bsize : min(len(data), (i+1)*bsize)]
		buf, err := m.mem.View("rx-buffer", le.Uint64(d[rxdPktAddr:]), len(chunk))
		if err != nil {
			m.cnt.RxMissed++
			return rxDropped, q
		}
		copy(buf, chunk)
		status := uint32(rxStatDD)
		if i == 0 && ts {
			status |= rxStatTSIP
		}
		var tag uint16
		if i == ndesc-1 {
			status |= rxStatEOP
			if m.inj.Take(sim.FaultDescError) { // fault.go
				status |= rxErrRXE
			}
			if strip {
				status |= rxStatVP
				tag = vlanTCI
			}
			le.PutUint32(d[rxwPktInfo:], uint32(rssType)|uint32(pktType))
			le.PutUint32(d[rxwRSS:], hash)
		} else {
			le.PutUint32(d[rxwPktInfo:], 0)
			le.PutUint32(d[rxwRSS:], 0)
		}
		le.PutUint16(d[rxwLength:], uint16(len(chunk)))
		le.PutUint16(d[rxwVLAN:], tag)
		storeStatus(d, rxwStatus, status)
		if head++; head >= size { // (head+1) % size without a division
			head %= size
		}
	}
	r.head = head

	m.incStat(stGPRC)
	m.addStat64(stGORCL, wire)
	m.incStat(stPRC64 + sizeBucket(wire))
	if bcast {
		m.incStat(stBPRC)
	} else if mcast {
		m.incStat(stMPRC)
	}
	m.cnt.RxFrames++
	m.cnt.RxBytes += uint64(n)
	m.raiseQueueLocked(q, false)
	return rxDone, q
}

// selectQueueLocked is the receive queue selection (82576 datasheet 7.1.2):
// RSS, where MRQC and RXCSUM.PCSD enable it, hashes the frame and reads the
// queue from RETA; otherwise queue 0. It also gives the write-back's packet
// information (hash, RSS type, packet type). ok is false, the frame counted
// as missed, when RETA names a queue the device does not have.
func (m *Model) selectQueueLocked(frame []byte) (q int, hash uint32, rssType, pktType uint16, ok bool) {
	var in [maxHashInput]byte
	rssOn := m.mrqc&mrqcMRQEMask == mrqcRSS && m.rxcsum&rxcsumPCSD != 0
	sel := uint32(0)
	if rssOn {
		sel = m.mrqc
	}
	hn, rssType, pktType := rssInput(frame, sel, &in)
	if rssOn && hn > 0 {
		if m.rssDirty || m.rssTab == nil {
			if m.rssTab == nil {
				m.rssTab = new(toeplitzTable)
			}
			m.rssTab.build(&m.rssKey)
			m.rssDirty = false
		}
		hash = m.rssTab.hash(in[:hn])
		q = int(m.reta[hash&0x7F] & 0xF)
		if q >= len(m.rx) {
			m.faults.Add("rx", "RETA", uint64(hash&0x7F), "RETA entry %d sends a frame to queue %d of %d", hash&0x7F, q, len(m.rx))
			m.cnt.RxMissed++
			return q, hash, rssType, pktType, false
		}
	}
	return q, hash, rssType, pktType, true
}

// missLocked counts a frame the packet buffer could not take, or one for a
// disabled queue: MPC alone (82576 datasheet 8.19.x: MPC
// counts packets missed for want of packet buffer space; RQDPC counts only
// SRRCTL.DROP_EN drops, rxfifo.go).
func (m *Model) missLocked() {
	m.incStat(stMPC)
	m.cnt.RxMissed++
}

// acceptLocked is the L2 address filter (82576 datasheet 7.1.1.1): promiscuous
// unicast accepts everything; broadcast needs BAM; multicast needs MPE or its
// MTA bit; unicast needs a valid receive address register that matches.
func (m *Model) acceptLocked(dst []byte, mcast, bcast bool) bool {
	if m.rctl&rctlUPE != 0 {
		return true
	}
	if bcast && m.rctl&rctlBAM != 0 {
		return true
	}
	if mcast && m.rctl&rctlMPE != 0 {
		return true
	}
	lo := le.Uint32(dst[0:4])
	hi := uint32(le.Uint16(dst[4:6]))
	for i := 0; i < m.info.rar; i++ {
		rah := m.rar[i][1]
		if rah&rahAV != 0 && m.rar[i][0] == lo && rah&0xFFFF == hi {
			return true
		}
	}
	if mcast && !bcast {
		shift := [4]uint{4, 3, 2, 0}[(m.rctl>>rctlMOShf)&3]
		h := (uint32(dst[5])<<8 | uint32(dst[4])) >> shift & 0xFFF
		return m.mta[h>>5]&(1<<(h&31)) != 0
	}
	return false
}
