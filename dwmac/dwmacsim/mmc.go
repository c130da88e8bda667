package dwmacsim

// MMC management counters (databook "MMC registers"; stmmac/mmc_core.c), at
// 0x700. MMC_Control: CNTRST (bit 0, self-clearing) zeroes every counter,
// CNTSTOPRO (1) makes counters stick at their maximum instead of rolling
// over, RSTONRD (2) clears a counter when it is read, CNTFREEZ (3) freezes
// them. The model counts the frame and octet counters the MAC's RX and TX
// paths update (octets include the FCS, as on the wire); the other counters of
// the block (errors it never sees, the IPC block) read 0. Counters are
// read-only: writing one is a fault.

func (m *Model) mmcInc(off uint32, n uint32) {
	if m.mmcCntrl&mmcCNTFREEZ != 0 {
		return
	}
	p := &m.mmc[(off-mmcFirst)/4]
	v := *p + n
	if v < *p && m.mmcCntrl&mmcCNTSTOPRO != 0 {
		v = ^uint32(0)
	}
	*p = v
}

// mmcBucket is the offset of the size bucket of a frame of wire bytes,
// relative to the 64-byte bucket.
func mmcBucket(wire int) uint32 {
	switch {
	case wire <= 64:
		return 0
	case wire <= 127:
		return 4
	case wire <= 255:
		return 8
	case wire <= 511:
		return 12
	case wire <= 1023:
		return 16
	}
	return 20
}

func (m *Model) readMMCLocked(r uint32) uint32 {
	switch r {
	case mmcCntrl:
		return m.mmcCntrl
	case mmcRxIntr, mmcTxIntr, mmcIPCIntr:
		return 0 // no counter interrupt is raised
	case mmcRxIntrMask:
		return m.mmcMasks[0]
	case mmcTxIntrMask:
		return m.mmcMasks[1]
	case mmcIPCIntrMask:
		return m.mmcMasks[2]
	}
	if r < mmcFirst || r%4 != 0 {
		m.Unimplemented("read32", regMMCBase+r)
		return 0
	}
	p := &m.mmc[(r-mmcFirst)/4]
	v := *p
	if m.mmcCntrl&mmcRSTONRD != 0 {
		*p = 0
	}
	return v
}

func (m *Model) writeMMCLocked(r, val uint32) {
	switch r {
	case mmcCntrl:
		if val&mmcCNTRST != 0 {
			m.mmc = [mmcRegs]uint32{}
		}
		m.mmcCntrl = val &^ mmcCNTRST
	case mmcRxIntrMask:
		m.mmcMasks[0] = val
	case mmcTxIntrMask:
		m.mmcMasks[1] = val
	case mmcIPCIntrMask:
		m.mmcMasks[2] = val
	default:
		m.readOnly(regMMCBase+r, val)
	}
}
