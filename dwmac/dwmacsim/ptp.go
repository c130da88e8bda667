package dwmacsim

import (
	"math"

	"github.com/xnic-dev/xnic/sim"
)

// IEEE 1588 system time and receive timestamps (databook "IEEE 1588 Timestamp
// Support"; Linux stmmac_hwtstamp.c, stmmac_ptp.c, dwmac4_descs.c).
//
// The system time is seconds and nanoseconds (digital rollover,
// MAC_Timestamp_Control.TSCTRLSSR: the model does not implement the binary
// rollover). With TSCFUPDT (fine update) a 32-bit accumulator gains
// MAC_Timestamp_Addend every PTP clock cycle and each overflow adds SSINC ns;
// without it every cycle adds SSINC ns. The clock runs while TSENA is set;
// here at the host's rate scaled by SSINC, the addend and the PTP reference
// clock (Config.PTPClockHz). TSINIT loads MAC_System_Time_Seconds_Update and
// _Nanoseconds_Update; TSUPDT adds them (ADDSUB: subtracts, the seconds in
// two's complement and the nanoseconds as 10^9 minus the value, as stmmac
// writes them); TSADDREG loads the addend. Each self-clears when done (at once
// here).
//
// With TSENA and TSENALL every received frame is timestamped: its last
// descriptor's RDES1.TSA is set and the DMA writes the next descriptor (which
// must be the DMA's, as for a frame) as a context descriptor: DES0 nanoseconds,
// DES1 seconds, DES3 CTXT with OWN clear.
const (
	regPTPTCR   reg = 0x0b00 // MAC_Timestamp_Control
	regPTPSSIR  reg = 0x0b04 // MAC_Sub_Second_Increment
	regPTPSTSR  reg = 0x0b08 // MAC_System_Time_Seconds
	regPTPSTNSR reg = 0x0b0c // MAC_System_Time_Nanoseconds
	regPTPSTSUR reg = 0x0b10 // MAC_System_Time_Seconds_Update
	regPTPSTNSU reg = 0x0b14 // MAC_System_Time_Nanoseconds_Update
	regPTPTAR   reg = 0x0b18 // MAC_Timestamp_Addend

	tcrTSENA     uint32 = 1 << 0
	tcrTSCFUPDT  uint32 = 1 << 1
	tcrTSINIT    uint32 = 1 << 2
	tcrTSUPDT    uint32 = 1 << 3
	tcrTSADDREG  uint32 = 1 << 5
	tcrTSENALL   uint32 = 1 << 8
	tcrTSCTRLSSR uint32 = 1 << 9
	// The PTP message filters (TSVER2ENA 10 to TSENMACADDR 18) and
	// SNAPTYPSEL: not modelled.
	tcrFilters uint32 = 0x7fc00 | 3<<16

	ssincShift        = 16 // SSINC 23:16 on dwmac4
	ssincMask  uint32 = 0xff << ssincShift
	stnsADDSUB uint32 = 1 << 31

	rd1TSA uint32 = 1 << 14 // RDES1: timestamp in the next (context) descriptor

	nsPerSec = 1_000_000_000

	hw0TSSEL uint32 = 1 << 12 // HW_FEATURE0: IEEE 1588-2008 timestamps
)

// ptpState is the timestamp unit; guarded by Model.mu.
type ptpState struct {
	clock  *sim.PHClock
	hz     float64 // PTP reference clock
	tcr    uint32
	ssir   uint32
	tar    uint32 // MAC_Timestamp_Addend as written
	addend uint32 // the addend in use: tar when TSADDREG was last set
	stsur  uint32
	stnsu  uint32
}

func (p *ptpState) reset(hz int) {
	if p.clock == nil {
		p.clock = sim.NewPHClock()
	}
	p.hz = float64(hz)
	p.tcr, p.ssir, p.tar, p.addend, p.stsur, p.stnsu = 0, 0, 0, 0, 0, 0
	p.clock.Set(0)
	p.retime()
}

// retime sets the clock's rate from TSENA, TSCFUPDT, SSINC and the addend.
func (p *ptpState) retime() {
	ns := 0.0 // nanoseconds the clock gains per host nanosecond
	if p.tcr&tcrTSENA != 0 {
		inc := float64((p.ssir & ssincMask) >> ssincShift)
		if p.tcr&tcrTSCFUPDT != 0 {
			ns = inc * float64(p.addend) / (1 << 32) * p.hz / nsPerSec
		} else {
			ns = inc * p.hz / nsPerSec
		}
	}
	p.clock.SetRate(int64(math.Round((ns - 1) * (1 << sim.PHClockRateShift))))
}

// rxTimestamping reports whether every received frame gets a timestamp.
func (p *ptpState) rxTimestamping() bool {
	return p.tcr&(tcrTSENA|tcrTSENALL) == tcrTSENA|tcrTSENALL
}

// now is the system time as seconds and nanoseconds (seconds wrap at 2^32).
func (p *ptpState) now() (sec, ns uint32) {
	v := p.clock.Now()
	if v < 0 {
		v = 0
	}
	return uint32(v / nsPerSec), uint32(v % nsPerSec)
}

// readPTPLocked reads the timestamp registers.
func (m *Model) readPTPLocked(off uint32) (uint32, bool) {
	p := &m.ptp
	switch off {
	case regPTPTCR:
		return p.tcr, true
	case regPTPSSIR:
		return p.ssir, true
	case regPTPSTSR:
		s, _ := p.now()
		return s, true
	case regPTPSTNSR:
		_, ns := p.now()
		return ns, true
	case regPTPSTSUR:
		return p.stsur, true
	case regPTPSTNSU:
		return p.stnsu, true
	case regPTPTAR:
		return p.tar, true
	}
	return 0, false
}

// writePTPLocked writes the timestamp registers.
func (m *Model) writePTPLocked(off, val uint32) bool {
	p := &m.ptp
	switch off {
	case regPTPTCR:
		m.writeTCRLocked(val)
	case regPTPSSIR:
		p.ssir = val & ssincMask
		p.retime()
	case regPTPSTSR, regPTPSTNSR:
		m.readOnly(off, val)
	case regPTPSTSUR:
		p.stsur = val
	case regPTPSTNSU:
		p.stnsu = val
	case regPTPTAR:
		p.tar = val // takes effect with TSADDREG
	default:
		return false
	}
	return true
}

func (m *Model) writeTCRLocked(val uint32) {
	p := &m.ptp
	const name = "MAC_Timestamp_Control"
	if val&tcrTSENA != 0 && val&tcrTSCTRLSSR == 0 {
		m.faults.Add("write32", name, uint64(regPTPTCR), "TSENA without TSCTRLSSR: the binary rollover of the nanoseconds is not modelled")
		return
	}
	if val&tcrFilters != 0 {
		m.faults.Add("write32", name, uint64(regPTPTCR), "PTP message filters 0x%x are not modelled (TSENALL timestamps every frame)", val&tcrFilters)
		return
	}
	cmds := val & (tcrTSINIT | tcrTSUPDT | tcrTSADDREG)
	if cmds != 0 && val&tcrTSENA == 0 {
		m.faults.Add("write32", name, uint64(regPTPTCR), "TSINIT/TSUPDT/TSADDREG with TSENA clear: the timestamp unit ignores them")
		return
	}
	ns := p.stnsu &^ stnsADDSUB
	if cmds&(tcrTSINIT|tcrTSUPDT) != 0 && (ns > nsPerSec || ns == nsPerSec && p.stnsu&stnsADDSUB == 0 || val&tcrTSINIT != 0 && p.stnsu&stnsADDSUB != 0) {
		m.faults.Add("write32", name, uint64(regPTPTCR), "system time update with nanoseconds 0x%08x: want below 10^9 (ADDSUB only with TSUPDT, then up to 10^9)", p.stnsu)
		return
	}
	p.tcr = val &^ (tcrTSINIT | tcrTSUPDT | tcrTSADDREG)
	if val&tcrTSADDREG != 0 {
		p.addend = p.tar
	}
	p.retime()
	switch {
	case val&tcrTSINIT != 0:
		p.clock.Set(int64(p.stsur)*nsPerSec + int64(ns))
	case val&tcrTSUPDT != 0:
		d := int64(p.stsur)*nsPerSec + int64(ns)
		if p.stnsu&stnsADDSUB != 0 {
			d = -(int64(uint32(-p.stsur))*nsPerSec + int64(nsPerSec-ns))
		}
		p.clock.Set(p.clock.Now() + d)
	}
}

// Clock is the model's system time in nanoseconds (for tests).
func (m *Model) Clock() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ptp.clock.Now()
}

// MAC_VLAN_Tag (dwmac4: MAC_VLAN_Tag_Ctrl) receive tag handling.
const (
	vlanEVLSMask   uint32 = 3 << 21 // strip: 0 never, 1 if filter passes, 2 if it fails, 3 always
	vlanEVLSAlways uint32 = 3 << 21
	vlanEVLRXS     uint32 = 1 << 24 // the outer tag in RDES0, with RS0V

	rw3RS0V uint32 = 1 << 25
)

func (m *Model) writeVLANTagLocked(val uint32) {
	if e := val & vlanEVLSMask; e != 0 && e != vlanEVLSAlways {
		m.faults.Add("write32", "MAC_VLAN_Tag", uint64(regMACVLANTag), "EVLS %d strips by the VLAN filter's result, which the model does not implement", e>>21)
		return
	}
	m.plain[regMACVLANTag] = val
}
