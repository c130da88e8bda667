package igb

import (
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// IEEE 1588 clock and receive timestamps of the I210/I211 (I210 datasheet
// 7.8: SYSTIMR/SYSTIML/SYSTIMH seconds and nanoseconds, TIMINCA; Linux
// igb_ptp.c igb_ptp_read_i210, igb_ptp_write_i210, igb_ptp_adjfine_82580 and
// igb_ptp_rx_pktstamp). The 82576 and I350 keep a raw counter and are not
// supported: their ports report no timestamps and have no PHC.
const (
	regSYSTIML    reg = 0x0B600 // system time, nanoseconds (I210)
	regSYSTIMH    reg = 0x0B604 // system time, seconds (I210)
	regTIMINCA    reg = 0x0B608 // increment: INCVALUE 30:0 in 2^-32 ns per 8 ns, ISGN 31
	regTSYNCRXCTL reg = 0x0B620 // RX time sync control
	regSYSTIMR    reg = 0x0B6F8 // residue; reading it latches SYSTIML/H (I210)
	regTSYNCTXCTL reg = 0x0B614 // TX time sync control (e1000_regs.h E1000_TSYNCTXCTL)
	regTXSTMPL    reg = 0x0B618 // TX timestamp, nanoseconds (latched)
	regTXSTMPH    reg = 0x0B61C // TX timestamp, seconds; reading it frees the latch

	tsyncTxValid   uint32 = 1 << 0 // TXSTMPL/H hold a timestamp (E1000_TSYNCTXCTL_VALID)
	tsyncTxEnabled uint32 = 1 << 4 // timestamp frames whose descriptor asks (E1000_TSYNCTXCTL_ENABLED)

	timincaISGN uint32 = 1 << 31

	tsyncRxTypeAll uint32 = 4 << 1 // HWTSTAMP_FILTER_ALL
	tsyncRxEnabled uint32 = 1 << 4

	srrctlTimestamp srrctlBits = 1 << 30 // put the receive time before the frame

	// rxStatTSIP: the buffer starts with a 16-byte timestamp header.
	rxStatTSIP uint32 = 1 << 15
	tsHdrLen          = 16 // 8 reserved bytes, SYSTIML, SYSTIMH (le32 each)

	nsPerSec = 1_000_000_000

	// maxAdjPPB is the largest frequency adjustment INCVALUE holds:
	// (2^31-1) * 2^-32 ns per 8 ns, just under 62.5e6 ppb (Linux max_adj).
	maxAdjPPB = 62_499_999
)

// hasI210Clock reports whether the MAC has the clock format driven here.
func hasI210Clock(m MAC) bool { return m == MACI210 || m == MACI211 }

// setupPTP starts the clock at the host's time at the nominal rate (as
// igb_ptp_reset does on the I210) and, with Config.RxTimestamp, timestamps
// every received frame (per queue, SRRCTL).
func (p *Port) setupPTP() {
	if !hasI210Clock(p.model.MAC) {
		return
	}
	p.w32(regTIMINCA, 0)
	now := time.Now().UnixNano()
	p.w32(regSYSTIML, uint32(now%nsPerSec))
	p.w32(regSYSTIMH, uint32(now/nsPerSec))
	if p.cfg.RxTimestamp {
		p.w32(regTSYNCRXCTL, tsyncRxEnabled|tsyncRxTypeAll)
	}
	// TX timestamps only for frames that ask (the descriptor's TSTAMP), so
	// enabling them costs nothing: on at every open.
	p.w32(regTSYNCTXCTL, tsyncTxEnabled)
	p.r32(regTXSTMPH) // free the latch of a timestamp left from before
}

// phc is the port's nic.PHC; its register sequences serialise on Port.ctl.
type phc struct{ p *Port }

// PHC is the port's IEEE 1588 clock (I210 and I211 only).
func (p *Port) PHC() (nic.PHC, error) {
	if !hasI210Clock(p.model.MAC) {
		return nil, fmt.Errorf("igb: %s: the %s's clock is not supported (I210/I211 only)", p.name, p.model.MAC)
	}
	return phc{p}, nil
}

var _ nic.PHCPort = (*Port)(nil)

func (c phc) lock() error {
	return c.p.ctl.LockOpen()
}

func (c phc) read() int64 {
	c.p.r32(regSYSTIMR) // latches SYSTIML and SYSTIMH
	ns := c.p.r32(regSYSTIML)
	s := c.p.r32(regSYSTIMH)
	return int64(s)*nsPerSec + int64(ns)
}

func (c phc) write(ns int64) error {
	if ns < 0 || ns/nsPerSec > 0xFFFFFFFF {
		return fmt.Errorf("igb: %s: clock value %d ns outside the 32-bit seconds of SYSTIMH", c.p.name, ns)
	}
	c.p.w32(regSYSTIML, uint32(ns%nsPerSec))
	c.p.w32(regSYSTIMH, uint32(ns/nsPerSec))
	return nil
}

func (c phc) Time() (int64, error) {
	if err := c.lock(); err != nil {
		return 0, err
	}
	defer c.p.ctl.Unlock()
	return c.read(), nil
}

func (c phc) SetTime(ns int64) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	return c.write(ns)
}

// AdjTime reads, adds and writes back the clock, as Linux does on the I210.
func (c phc) AdjTime(delta int64) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	return c.write(c.read() + delta)
}

func (c phc) AdjFreq(ppb int64) error {
	if ppb > maxAdjPPB || ppb < -maxAdjPPB {
		return fmt.Errorf("igb: %s: frequency adjustment %d ppb beyond ±%d", c.p.name, ppb, maxAdjPPB)
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ctl.Unlock()
	c.p.w32(regTIMINCA, timinca(ppb))
	return nil
}

// timinca is TIMINCA for ppb: INCVALUE = |ppb| * 8 ns * 2^32 / 10^9.
func timinca(ppb int64) uint32 {
	a := ppb
	if a < 0 {
		a = -a
	}
	v := uint32((uint64(a) << 35) / nsPerSec)
	if ppb < 0 {
		v |= timincaISGN
	}
	return v
}

// RxMeta is the per-frame metadata the port reports (nic.RxMetaPort): the RSS
// hash (for IPv4/IPv6 frames, TCP and UDP ports included), the stripped VLAN
// tag with Config.VLANStrip, the receive timestamp with Config.RxTimestamp.
func (p *Port) RxMeta() nic.RxMetaCaps {
	c := nic.RxMetaHash
	if p.cfg.VLANStrip {
		c |= nic.RxMetaVLAN
	}
	if p.cfg.RxTimestamp {
		c |= nic.RxMetaTimestamp
	}
	return c
}

var _ nic.RxMetaPort = (*Port)(nil)
