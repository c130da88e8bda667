package igbsim

// The I210's Qav transmit mode as far as launch times need it (I210
// datasheet 7.2.7.5, 8.12.x; register offsets and bits cross-checked with
// Linux e1000_regs.h/e1000_defines.h). TQAVCTRL.XMIT_MODE selects Qav;
// queues 0 and 1 can be stream reservation (SR) queues (TQAVCC.QueueMode);
// with TQAVCTRL.DataTranTIM a frame on an SR queue leaves only once SYSTIML
// reaches its context's LaunchTime (7.2.2.2.3: only the fraction of a second
// is compared; a time within the next 0.5 s is in the future, any other is
// expired and the frame leaves at once). The credit shaper itself
// (idleSlope, hiCredit) is stored, not modelled: at the model's rates it
// never holds a frame back. The 82576 and I350 have none of these registers.
const (
	regTQAVCTRL reg = 0x03570
	regLaunchOS reg = 0x03578 // LAUNCH_OS0: offset added to every LaunchTime
	regTQAVCC0  reg = 0x03004 // queue n at +0x40*n, n = 0, 1
	regTQAVHC0  reg = 0x0300C

	tqavctrlXmitMode    uint32 = 1 << 0
	tqavctrlDataTranTIM uint32 = 1 << 9
	tqavccQueueMode     uint32 = 1 << 31

	srQueues     = 2
	launchWindow = nsPerSec / 2
)

// qavState is the Qav registers; guarded by Model.mu.
type qavState struct {
	tqavctrl, launchOS uint32
	tqavcc, tqavhc     [srQueues]uint32
}

// qavReg decodes a Qav register of the I210: which one, and the queue.
func (m *Model) qavReg(off uint32) (r reg, q int, ok bool) {
	if m.info.fam != famI210 {
		return 0, 0, false
	}
	switch off {
	case regTQAVCTRL, regLaunchOS:
		return off, 0, true
	}
	for q := 0; q < srQueues; q++ {
		switch off {
		case regTQAVCC0 + 0x40*uint32(q):
			return regTQAVCC0, q, true
		case regTQAVHC0 + 0x40*uint32(q):
			return regTQAVHC0, q, true
		}
	}
	return 0, 0, false
}

func (m *Model) readQavLocked(off uint32) (uint32, bool) {
	r, q, ok := m.qavReg(off)
	if !ok {
		return 0, false
	}
	switch r {
	case regTQAVCTRL:
		return m.qav.tqavctrl, true
	case regLaunchOS:
		return m.qav.launchOS, true
	case regTQAVCC0:
		return m.qav.tqavcc[q], true
	default:
		return m.qav.tqavhc[q], true
	}
}

func (m *Model) writeQavLocked(off, val uint32) bool {
	r, q, ok := m.qavReg(off)
	if !ok {
		return false
	}
	switch r {
	case regTQAVCTRL:
		m.qav.tqavctrl = val
	case regLaunchOS:
		m.qav.launchOS = val & ctxLaunchMask
	case regTQAVCC0:
		m.qav.tqavcc[q] = val
	default:
		m.qav.tqavhc[q] = val
	}
	return true
}

// timedLocked reports whether TX queue q launches frames on time: Qav mode
// with DataTranTIM, and q an SR queue.
func (m *Model) timedLocked(q int) bool {
	c := m.qav.tqavctrl
	return q < srQueues && c&tqavctrlXmitMode != 0 && c&tqavctrlDataTranTIM != 0 &&
		m.qav.tqavcc[q]&tqavccQueueMode != 0
}

// launchWaitLocked is how long a frame with LaunchTime lt waits from now: 0
// when its time has expired, as the MAC compares it with SYSTIML.
func (m *Model) launchWaitLocked(lt uint32) int64 {
	at := int64(launchUnitNS) * (int64(m.qav.launchOS) + int64(lt)) % nsPerSec
	_, now := splitNS(m.ptp.clock.Now())
	d := (at - int64(now) + nsPerSec) % nsPerSec
	if d >= launchWindow {
		return 0 // in the half second behind: expired
	}
	return d
}
