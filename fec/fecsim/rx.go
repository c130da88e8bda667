package fecsim

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/xnic-dev/xnic/sim"
)

// Receive path (RM "Receive buffer descriptors"; fec_main.c fec_enet_rx_queue).
// A frame arriving from the wire (Inject, or a wire given to Attach) is
// checked, filtered, assigned a ring, and written by DMA into the buffers of the
// ring's next empty BDs, starting at the device-owned current BD:
//
//   - the data written is [2 pad bytes if RACC.SHIFT16] frame [4-byte FCS,
//     unless RCR.CRCFWD or RCR.PADEN strip it], truncated at FTRL (TR set);
//   - each BD takes up to MRBR bytes; a BD that is not the last gets length
//     MRBR, the last gets L, the frame's total length (pad and FCS included,
//     as on the hardware and in QEMU) and the BC/MC/M/LG/TR flags;
//   - with enhanced BDs (ECR.EN1588) the device also writes esc (VLAN flag,
//     keeping the driver's INT), prot 0, BDU (bit 31) and the 1588 timestamp;
//   - E is cleared last, as one 32-bit store of length and status;
//   - EIR.RXB per BD and EIR.RXF for the frame (with enhanced BDs only where
//     the BD's esc.INT is set);
//   - W moves the current BD back to the ring start.
//
// After each frame the device looks at the next BD: if it is not empty, RDAR
// clears, and later frames wait in the receive FIFO (rxfifo.go) until
// software writes RDAR again. A frame that needs more empty BDs than there
// are waits too (the hardware would write a partial frame; the model never
// does).
//
// Ownership: a BD with E set and its buffer belong to the device until it
// clears E; the driver owns it again afterwards and gives it back by setting E
// (and writing RDAR).

// Inject delivers frame as if it arrived from the wire: destination MAC to the
// end of the payload, no preamble and no FCS. It reports whether the frame was
// written to an RX ring. frame is not kept. It does not allocate.
func (m *Model) Inject(frame []byte) bool {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	ok := m.receiveLocked(frame, false, false)
	m.mu.Unlock()
	return ok
}

// InjectBadFCS delivers frame as if it arrived with a wrong FCS: the MAC
// counts it (RMON_R_CRC_ALIGN, IEEE_R_CRC) and drops it.
func (m *Model) InjectBadFCS(frame []byte) bool {
	m.wire.Arrive(len(frame))
	m.mu.Lock()
	ok := m.receiveLocked(frame, false, true)
	m.mu.Unlock()
	return ok
}

// macSpeedLocked is the speed the MAC is set to (ECR.SPEED, RCR.RMII_10T).
func (m *Model) macSpeedLocked() int {
	switch {
	case m.ecr&ecrSPEED != 0:
		return 1000
	case m.rcr&rcrRMII10T != 0:
		return 10
	}
	return 100
}

// speedMismatchLocked reports whether the MAC's speed differs from the PHY's
// resolved speed (the data path then carries garbage).
func (m *Model) speedMismatchLocked() (mac, phy int, bad bool) {
	st := m.phy.Link()
	mac = m.macSpeedLocked()
	return mac, st.SpeedMbps, st.Up && st.SpeedMbps != mac
}

func (m *Model) receiveLocked(frame []byte, loop, badFCS bool) bool {
	if m.closed.Load() || m.ecr&ecrETHEREN == 0 || (!loop && !m.phy.LinkUp()) || m.socStoppedLocked() || m.inj.On(sim.FaultRemoval) {
		m.cnt.RxOff++
		return false
	}
	if !loop {
		if mac, phy, bad := m.speedMismatchLocked(); bad {
			m.faults.Add("rx", "ECR", uint64(regECR), "frame received at %d Mb/s with the MAC set to %d Mb/s (ECR.SPEED / RCR.RMII_10T): the data path would carry garbage", phy, mac)
			m.cnt.RxErrors++
			return false
		}
	}
	n := len(frame)
	m.mibInc(regRMONRPackets)
	m.mibAdd(regRMONROctets, n+4)
	if n > maxFrameModel {
		m.mibInc(regRMONROversize)
		m.cnt.RxErrors++
		return false
	}
	if n < 60 {
		m.mibInc(regRMONRUndersize)
		m.cnt.RxErrors++
		return false
	}
	if badFCS {
		m.mibInc(regRMONRCRCAlign)
		m.mibInc(regIEEERCRC)
		m.cnt.RxErrors++
		return false
	}
	m.mibInc(regRMONRP64 + 4*sizeBucket(n+4))
	mcast := frame[0]&1 != 0
	bcast := mcast && frame[0]&frame[1]&frame[2]&frame[3]&frame[4]&frame[5] == 0xFF
	if bcast {
		m.mibInc(regRMONRBC)
	} else if mcast {
		m.mibInc(regRMONRMC)
	}
	match := m.matchLocked(frame[:6], mcast, bcast)
	if !match && m.rcr&rcrPROM == 0 {
		m.cnt.RxFiltered++
		return false
	}
	return m.toFIFOLocked(frame) // rxfifo.go: on to dmaRxLocked, or waits
}

// dmaRxLocked writes a frame the MAC accepted into its ring's next empty BDs.
// It reports rxNoDesc, having written nothing, when the ring is not active or
// has too few empty BDs.
func (m *Model) dmaRxLocked(frame []byte) rxOutcome {
	n := len(frame)
	mcast := frame[0]&1 != 0
	bcast := mcast && frame[0]&frame[1]&frame[2]&frame[3]&frame[4]&frame[5] == 0xFF
	match := m.matchLocked(frame[:6], mcast, bcast)
	q := m.classifyLocked(frame)
	r := &m.rings[q]
	if !r.rdar {
		m.cnt.RxNoBD++
		return rxNoDesc
	}

	// Build what goes to memory: pad, frame, FCS.
	data := m.rxScratch[:0]
	if m.racc&racc16 != 0 {
		data = append(data, 0, 0)
	}
	data = append(data, frame...)
	if m.rcr&(rcrCRCFWD|rcrPADEN) == 0 {
		data = binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(frame))
	}
	var flags uint16
	maxFL := int(m.rcr&rcrMaxFLMask) >> rcrMaxFLShift
	if n+4 > maxFL {
		flags |= rxLG // counted in RMON_R_OVERSIZE once written
	}
	if ftrl := int(m.ftrl); len(data) > ftrl {
		data = data[:ftrl]
		flags |= rxTR
	}
	if bcast {
		flags |= rxBC
	} else if mcast {
		flags |= rxMC
	}
	if !match {
		flags |= rxM
	}

	ext := m.ecr&ecrEN1588 != 0
	le := m.ecr&ecrDBSWP != 0
	size := uint32(bdSizeLeg)
	if ext {
		size = bdSizeExt
	}
	bufSize := int(r.mrbr)
	nbd := (len(data) + bufSize - 1) / bufSize
	// Check that nbd empty BDs follow, without writing anything.
	cur := r.rxCur
	for i := 0; i < nbd; i++ {
		d, err := m.mem.View("rx-desc", uint64(cur), int(size))
		if err != nil {
			m.cnt.RxErrors++
			r.rdar = false
			return rxDropped
		}
		b := bdView{d, le}
		sc := b.sc()
		if sc&rxE == 0 {
			r.rdar = false
			m.cnt.RxNoBD++
			return rxNoDesc
		}
		cur = m.nextBD(r.rdsr, cur, sc, size)
	}

	if flags&rxLG != 0 {
		m.mibInc(regRMONROversize)
	}
	var events uint32
	cur = r.rxCur
	ts := m.timerNowLocked()
	for i := 0; i < nbd; i++ {
		d, _ := m.mem.View("rx-desc", uint64(cur), int(size))
		b := bdView{d, le}
		sc := b.sc()
		chunk := data[i*bufSize : min(len(data), (i+1)*bufSize)]
		addr := b.addr()
		if addr%rxBufAlign != 0 {
			m.faults.Add("rx", "", uint64(addr), "RX buffer address 0x%08x is not %d-byte aligned", addr, rxBufAlign)
			m.cnt.RxErrors++
			r.rdar = false
			return rxDropped
		}
		// The device may write up to MRBR bytes into any buffer: all of them
		// must be the device's.
		buf, err := m.mem.View("rx-buffer", uint64(addr), bufSize)
		if err != nil {
			m.cnt.RxErrors++
			r.rdar = false
			return rxDropped
		}
		copy(buf, chunk)
		last := i == nbd-1
		length := uint16(bufSize)
		nsc := sc & rxKeep
		if last {
			length = uint16(len(data))
			nsc |= rxL | flags
			if m.inj.Take(sim.FaultDescError) { // fault.go
				nsc |= rxCR
			}
		}
		raise := true
		if ext {
			esc := b.esc()
			raise = esc&rxeINT != 0
			nesc := esc & rxeINT
			if last && n >= 18 && binary.BigEndian.Uint16(frame[12:]) == 0x8100 {
				nesc |= rxeVLAN
			}
			b.put32(bdESC, nesc)
			b.put32(bdProt, 0)
			b.put32(bdBDU, bduDone)
			b.put32(bdTS, ts)
		}
		b.writeHead(length, nsc)
		if raise {
			events |= eirRXBq[q]
			if last {
				events |= eirRXFq[q]
			}
		}
		cur = m.nextBD(r.rdsr, cur, sc, size)
	}
	r.rxCur = cur
	// The device prefetches the next BD: no empty BD, no more reception.
	if d, err := m.mem.View("rx-desc", uint64(cur), int(size)); err != nil || (bdView{d, le}).sc()&rxE == 0 {
		r.rdar = false
	}
	m.mibInc(regIEEERFrameOK)
	m.mibAdd(regIEEEROctetsOK, n+4)
	m.cnt.RxFrames++
	m.cnt.RxBytes += uint64(n)
	if events = m.coalesceLocked(q, events); events != 0 {
		m.raiseLocked(events)
	}
	return rxDone
}

// nextBD is the BD after the one at cur (status sc): the ring start after W.
func (m *Model) nextBD(start, cur uint32, sc uint16, size uint32) uint32 {
	if sc&rxW != 0 { // W is bit 13 in both RX and TX BDs
		return start
	}
	return cur + size
}

// activateRxLocked is a write to RDAR(q): the ring becomes active if the
// current BD is empty, otherwise RDAR stays clear (not an error on the
// hardware; the model records no fault, except for the signs of a forgotten
// ECR.DBSWP).
func (m *Model) activateRxLocked(q int, off uint32) {
	r := &m.rings[q]
	if m.ecr&ecrETHEREN == 0 {
		m.faults.Add("write32", regName(off), uint64(off), "RDAR written while ECR.ETHEREN is clear: the write is ignored and nothing is received")
		return
	}
	if r.mrbr == 0 {
		m.faults.Add("write32", regName(off), uint64(off), "RDAR%s written with MRBR%s unset: the ENET has no buffer size", ringSuffix(q), ringSuffix(q))
		return
	}
	size := bdSizeLeg
	if m.ecr&ecrEN1588 != 0 {
		size = bdSizeExt
	}
	d, err := m.mem.View("rx-desc", uint64(r.rxCur), size)
	if err != nil {
		r.rdar = false
		return
	}
	b := bdView{d, m.ecr&ecrDBSWP != 0}
	if b.sc()&rxE != 0 {
		r.rdar = true
		m.drainRxFIFOLocked() // rxfifo.go: waiting frames take the empty BDs
		return
	}
	r.rdar = false
	if b.otherOrderSC()&rxE != 0 {
		m.faults.Add("write32", regName(off), uint64(off), "RX BD at 0x%08x is empty only in the other byte order: ECR.DBSWP is %v (set it for little-endian descriptors)", r.rxCur, m.ecr&ecrDBSWP != 0)
	}
}

func ringSuffix(q int) string {
	switch q {
	case 1:
		return "1"
	case 2:
		return "2"
	}
	return ""
}

// matchLocked is the address filter without PROM: broadcast unless BC_REJ,
// multicast through the group hash (GAUR/GALR), unicast by PALR/PAUR or the
// individual hash (IAUR/IALR). The hash is bits 31:26 of the Ethernet CRC of
// the address (the CRC register before the final inversion).
func (m *Model) matchLocked(dst []byte, mcast, bcast bool) bool {
	if bcast {
		return m.rcr&rcrBCREJ == 0
	}
	if !mcast {
		if binary.BigEndian.Uint32(dst[0:4]) == m.palr && uint32(binary.BigEndian.Uint16(dst[4:6])) == m.paur>>16 {
			return true
		}
	}
	h := ^crc32.ChecksumIEEE(dst[:6]) >> 26
	hi, lo := m.iaur, m.ialr
	if mcast {
		hi, lo = m.gaur, m.galr
	}
	if h >= 32 {
		return hi&(1<<(h-32)) != 0
	}
	return lo&(1<<h) != 0
}

// classifyLocked picks the RX ring (i.MX8MP AVB classification): a VLAN-tagged
// frame whose priority matches one of RCMRn's four compare fields (with
// MATCHEN) goes to ring n; everything else to ring 0.
func (m *Model) classifyLocked(frame []byte) int {
	if m.info.rings == 1 || len(frame) < 18 || binary.BigEndian.Uint16(frame[12:]) != 0x8100 {
		return 0
	}
	pcp := uint32(frame[14] >> 5)
	for i, v := range m.rcmr {
		if v&rcmrMatchEn == 0 {
			continue
		}
		for k := 0; k < 4; k++ {
			if v>>(4*k)&7 == pcp {
				return i + 1
			}
		}
	}
	return 0
}

// sizeBucket maps a wire length (with FCS) to the RMON size counters:
// 64, 65-127, 128-255, 256-511, 512-1023, 1024-2047, >= 2048.
func sizeBucket(n int) uint32 {
	switch {
	case n <= 64:
		return 0
	case n <= 127:
		return 1
	case n <= 255:
		return 2
	case n <= 511:
		return 3
	case n <= 1023:
		return 4
	case n <= 2047:
		return 5
	}
	return 6
}

// mibInc and mibAdd count in the MIB while it is enabled.
func (m *Model) mibInc(off reg) { m.mibAdd(off, 1) }

func (m *Model) mibAdd(off reg, n int) {
	if m.mibc&(mibcDIS|mibcCLEAR) != 0 {
		return
	}
	m.mib[(off-regMIBFirst)/4] += uint32(n)
}
