package dwmacsim

// Time-based scheduling (databook "Time Based Scheduling"; HW_FEATURE3.TBSSEL;
// Linux dwmac4_enable_tbs, dwmac4_set_tbs, stmmac_xsk_request_launch_time).
//
// A TX channel with DMA_CH_Tx_Control.EDSE reads 32-byte enhanced descriptors
// (dma.go): ETDES4-7 before the normal TDES0-3. When the first descriptor of
// a frame has ETDES4.LTV, the frame's launch time is ETDES4 LT 7:0 (the low 8
// bits of the system time's seconds) and ETDES5 31:8 (its nanoseconds, the low
// 8 bits not compared), and the MTL does not start the frame before the
// system time (ptp.go) reaches it. Frames behind it in the ring wait too: a
// queue sends in order. The comparison sees only 8 bits of seconds: the model
// takes a launch time within 128 s ahead of the clock as in the future and
// any other as passed (sent at once). Launch expiry (MTL_TBS_CTRL.LEOV) and
// EST-relative launch times (ESTM, GSN) are not modelled: GSN other than 0,
// reserved bits set, nanoseconds of 10^9 or more, or a launch time while the
// system time does not run (TSENA clear) are faults, and the frame is
// refused.
//
// The model looks again at a holding channel every few hundred microseconds
// of host time (sim.Timer.ArmIdle: Settle does not wait for launch times), so
// a frame leaves at most about that late, never early.

// launchState is what the first descriptor of a frame says about launch time.
type launchState uint8

const (
	launchNone launchState = iota // no launch time, or it has passed
	launchHold                    // in the future: hold the frame
	launchBad                     // a fault: refuse the frame
)

// launchLocked reads ETDES4-7 of the enhanced descriptor whose normal part is
// at at and decides whether its frame may go now.
func (m *Model) launchLocked(at uint64) launchState {
	e, err := m.mem.View("tx-desc", at-descSize, descSize)
	if err != nil {
		return launchNone // the ring check already covered it; the normal part is read next
	}
	d4, d5 := le.Uint32(e[0:]), le.Uint32(e[4:])
	if d4&tdes4LTV == 0 {
		return launchNone
	}
	var why string
	switch {
	case d4&tdes4GSNMask != 0:
		why = "ETDES4.GSN (an EST gate slot): launch times relative to the EST cycle are not modelled"
	case d4&^(tdes4LTV|tdes4GSNMask|tdes4LTSecs) != 0 || d5&^tdes5LTNsMask != 0 || le.Uint32(e[8:]) != 0 || le.Uint32(e[12:]) != 0:
		why = "reserved bits set in ETDES4-7"
	case d5 >= nsPerSec:
		why = "launch time nanoseconds of 10^9 or more"
	case m.ptp.tcr&tcrTSENA == 0:
		why = "a launch time while the system time does not run (MAC_Timestamp_Control.TSENA clear): the frame would wait for ever"
	}
	if why != "" {
		m.faults.Add("tx-desc", "", at-descSize, "%s (ETDES4 0x%08x ETDES5 0x%08x)", why, d4, d5)
		return launchBad
	}
	sec, ns := m.ptp.now()
	now := int64(sec&tdes4LTSecs)*nsPerSec + int64(ns)
	d := int64(d4&tdes4LTSecs)*nsPerSec + int64(d5) - now
	const wrap = 256 * nsPerSec
	switch {
	case d >= wrap/2:
		d -= wrap
	case d < -wrap/2:
		d += wrap
	}
	if d > 0 {
		return launchHold
	}
	return launchNone
}

// holdLocked makes channel c wait for its launch time: tbsT looks again.
func (m *Model) holdLocked(c int) {
	m.tbsWait |= 1 << c
	m.tbsT.ArmIdle()
}

// launchDue is tbsT's work: the holding channels try again.
func (m *Model) launchDue() {
	m.mu.Lock()
	m.txPend |= m.tbsWait
	m.tbsWait = 0
	m.mu.Unlock()
	m.txRun()
}
