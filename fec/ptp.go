package fec

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// The ENET adjustable timer as an IEEE 1588 clock (i.MX8M Plus RM "ENET
// Adjustable Timer"; Linux fec_ptp.c fec_ptp_start_cyclecounter,
// fec_ptp_read, fec_ptp_adjfine, fec_ptp_settime, fec_time_keep). The counter
// holds 31 bits of nanoseconds (ATPER 2^31 with ATCR.PEREN); the driver
// extends it to 64 bits in software and has to look at it at least once per
// wrap (2.1 s): a keeper goroutine reads it every keepEvery while the port is
// open, as fec_time_keep does. Enhanced BDs carry the counter at reception.
const (
	regATCR  reg = 0x400 // timer control
	regATVR  reg = 0x404 // timer value (latched by ATCR.CAPTURE)
	regATPER reg = 0x40C // period: the counter wraps to 0 here (PEREN)
	regATCOR reg = 0x410 // correction period in timer clock cycles (0: off)
	regATINC reg = 0x414 // INC 6:0 ns per cycle, INC_CORR 14:8 on a correction cycle

	atcrEN      uint32 = 1 << 0
	atcrPEREN   uint32 = 1 << 4
	atcrRestart uint32 = 1 << 9
	atcrCapture uint32 = 1 << 11

	atincMax       = 0x7f
	atincCorrShift = 8

	counterPeriod = 1 << 31
	counterMask   = counterPeriod - 1

	// afterRef: a frame stamped up to this long after the reference the
	// RX path took is taken as after it (older ones as before it).
	afterRef = 1 << 28

	keepEvery = 500 * time.Millisecond

	defaultPTPClockHz = 100_000_000 // ENET_TIMER in imx8mp.dtsi
	nsPerSec          = 1_000_000_000
	maxAdjPPB         = 100_000_000
)

// ptpClock is the software side of the timer. mu guards the extension and
// serialises CAPTURE+ATVR sequences (the RX path takes it once per Recv with
// timestamps, the PHC methods and the keeper too).
type ptpClock struct {
	on  bool // set once by Open: extended BDs and a timer clock
	inc uint32
	hz  int

	mu   sync.Mutex
	ns   int64     // the clock at the last read
	last uint32    // the counter at the last read
	at   time.Time // host time of the last read

	stop chan struct{} // closed by Close; the keeper then returns
	done chan struct{}
}

// setupTimer starts the counter (fec_ptp_start_cyclecounter) and sets the
// clock: to the host's time at the first start, to where it was after a
// restart.
func (p *Port) setupTimer() {
	c := &p.ptp
	if !c.on {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	ns := now.UnixNano()
	if !c.at.IsZero() {
		ns = c.ns + int64(now.Sub(c.at))
	}
	p.w32(regATINC, c.inc)
	p.w32(regATCOR, 0)
	p.w32(regATPER, counterPeriod)
	p.w32(regATCR, atcrEN|atcrPEREN|atcrRestart)
	c.setLocked(p, ns)
}

func (c *ptpClock) setLocked(p *Port, ns int64) {
	cnt := uint32(ns) & counterMask
	p.w32(regATVR, cnt)
	c.ns, c.last, c.at = ns, cnt, time.Now()
}

// readLocked captures the counter and advances the extension.
func (c *ptpClock) readLocked(p *Port) int64 {
	p.w32(regATCR, atcrEN|atcrPEREN|atcrCapture)
	cnt := p.r32(regATVR) & counterMask
	c.ns += int64((cnt - c.last) & counterMask)
	c.last, c.at = cnt, time.Now()
	return c.ns
}

// keep runs on its own goroutine while the port is open.
func (p *Port) keep() {
	c := &p.ptp
	defer close(c.done)
	t := time.NewTicker(keepEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			c.readLocked(p)
			c.mu.Unlock()
		}
	}
}

// startKeeper starts the keeper goroutine (Open, once the port is up).
func (p *Port) startKeeper() {
	if p.ptp.on {
		p.ptp.stop, p.ptp.done = make(chan struct{}), make(chan struct{})
		go p.keep()
	}
}

// stopKeeper ends the keeper goroutine (Close).
func (p *Port) stopKeeper() {
	if p.ptp.stop != nil {
		close(p.ptp.stop)
		<-p.ptp.done
		p.ptp.stop = nil
	}
}

// initPTP decides at Open whether the port has the clock.
func (p *Port) initPTP() error {
	if !p.bd.ext {
		if p.cfg.RxTimestamp {
			return fmt.Errorf("fec: %s: RX timestamps need the enhanced BDs (EN1588), which this variant or Config.LegacyBD leaves out", p.name)
		}
		return nil
	}
	hz := p.cfg.PTPClockHz
	if hz == 0 {
		hz = defaultPTPClockHz
	}
	inc := nsPerSec / hz
	if hz <= 0 || inc < 1 || inc > atincMax || nsPerSec%hz != 0 {
		return fmt.Errorf("fec: %s: timer clock of %d Hz: want a whole period of 1 to %d ns", p.name, hz, atincMax)
	}
	p.ptp.on, p.ptp.inc, p.ptp.hz = true, uint32(inc), hz
	return nil
}

type phc struct{ p *Port }

// PHC is the port's IEEE 1588 clock (the ENET timer; enhanced BDs only).
func (p *Port) PHC() (nic.PHC, error) {
	if !p.ptp.on {
		return nil, fmt.Errorf("fec: %s: no 1588 timer in use (legacy BDs): %w", p.name, nic.ErrNotSupported)
	}
	return phc{p}, nil
}

var _ nic.PHCPort = (*Port)(nil)

func (c phc) lock() error {
	if c.p.ctl.IsClosed() {
		return c.p.ctl.ErrClosed()
	}
	c.p.ptp.mu.Lock()
	return nil
}

func (c phc) Time() (int64, error) {
	if err := c.lock(); err != nil {
		return 0, err
	}
	defer c.p.ptp.mu.Unlock()
	return c.p.ptp.readLocked(c.p), nil
}

func (c phc) SetTime(ns int64) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ptp.mu.Unlock()
	c.p.ptp.setLocked(c.p, ns)
	return nil
}

// AdjTime reads, adds and writes the counter back, so the step shows in the
// timer (and in later BD timestamps) too.
func (c phc) AdjTime(delta int64) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ptp.mu.Unlock()
	c.p.ptp.setLocked(c.p, c.p.ptp.readLocked(c.p)+delta)
	return nil
}

// AdjFreq programs the correction: once every ATCOR cycles the counter adds
// INC±k instead of INC, that is k*hz/ATCOR ns per second more or less. k is
// the smallest that keeps ATCOR above 1000 cycles (the rounding error of
// ATCOR below 0.1%), within INC_CORR's 7 bits.
func (c phc) AdjFreq(ppb int64) error {
	if ppb > maxAdjPPB || ppb < -maxAdjPPB {
		return fmt.Errorf("fec: %s: frequency adjustment %d ppb beyond ±%d", c.p.name, ppb, maxAdjPPB)
	}
	inc, hz := int64(c.p.ptp.inc), int64(c.p.ptp.hz)
	atinc, atcor := uint32(inc), uint32(0)
	if ppb != 0 {
		a := ppb
		kmax := atincMax - inc
		if a < 0 {
			a, kmax = -a, inc-1
		}
		if kmax < 1 {
			return fmt.Errorf("fec: %s: no room in INC_CORR for %d ppb", c.p.name, ppb)
		}
		k := min(max((1000*a+hz-1)/hz, 1), kmax)
		cor := (k*hz + a/2) / a
		if cor > 0x7FFFFFFF {
			cor = 0x7FFFFFFF
		}
		corr := inc + k
		if ppb < 0 {
			corr = inc - k
		}
		atinc |= uint32(corr) << atincCorrShift
		atcor = uint32(cor)
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.p.ptp.mu.Unlock()
	c.p.ptp.readLocked(c.p) // the extension up to the rate change
	c.p.w32(regATCOR, atcor)
	c.p.w32(regATINC, atinc)
	return nil
}

// rxRef is the reference an RX burst converts BD timestamps with.
type rxRef struct {
	ns  int64
	cnt uint32
	ok  bool
}

// take reads the clock for this burst.
func (r *rxRef) take(p *Port) {
	p.ptp.mu.Lock()
	r.ns, r.cnt, r.ok = p.ptp.readLocked(p), p.ptp.last, true
	p.ptp.mu.Unlock()
}

// at converts a BD's 31-bit timestamp: before the reference unless it is
// less than afterRef after it.
func (r *rxRef) at(ts uint32) int64 {
	d := (r.cnt - ts) & counterMask
	if d > counterMask-afterRef {
		return r.ns + int64(counterPeriod-d)
	}
	return r.ns - int64(d)
}

// vlanFromFrame reads the 802.1Q tag the ENET flagged (esc VLAN): the frame
// keeps it.
func vlanFromFrame(f []byte) (proto, tci uint16, ok bool) {
	if len(f) < 18 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(f[12:]), binary.BigEndian.Uint16(f[14:]), true
}

// RxMeta is the per-frame metadata the port reports (nic.RxMetaPort): the
// VLAN tag with enhanced BDs, the timestamp with Config.RxTimestamp. The ENET
// computes no RSS hash.
func (p *Port) RxMeta() nic.RxMetaCaps {
	var c nic.RxMetaCaps
	if p.bd.ext {
		c |= nic.RxMetaVLAN
	}
	if p.cfg.RxTimestamp && p.ptp.on {
		c |= nic.RxMetaTimestamp
	}
	return c
}

var _ nic.RxMetaPort = (*Port)(nil)
