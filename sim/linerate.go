package sim

import (
	"runtime"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// Line rate (IEEE 802.3 clause 4.2.3.2 and 4.4.2): a frame occupies the wire
// for its preamble (7 bytes) and SFD (1), the frame padded to 60 bytes, its
// FCS (4) and the inter-frame gap after it (12 byte times, 96 bit times). A
// 64-byte frame (60 + FCS) therefore takes 84 byte times: 672 ns at 1000 Mb/s,
// 1,488,095 frames a second; 148,810 at 100 Mb/s; 14,881 at 10 Mb/s.
//
// A Wire carries frames at the rate its model's PHY negotiated, in both
// directions: Arrive holds back the far end until each frame has fully
// arrived, Depart and TxWait keep the transmitter from running further ahead
// of the wire than its TX FIFO holds. Time is a Clock's (the monotonic clock
// unless a test sets another); the wire keeps, per direction, the moment its
// lane is next free, so it paces by arithmetic on that clock and waits once
// per burst, not per frame. On a half-duplex link both directions share one
// lane.
const (
	WirePreambleSFD = 8  // preamble and start frame delimiter
	WireFCS         = 4  // frame check sequence
	WireIFG         = 12 // minimum inter-frame gap, in byte times
	WireMinFrame    = 60 // shortest frame without its FCS: shorter ones are padded
)

// WireBytes is how many byte times a frame of n bytes (destination MAC to the
// end of the payload, no FCS) occupies on the wire.
func WireBytes(n int) int {
	return max(n, WireMinFrame) + WireFCS + WirePreambleSFD + WireIFG
}

// wirePS is the time in picoseconds a frame of n bytes takes at mbps (exact
// at 10, 100, 1000 and 2500 Mb/s).
func wirePS(n, mbps int) int64 {
	if mbps <= 0 {
		return 0
	}
	return int64(WireBytes(n)) * 8 * 1_000_000 / int64(mbps)
}

// FrameTime is the time a frame of n bytes (no FCS) occupies a wire at mbps.
func FrameTime(n, mbps int) time.Duration {
	return time.Duration(wirePS(n, mbps) / 1000)
}

// LineRatePPS is the most frames of n bytes (no FCS) a wire at mbps carries in
// a second, one way.
func LineRatePPS(n, mbps int) float64 {
	return float64(mbps) * 1e6 / float64(WireBytes(n)*8)
}

// Clock is the time a wire paces by.
type Clock interface {
	// Now is the time since an origin of the clock's choosing.
	Now() time.Duration
	// Sleep returns once Now has passed d from the call.
	Sleep(d time.Duration)
}

// monoClock is the monotonic clock. Waits shorter than spinBelow are spent
// yielding (Go's timers oversleep by tens of microseconds or more).
type monoClock struct{ origin time.Time }

var defaultClock = monoClock{origin: time.Now()}

func (c monoClock) Now() time.Duration { return time.Since(c.origin) }

func (c monoClock) Sleep(d time.Duration) {
	end := c.Now() + d
	if d >= spinBelow {
		time.Sleep(d - spinBelow/2)
	}
	for c.Now() < end {
		runtime.Gosched()
	}
}

// defaultLink is what an unpaced wire's speed is taken from before a model
// sets one: a gigabit full-duplex link.
var defaultLink = nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}

// rateLocked is the wire's speed and duplex now: the link's when it is up,
// else the last it had. Call with w.pmu held.
func (w *Wire) rateLocked() (mbps int, full bool) {
	if w.rate != nil {
		if st := w.rate(); st.Up && st.SpeedMbps > 0 {
			w.last = st
		}
	}
	if w.last.SpeedMbps == 0 {
		w.last = defaultLink
	}
	return w.last.SpeedMbps, w.last.FullDuplex
}

// clockNow is the wire's clock in picoseconds.
func (w *Wire) clockNow() int64 {
	if w.clock != nil {
		return int64(w.clock.Now()) * 1000
	}
	return int64(defaultClock.Now()) * 1000
}

func (w *Wire) sleep(d time.Duration) {
	if w.clock != nil {
		w.clock.Sleep(d)
		return
	}
	defaultClock.Sleep(d)
}

// SetLineRate paces the wire at the speed and duplex link reports (a model
// passes its PHY's Link; it is read at each burst, outside the model's lock
// for arrivals). nil leaves the wire unpaced. Call it when the model is built.
func (w *Wire) SetLineRate(link func() nic.LinkState) {
	w.pmu.Lock()
	w.rate, w.paced = link, link != nil
	w.pmu.Unlock()
}

// SetClock makes the wire pace by c instead of the monotonic clock (tests).
func (w *Wire) SetClock(c Clock) {
	w.pmu.Lock()
	w.clock = c
	w.rx, w.tx, w.txBusy = 0, 0, false
	w.pmu.Unlock()
}

// SetTxFIFO sets how many bytes of frames the transmitter may hold beyond
// what the wire has carried: its TX FIFO (TxWait).
func (w *Wire) SetTxFIFO(bytes int) {
	w.pmu.Lock()
	w.txFIFO = bytes
	w.pmu.Unlock()
}

// Paced reports whether the wire runs at a line rate (SetLineRate).
func (w *Wire) Paced() bool {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	return w.paced
}

// LineRate is the wire's speed (Mb/s) and duplex now.
func (w *Wire) LineRate() (mbps int, fullDuplex bool) {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	return w.rateLocked()
}

// laneLocked is the lane frames in direction tx use: its own on a
// full-duplex link, the receive lane for both on a half-duplex one.
func (w *Wire) laneLocked(tx, full bool) *int64 {
	if tx && full {
		return &w.tx
	}
	return &w.rx
}

// wireLag is how far in the past a lane may start a frame: a sender the Go
// scheduler ran late (a device side's goroutine, a generator) catches up on
// the time the wire would have carried its frames, instead of losing it. So
// over any interval T a lane carries at most (T + wireLag) of line rate, and
// over a run its average is the line rate.
//
// A busy transmitter is not bound by it: a MAC sends back to back for as long
// as its ring holds frames (802.3 4.2.3.2: the inter-frame gap is the only
// gap), however late the model's engine goroutine woke, so its frames follow
// the previous one on the lane until the model reports it idle (TxIdle).
const wireLag = 200 * time.Microsecond

// reserveLocked puts a frame of n bytes on a lane at the first moment after
// the lane's previous frame and not before floor (picoseconds on the clock),
// and returns when it has passed.
func (w *Wire) reserveLocked(lane *int64, n, mbps int, floor int64) int64 {
	*lane = max(*lane, floor) + wirePS(n, mbps)
	return *lane
}

// lagFloor is the earliest a frame reserved at now may start (wireLag).
func lagFloor(now int64) int64 { return now - int64(wireLag)*1000 }

// Arrive is a frame of n bytes (no FCS) arriving from the far end: it takes
// its time on the receive lane, and Arrive returns once the frame has fully
// arrived (at once on an unpaced wire). Call it without the model's lock,
// before handing the frame to the receive path.
func (w *Wire) Arrive(n int) {
	w.pmu.Lock()
	if !w.paced {
		w.pmu.Unlock()
		return
	}
	mbps, full := w.rateLocked()
	now := w.clockNow()
	end := w.reserveLocked(w.laneLocked(false, full), n, mbps, lagFloor(now))
	w.pmu.Unlock()
	if end > now {
		w.sleep(time.Duration((end - now + 999) / 1000))
	}
}

// ArriveBurst is Arrive for frames sent back to back: it waits once, until the
// last has arrived.
func (w *Wire) ArriveBurst(frames [][]byte) {
	w.pmu.Lock()
	if !w.paced || len(frames) == 0 {
		w.pmu.Unlock()
		return
	}
	mbps, full := w.rateLocked()
	now := w.clockNow()
	lane := w.laneLocked(false, full)
	end := now
	for _, f := range frames {
		end = w.reserveLocked(lane, len(f), mbps, lagFloor(now))
	}
	w.pmu.Unlock()
	if end > now {
		w.sleep(time.Duration((end - now + 999) / 1000))
	}
}

// Depart takes the time of a frame of n bytes (no FCS) the model puts on the
// wire on the transmit lane. Call it (under the model's lock is fine) for
// each frame the MAC sends, then TxWait before the next. The frame starts
// right after the previous one while the transmitter is busy (no TxIdle since
// that one), else no earlier than wireLag before now.
func (w *Wire) Depart(n int) {
	w.pmu.Lock()
	if w.paced {
		mbps, full := w.rateLocked()
		lane := w.laneLocked(true, full)
		floor := lagFloor(w.clockNow())
		if w.txBusy {
			floor = *lane
		}
		w.reserveLocked(lane, n, mbps, floor)
		w.txBusy = true
	}
	w.pmu.Unlock()
}

// TxIdle reports that the transmitter has no frame ready: its rings are
// empty, stopped or reset, or what is left waits for something other than the
// wire (a descriptor the driver has not handed over, a launch time). The wire
// then idles, and the next frame departs no earlier than wireLag before its
// Depart. A model calls it wherever its transmit engine stops for such a
// reason; one that waits only for the wire (TxWait) stays busy.
func (w *Wire) TxIdle() {
	w.pmu.Lock()
	w.txBusy = false
	w.pmu.Unlock()
}

// TxWait is how long the transmitter must hold the next frame: 0 while what
// it sent and the wire has not carried yet fits its TX FIFO (SetTxFIFO),
// else the time until it does.
func (w *Wire) TxWait() time.Duration {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if !w.paced {
		return 0
	}
	mbps, full := w.rateLocked()
	ahead := *w.laneLocked(true, full) - w.clockNow() - int64(w.txFIFO)*8*1_000_000/int64(mbps)
	if ahead <= 0 {
		return 0
	}
	return time.Duration((ahead + 999) / 1000)
}
