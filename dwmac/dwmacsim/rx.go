package dwmacsim

import (
	"hash/crc32"
	"math/bits"

	"github.com/xnic-dev/xnic/sim"
)

// Receive path (databook "Receive DMA" and "MAC receive"). A frame from the
// wire (Inject, or an attached sim.Link) is checked for size, passes the
// address filter, enters an MTL RX queue (0 unless InjectQueue names another:
// the model has no classifier), which MTL_RxQ_DMA_Map sends to a DMA channel.
// The MAC keeps the 4-byte FCS in the buffer and in RDES3.PL, as stmmac
// expects (it strips the FCS itself), unless MAC_Configuration.CST (type
// frames) or ACS (802.3 length frames) strips it.
//
// The channel's RX DMA writes the frame into the buffers of the descriptors
// from its current pointer on: RBSZ bytes per descriptor, BUF1V only. It needs
// every one of them owned by the DMA (OWN) and not beyond the tail pointer;
// otherwise it sets RBU, suspends until the next tail write, and the frame
// waits in the MTL RX queue's FIFO (rxfifo.go). Then it writes back each descriptor, DES3
// last with OWN clear: FD on the first, LD and the total length on the last,
// and sets RI if the last descriptor asked for IOC (else the RX watchdog
// does, when programmed).
//
// Ownership: a descriptor with OWN set, from the current pointer up to the
// tail, and its buffer belong to the device; the write-back hands both back.

// Inject delivers frame as if it arrived from the wire (destination MAC to the
// end of the payload, no preamble, no FCS) into the MTL RX queue the MAC's
// classifier picks: queue 0, or for a C-VLAN tagged frame (TPID 0x8100) the
// queue whose MAC_RxQ_Ctrl2/3 PSRQ byte selects its priority (PCP). It reports
// whether the frame was written to an RX ring. frame is not kept. It does not
// allocate.
func (m *Model) Inject(frame []byte) bool {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	ok := m.receiveLocked(m.steerLocked(frame), frame)
	m.mu.Unlock()
	return ok
}

// steerLocked is the MAC's RX queue for frame by VLAN priority (databook
// "MAC_RxQ_Ctrl2/3": PSRQn, bit p set routes priority p to queue n; stmmac's
// dwmac4_rx_queue_priority programs it). Untagged frames and priorities no
// queue selects go to queue 0. A priority selected by two queues is a
// programming error the databook rules out: a fault, and the lower queue wins.
func (m *Model) steerLocked(frame []byte) int {
	if len(frame) < 16 || frame[12] != 0x81 || frame[13] != 0x00 {
		return 0
	}
	prio := frame[14] >> 5
	ctrl := uint64(m.plain[regMACRxqCtrl3])<<32 | uint64(m.plain[regMACRxqCtrl2])
	q := -1
	for n := 0; n < m.nrx; n++ {
		if ctrl>>(8*uint(n)+uint(prio))&1 == 0 {
			continue
		}
		if q >= 0 {
			m.faults.Add("rx", "MAC_RxQ_Ctrl2", uint64(regMACRxqCtrl2), "VLAN priority %d is selected by RX queues %d and %d (PSRQ): each priority must select one queue", prio, q, n)
			break
		}
		q = n
	}
	return max(q, 0)
}

// InjectQueue is Inject into MTL RX queue q, as if the MAC's classifier
// (VLAN priority, RSS, ...) had steered the frame there.
func (m *Model) InjectQueue(q int, frame []byte) bool {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	ok := m.receiveLocked(q, frame)
	m.mu.Unlock()
	return ok
}

// speedMatchLocked reports whether MAC_Configuration's PS/FES select the speed
// the PHY negotiated (10: PS; 100: PS|FES; 1000: neither; 2500: FES) and DM its
// duplex. With a mismatch the MAC samples the interface at the wrong rate, or
// sees collisions on a full-duplex link: frames are lost.
func (m *Model) speedMatchLocked() bool {
	st := m.phy.Link()
	if st.FullDuplex != (m.macConfig&cfgDM != 0) {
		return false
	}
	var want uint32
	switch st.SpeedMbps {
	case 10:
		want = cfgPS
	case 100:
		want = cfgPS | cfgFES
	case 2500:
		want = cfgFES
	}
	return m.macConfig&(cfgPS|cfgFES) == want
}

func (m *Model) receiveLocked(q int, frame []byte) bool {
	if m.closed || m.inj.On(sim.FaultRemoval) || m.inResetLocked() || m.macConfig&cfgRE == 0 || !m.phy.LinkUp() || !m.speedMatchLocked() || !m.pathUpLocked(false) {
		m.cnt.RxNoLink++
		return false
	}
	if q < 0 || q >= m.nrx {
		m.faults.Add("rx", "", uint64(q), "frame injected into MTL RX queue %d; the model has %d", q, m.nrx)
		return false
	}
	n := len(frame)
	if n < minFrame {
		m.mmcInc(mmcRxFramesGB, 1)
		m.mmcInc(mmcRxUndersize, 1)
		m.cnt.RxErrors++
		return false
	}
	etype := uint16(frame[12])<<8 | uint16(frame[13])
	limit := maxStdFrame
	switch {
	case m.macConfig&cfgJE != 0:
		limit = maxJumboFrame
	case m.macConfig&cfg2K != 0:
		limit = max2KFrame
	}
	if etype == 0x8100 || etype == 0x88a8 {
		limit += vlanLen
	}
	wire := n + fcsLen
	m.mmcInc(mmcRxFramesGB, 1)
	m.mmcInc(mmcRxOctetsGB, uint32(wire))
	if n > limit {
		m.mmcInc(mmcRxOversize, 1)
		m.cnt.RxErrors++
		return false
	}
	m.mmcInc(mmcRx64+mmcBucket(wire), 1)
	m.mmcInc(mmcRxOctetsG, uint32(wire))
	mcast := frame[0]&1 != 0
	bcast := mcast && frame[0]&frame[1]&frame[2]&frame[3]&frame[4]&frame[5] == 0xff
	switch {
	case bcast:
		m.mmcInc(mmcRxBcastG, 1)
	case mcast:
		m.mmcInc(mmcRxMcastG, 1)
	default:
		m.mmcInc(mmcRxUcastG, 1)
	}
	if !m.acceptLocked(frame[:6], mcast, bcast) {
		m.cnt.RxFiltered++
		return false
	}
	return m.toMTLLocked(q, frame) // rxfifo.go: on to dmaRxLocked, or waits
}

// dmaRxLocked moves a frame from MTL RX queue q to its DMA channel's ring. It
// reports rxNoDesc, having written nothing, when the channel has too few
// descriptors (RBU set, the channel suspended).
func (m *Model) dmaRxLocked(q int, frame []byte) rxOutcome {
	n := len(frame)
	etype := uint16(frame[12])<<8 | uint16(frame[13])
	mq := &m.mtlq[q]
	if m.rxqCtrl0>>(2*q)&rxqEnMask == 0 {
		m.overflowLocked(mq)
		return rxDropped
	}
	c := int(m.mtlRxqMap[q/4] >> (rxqDMAMapWidth * (q % 4)) & 0xf)
	if c >= m.nrx {
		m.faults.Add("rx", regName(regMTLRxqDMAMap+uint32(q/4)*4), uint64(q), "MTL RX queue %d is mapped to DMA channel %d; the model has %d RX channels", q, c, m.nrx)
		m.overflowLocked(mq)
		return rxDropped
	}
	ch := &m.ch[c]
	r := &ch.rx
	if !r.run {
		m.overflowLocked(mq)
		return rxDropped
	}
	coe, csumBad := m.rxCOE(frame)
	if csumBad && mq.rxOp&mtlDisTCPEF == 0 {
		m.cnt.RxErrors++ // the MTL drops it (rxcoe.go)
		return rxDropped
	}

	strip := (etype >= 0x600 && m.macConfig&cfgCST != 0) || (etype < 0x600 && m.macConfig&cfgACS != 0)
	// The outer C-VLAN tag (MAC_VLAN_Tag EVLRXS: into RDES0 with RS0V; EVLS
	// always-strip: out of the frame). The FCS in the buffer stays the one
	// the frame had on the wire.
	wireFrame := frame
	vt := m.plain[regMACVLANTag]
	var tci uint32
	reportTag := etype == 0x8100 && n >= 18 && vt&vlanEVLRXS != 0
	if reportTag {
		tci = uint32(frame[14])<<8 | uint32(frame[15])
	}
	if etype == 0x8100 && n >= 18 && vt&vlanEVLSMask == vlanEVLSAlways {
		if m.vlanBuf == nil {
			m.vlanBuf = make([]byte, maxTxFrame+vlanLen)
		}
		k := copy(m.vlanBuf, frame[:12])
		k += copy(m.vlanBuf[k:], frame[16:])
		frame = m.vlanBuf[:k]
		n = k
	}
	ts := m.ptp.rxTimestamping()
	ctxt := uint32(0) // a context descriptor after the frame, for its timestamp
	if ts {
		ctxt = 1
	}
	total := n
	if !strip {
		total += fcsLen
	}
	bs := int(ch.rxCtrl&rxcRBSZMask) >> 1
	ndesc := uint32((total + bs - 1) / bs)
	size := r.n()
	base := m.ringBase(r)

	// Pass 1: every descriptor the frame needs must be the device's.
	if out, ok := m.rxDescsOwnedLocked(c, mq, r, ndesc+ctxt); !ok {
		return out
	}

	// Pass 2: the buffers.
	var crc [fcsLen]byte
	if !strip {
		le.PutUint32(crc[:], crc32.ChecksumIEEE(wireFrame))
	}
	last, ok := m.rxCopyLocked(c, mq, r, ndesc, bs, total, frame, crc[:])
	if !ok {
		return rxDropped
	}

	// Pass 3: write-back, DES3 last in each descriptor.
	lt := lengthType(etype, wireFrame)
	idx := r.cur
	done := 0
	var ioc bool
	for k := uint32(0); k < ndesc; k++ {
		d, err := m.mem.View("rx-writeback", base+uint64(idx)*descSize, descSize)
		if err != nil {
			m.dmaErrorLocked(c, false)
			m.overflowLocked(mq)
			return rxDropped
		}
		chunk := min(bs, total-done)
		done += chunk
		w3 := uint32(done) & rw3PLMask
		if k == 0 {
			w3 |= d3FD
		}
		var w0, w1 uint32
		if k == ndesc-1 {
			w3 |= d3LD | lt<<rw3LTShift
			if m.inj.Take(sim.FaultDescError) { // fault.go
				w3 |= rw3ES | rw3CE
			}
			ioc = le.Uint32(d[des3:])&rd3IOC != 0
			if reportTag {
				w0, w3 = tci, w3|rw3RS0V
			}
			w1 = coe
			if ts {
				w1 |= rd1TSA
			}
			if w1 != 0 {
				w3 |= rw3RS1V // RDES1 holds status (Linux reads TSA only with it)
			}
		}
		le.PutUint32(d[des0:], w0)
		le.PutUint32(d[des1:], w1)
		le.PutUint32(d[des2:], 0)
		storeDES3(d, w3)
		idx = (idx + 1) % size
	}
	if ts {
		d, err := m.mem.View("rx-writeback", base+uint64(idx)*descSize, descSize)
		if err != nil {
			m.dmaErrorLocked(c, false)
			return rxDropped
		}
		sec, ns := m.ptp.now()
		le.PutUint32(d[des0:], ns)
		le.PutUint32(d[des1:], sec)
		le.PutUint32(d[des2:], 0)
		storeDES3(d, d3CTXT)
	}
	r.advance(ndesc + ctxt)
	r.curBuf = last
	m.cnt.RxFrames++
	m.cnt.RxBytes += uint64(total)
	m.rxCompleteLocked(c, ioc) // RI now, or the RX watchdog (coalesce.go)
	return rxDone
}

// rxDescsOwnedLocked is pass 1 of a receive on channel c: the n descriptors
// from the current one must all be the DMA's (OWN, before the tail, as
// fetched), else the frame waits (no descriptor) or is dropped (a malformed
// one, written back with DE). ok is false with the outcome to return.
func (m *Model) rxDescsOwnedLocked(c int, mq *mtlQueue, r *ring, n uint32) (rxOutcome, bool) {
	if r.susp != suspNone {
		return m.noDescLocked(c, mq, false), false
	}
	size, base, eame := r.n(), m.ringBase(r), m.eame()
	idx := r.cur
	for k := uint32(0); k < n; k++ {
		if k >= size || (k > 0 && idx == r.tailRaw) {
			return m.noDescLocked(c, mq, false), false
		}
		d, err := m.mem.View("rx-desc", base+uint64(idx)*descSize, descSize)
		if err != nil {
			m.dmaErrorLocked(c, false)
			m.overflowLocked(mq)
			return rxDropped, false
		}
		d3 := loadDES3(d)
		if d3&d3OWN == 0 {
			return m.noDescLocked(c, mq, k == 0), false
		}
		m.checkFetchedLocked("RX", r, idx, d, base+uint64(idx)*descSize)
		if bad := m.checkRxDescLocked(d, d3, eame, base+uint64(idx)*descSize); bad {
			// A malformed descriptor: the frame is dropped, the descriptors
			// up to this one are written back with DE and skipped.
			m.rxDescErrorLocked(r, base, k+1)
			m.cnt.RxErrors++
			return rxDropped, false
		}
		idx = (idx + 1) % size
	}
	return rxDone, true
}

// rxCopyLocked is pass 2: the frame (total bytes on the wire, crc its FCS
// when kept) into the buffers of the n descriptors from the current one, bs
// bytes each. It returns the last buffer's address; ok is false when a
// descriptor or buffer could not be reached (a fatal bus error, counted).
func (m *Model) rxCopyLocked(c int, mq *mtlQueue, r *ring, n uint32, bs, total int, frame, crc []byte) (last uint64, ok bool) {
	size, base, eame := r.n(), m.ringBase(r), m.eame()
	idx, done := r.cur, 0
	for k := uint32(0); k < n; k++ {
		d, err := m.mem.View("rx-desc", base+uint64(idx)*descSize, descSize)
		if err != nil { // freed under the DMA's feet
			m.dmaErrorLocked(c, false)
			m.overflowLocked(mq)
			return 0, false
		}
		addr := descAddr(d, eame)
		chunk := min(bs, total-done)
		buf, err := m.mem.View("rx-buffer", addr, chunk)
		if err != nil {
			m.dmaErrorLocked(c, false)
			m.overflowLocked(mq)
			return 0, false
		}
		copyWithFCS(buf, frame, crc, done)
		done += chunk
		last = addr
		idx = (idx + 1) % size
	}
	return last, true
}

// fetchRxLocked is the descriptor prefetch a tail write allows a running RX
// DMA: the descriptors from the old tail up to the new one are the DMA's from
// that moment (DMA_CH_RxDesc_Tail_Pointer: "the DMA ... may fetch the
// descriptors up to the tail"), so each must be complete, with OWN, when the
// tail moves over it, and must not change afterwards (receiveLocked checks that
// through checkFetchedLocked). A driver that moves the tail first and fills the
// descriptors after it races the DMA: a prefetched descriptor without OWN
// suspends the channel (RBU), one fetched half-written sends a frame to a
// stale buffer address.
func (m *Model) fetchRxLocked(r *ring, from uint32) {
	n := r.n()
	if from == noTail || r.tailRaw == noTail || !m.mem.DMAEnabled() {
		return
	}
	if uint32(len(r.fetchedOK)) != n {
		r.fetched, r.fetchedOK = make([]byte, int(n)*descSize), make([]bool, n)
	}
	// Only the part of [from, tail) from the DMA's current descriptor on is
	// handed over when cur lies inside it (a tail moved back behind cur).
	tail, from := r.tailRaw%n, from%n
	if c := (r.cur%n + n - from) % n; c > 0 && c < (tail+n-from)%n {
		from = r.cur % n
	}
	base := m.ringBase(r)
	for i, k := from, uint32(0); i != tail && k < n; k++ {
		at := base + uint64(i)*descSize
		if m.mem.Check(at, descSize) != nil {
			return // faulted when the DMA gets there
		}
		d, err := m.mem.View("rx-fetch", at, descSize)
		if err != nil {
			return
		}
		copy(r.fetched[int(i)*descSize:], d)
		r.fetchedOK[i] = true
		if loadDES3(d)&d3OWN == 0 {
			m.faults.Add("rx-desc", "RxDesc_Tail", at, "RX descriptor %d handed to the running DMA by the tail write without OWN: fill the descriptor and set RDES3.OWN before moving the tail", i)
			return // once per tail write
		}
		if i++; i == n {
			i = 0
		}
	}
}

// rxDescErrorLocked writes back k descriptors from cur with DE and ES and
// moves past them.
func (m *Model) rxDescErrorLocked(r *ring, base uint64, k uint32) {
	idx := r.cur
	for j := uint32(0); j < k; j++ {
		if d, err := m.mem.View("rx-writeback", base+uint64(idx)*descSize, descSize); err == nil {
			w3 := rw3DE | rw3ES
			if j == 0 {
				w3 |= d3FD
			}
			if j == k-1 {
				w3 |= d3LD
			}
			le.PutUint32(d[des0:], 0)
			le.PutUint32(d[des1:], 0)
			le.PutUint32(d[des2:], 0)
			storeDES3(d, w3)
		}
		idx = (idx + 1) % r.n()
	}
	r.advance(k)
}

// checkRxDescLocked reports a malformed RX descriptor (with a fault).
func (m *Model) checkRxDescLocked(d []byte, d3 uint32, eame bool, at uint64) bool {
	switch {
	case d3&rd3BUF1V == 0:
		m.faults.Add("rx-desc", "", at, "RX descriptor owned by the DMA without BUF1V (DES3 0x%08x)", d3)
	case d3&rd3BUF2V != 0:
		m.faults.Add("rx-desc", "", at, "RX descriptor with BUF2V: buffer 2 is not modelled")
	case !eame && le.Uint32(d[des1:]) != 0:
		m.faults.Add("rx-desc", "", at, "RX buffer address high word 0x%x in DES1 with DMA_SysBus_Mode.EAME off: the DMA would use only DES0", le.Uint32(d[des1:]))
	default:
		return false
	}
	return true
}

// noDescLocked is the RX DMA finding no descriptor for a frame: RBU; ownSusp:
// the descriptor at cur was not the DMA's, which suspends it until a tail
// write. The frame stays in the MTL FIFO: nothing counts it yet.
func (m *Model) noDescLocked(c int, mq *mtlQueue, ownSusp bool) rxOutcome {
	_ = mq
	ch := &m.ch[c]
	if ownSusp {
		ch.rx.susp = suspOwn
	}
	m.cnt.RxNoDesc++
	m.raiseLocked(c, stRBU)
	return rxNoDesc
}

// overflowLocked drops a frame the MTL cannot pass to a DMA channel.
func (m *Model) overflowLocked(mq *mtlQueue) {
	mq.rxOvf++
	mq.intCtrl |= mtlRXOVFIS
	m.mmcInc(mmcRxFIFOOverfl, 1)
	m.cnt.RxOverflow++
}

// copyWithFCS copies bytes [off, off+len(dst)) of frame followed by fcs into dst.
func copyWithFCS(dst, frame, fcs []byte, off int) {
	if off < len(frame) {
		k := copy(dst, frame[off:])
		copy(dst[k:], fcs)
		return
	}
	copy(dst, fcs[off-len(frame):])
}

// lengthType is RDES3.LT for a frame with this EtherType/length field.
func lengthType(etype uint16, frame []byte) uint32 {
	switch {
	case etype < 0x600:
		return ltLength
	case etype == 0x0806:
		return ltARP
	case etype == 0x8100 || etype == 0x88a8:
		if len(frame) >= 18 {
			inner := uint16(frame[16])<<8 | uint16(frame[17])
			if inner == 0x8100 || inner == 0x88a8 {
				return ltDVLAN
			}
		}
		return ltVLAN
	case etype == 0x8808:
		return ltMACCtl
	}
	return ltType
}

// acceptLocked is the MAC's destination address filter (databook "MAC
// receive filtering"): RA and PR pass everything; broadcast passes unless DBF;
// multicast passes with PM, with its hash bit when HMC (the 64-bin hash: the
// top 6 bits of the bit-reversed CRC-32 of the address), or a perfect match
// when HMC is clear or HPF set; unicast needs a perfect match with an enabled
// MAC_Address register (HUC is not modelled).
func (m *Model) acceptLocked(dst []byte, mcast, bcast bool) bool {
	pf := m.pktFilter
	if pf&(pfRA|pfPR) != 0 {
		return true
	}
	if bcast {
		return pf&pfDBF == 0
	}
	lo := uint32(dst[0]) | uint32(dst[1])<<8 | uint32(dst[2])<<16 | uint32(dst[3])<<24
	hi := uint32(dst[4]) | uint32(dst[5])<<8
	perfect := false
	for i := 0; i < nMACAddr; i++ {
		if m.addrEffHi[i]&addrAE != 0 && m.addrEffLo[i] == lo && m.addrEffHi[i]&0xffff == hi {
			perfect = true
			break
		}
	}
	if !mcast {
		return perfect
	}
	if pf&pfPM != 0 {
		return true
	}
	if pf&pfHMC != 0 {
		h := bits.Reverse32(crc32.ChecksumIEEE(dst)) >> (32 - 6)
		if m.hash[h>>5]&(1<<(h&31)) != 0 {
			return true
		}
		return pf&pfHPF != 0 && perfect
	}
	return perfect
}
