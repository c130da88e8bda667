package dwmac

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// IEEE 1588 system time and receive timestamps (databook "IEEE 1588 Timestamp
// Support"; Linux stmmac_hwtstamp.c config_sub_second_increment, init_systime,
// config_addend, adjust_systime, get_systime; stmmac_ptp.c; dwmac4_descs.c
// for the context descriptor). The clock runs in fine-update mode with digital
// rollover: every PTP reference clock cycle the addend goes into a 32-bit
// accumulator, and each overflow adds SSINC ns. SSINC is twice the reference
// clock's period and the nominal addend 2^32 * (10^9/SSINC) / f, as stmmac
// chooses them; AdjFreq scales the addend.
const (
	regPTPTCR   reg = 0xb00 // MAC_Timestamp_Control
	regPTPSSIR  reg = 0xb04 // MAC_Sub_Second_Increment: SSINC 23:16
	regPTPSTSR  reg = 0xb08 // MAC_System_Time_Seconds
	regPTPSTNSR reg = 0xb0c // MAC_System_Time_Nanoseconds
	regPTPSTSUR reg = 0xb10 // MAC_System_Time_Seconds_Update
	regPTPSTNSU reg = 0xb14 // MAC_System_Time_Nanoseconds_Update: ADDSUB 31
	regPTPTAR   reg = 0xb18 // MAC_Timestamp_Addend

	regMACVLANTag reg = 0x050 // MAC_VLAN_Tag (MAC_VLAN_Tag_Ctrl on cores with VLAN filters)

	tcrTSENA     uint32 = 1 << 0 // timestamping (and the system time) on
	tcrTSCFUPDT  uint32 = 1 << 1 // fine update through the addend
	tcrTSINIT    uint32 = 1 << 2 // load the system time from the update registers
	tcrTSUPDT    uint32 = 1 << 3 // add (ADDSUB: subtract) the update registers
	tcrTSADDREG  uint32 = 1 << 5 // load the addend
	tcrTSENALL   uint32 = 1 << 8 // timestamp every received frame
	tcrTSCTRLSSR uint32 = 1 << 9 // nanoseconds roll over at 10^9

	ssincShift        = 16
	stnsADDSUB uint32 = 1 << 31

	rdes1TSA uint32 = 1 << 14 // RDES1: a context descriptor with the timestamp follows

	// MAC_VLAN_Tag (dwmac4.h GMAC_VLAN_EVLS, GMAC_VLAN_EVLRXS).
	vlanEVLSAlways uint32 = 3 << 21 // always strip the outer tag
	vlanEVLRXS     uint32 = 1 << 24 // the outer tag in RDES0, with RS0V

	nsPerSec = 1_000_000_000

	ptpCmdTimeout = 10 * time.Millisecond

	// maxAdjPPB bounds AdjFreq so the addend stays in 32 bits with room.
	maxAdjPPB = 500_000_000
)

// phcState is the clock's software side; set once by setupPTP.
type phcState struct {
	on     bool   // the MAC has timestamps and the clock runs
	addend uint32 // the nominal addend
}

// setupPTP starts the system time at the host's time (stmmac_init_tstamp_counter)
// and, with Config.RxTimestamp, timestamps every received frame.
func (p *Port) setupPTP() error {
	if p.hw.Features[0]&hwf0TS == 0 {
		if p.cfg.RxTimestamp {
			return fmt.Errorf("RX timestamps: the MAC has no IEEE 1588 timestamping (HW_FEATURE0.TSSEL clear): %w", nic.ErrNotSupported)
		}
		return nil
	}
	hz := p.cfg.PTPClockHz
	if hz == 0 {
		hz = p.model.PTPClockHz
	}
	if hz <= 0 {
		if p.cfg.RxTimestamp {
			return fmt.Errorf("RX timestamps: the PTP reference clock of the %s is unknown: set Config.PTPClockHz", p.model.Name)
		}
		return nil
	}
	ssinc := uint32(2 * nsPerSec / hz)
	if ssinc == 0 || ssinc > 0xff {
		return fmt.Errorf("PTP reference clock of %d Hz: the sub-second increment %d does not fit SSINC", hz, ssinc)
	}
	add := (uint64(nsPerSec/ssinc) << 32) / uint64(hz)
	if add > 0xFFFFFFFF {
		return fmt.Errorf("PTP reference clock of %d Hz: the addend overflows 32 bits", hz)
	}
	tcr := tcrTSENA | tcrTSCFUPDT | tcrTSCTRLSSR
	if p.cfg.RxTimestamp {
		tcr |= tcrTSENALL
	}
	p.w32(regPTPTCR, tcr)
	p.w32(regPTPSSIR, ssinc<<ssincShift)
	p.phc = phcState{on: true, addend: uint32(add)}
	if err := p.ptpCmd(regPTPTAR, uint32(add), tcrTSADDREG); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	p.w32(regPTPSTSUR, uint32(now/nsPerSec))
	if err := p.ptpCmd(regPTPSTNSU, uint32(now%nsPerSec), tcrTSINIT); err != nil {
		return err
	}
	return nil
}

// ptpCmd writes val to r, sets cmd in MAC_Timestamp_Control and waits for the
// MAC to clear it.
func (p *Port) ptpCmd(r reg, val, cmd uint32) error {
	p.w32(r, val)
	p.w32(regPTPTCR, p.r32(regPTPTCR)|cmd)
	_, err := nic.PollReg(p.regs, uint32(regPTPTCR), ptpCmdTimeout, 10*time.Microsecond, func(v uint32) bool { return v&cmd == 0 })
	if err != nil {
		return fmt.Errorf("MAC_Timestamp_Control 0x%x did not clear: %w", cmd, err)
	}
	return nil
}

// setupVLAN has the MAC report (and strip) the outer C-VLAN tag.
func (p *Port) setupVLAN() {
	if p.cfg.VLANStrip {
		p.w32(regMACVLANTag, vlanEVLRXS|vlanEVLSAlways)
	}
}

type phc struct{ p *Port }

// PHC is the port's IEEE 1588 clock (MAC_System_Time).
func (p *Port) PHC() (nic.PHC, error) {
	if !p.phc.on {
		return nil, fmt.Errorf("dwmac: %s: no IEEE 1588 clock (HW_FEATURE0.TSSEL clear or PTP reference clock unknown): %w", p.name, nic.ErrNotSupported)
	}
	return phc{p}, nil
}

var _ nic.PHCPort = (*Port)(nil)

func (c phc) lock() error {
	return c.p.ctl.LockOpen()
}

// read reads seconds, nanoseconds and the seconds again, retrying across a
// rollover.
func (c phc) read() int64 {
	for {
		s := c.p.r32(regPTPSTSR)
		ns := c.p.r32(regPTPSTNSR)
		if c.p.r32(regPTPSTSR) == s {
			return int64(s)*nsPerSec + int64(ns)
		}
	}
}

func (c phc) Time() (int64, error) {
	if err := c.lock(); err != nil {
		return 0, err
	}
	defer c.p.ctl.Unlock()
	return c.read(), nil
}

func (c phc) SetTime(ns int64) error {
	if ns < 0 || ns/nsPerSec > 0xFFFFFFFF {
		return fmt.Errorf("dwmac: %s: clock value %d ns outside the 32-bit seconds", c.p.name, ns)
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	c.p.w32(regPTPSTSUR, uint32(ns/nsPerSec))
	return c.p.ptpCmd(regPTPSTNSU, uint32(ns%nsPerSec), tcrTSINIT)
}

// AdjTime adds delta with TSUPDT; a negative delta is written as stmmac's
// adjust_systime does: seconds in two's complement, 10^9 minus the
// nanoseconds, ADDSUB.
func (c phc) AdjTime(delta int64) error {
	neg := delta < 0
	if neg {
		delta = -delta
	}
	sec, ns := uint32(delta/nsPerSec), uint32(delta%nsPerSec)
	if delta/nsPerSec > 0xFFFFFFFF {
		return fmt.Errorf("dwmac: %s: step of %d s beyond 32 bits", c.p.name, delta/nsPerSec)
	}
	if neg {
		sec, ns = -sec, nsPerSec-ns|stnsADDSUB
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	c.p.w32(regPTPSTSUR, sec)
	return c.p.ptpCmd(regPTPSTNSU, ns, tcrTSUPDT)
}

// AdjFreq scales the nominal addend by 1 + ppb/10^9.
func (c phc) AdjFreq(ppb int64) error {
	if ppb > maxAdjPPB || ppb < -maxAdjPPB {
		return fmt.Errorf("dwmac: %s: frequency adjustment %d ppb beyond ±%d", c.p.name, ppb, maxAdjPPB)
	}
	base := uint64(c.p.phc.addend)
	a := ppb
	if a < 0 {
		a = -a
	}
	hi, lo := bits.Mul64(base, uint64(a))
	diff, _ := bits.Div64(hi, lo, nsPerSec)
	v := base + diff
	if ppb < 0 {
		v = base - diff
	}
	if v > 0xFFFFFFFF {
		return fmt.Errorf("dwmac: %s: frequency adjustment %d ppb overflows the addend", c.p.name, ppb)
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	return c.p.ptpCmd(regPTPTAR, uint32(v), tcrTSADDREG)
}

// RxMeta is the per-frame metadata the port reports (nic.RxMetaPort): the
// VLAN tag with Config.VLANStrip and the timestamp with Config.RxTimestamp.
// Never RxMetaHash: the EQoS core computes no RSS hash (its RX write-back has
// no hash field, dwmac4_descs.h, and stmmac sets NETIF_F_RXHASH only with
// dma_cap.rssen, which only the XGMAC's feature registers report).
func (p *Port) RxMeta() nic.RxMetaCaps {
	var c nic.RxMetaCaps
	if p.cfg.VLANStrip {
		c |= nic.RxMetaVLAN
	}
	if p.cfg.RxTimestamp {
		c |= nic.RxMetaTimestamp
	}
	return c
}

var _ nic.RxMetaPort = (*Port)(nil)
