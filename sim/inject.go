package sim

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultKind is one kind of device fault the injector makes happen: what a
// board does on a bad day, each as the device's datasheet describes its own
// side of it. The models consult the injector where the fault shows.
type FaultKind uint8

const (
	FaultTxHang    FaultKind = iota + 1 // the TX engine stops: descriptors handed over are never completed
	FaultRxStall                        // the RX DMA stops writing frames: they wait in the FIFO, then overflow it
	FaultBusError                       // a fatal bus error on the next descriptor or buffer fetch
	FaultRemoval                        // surprise removal: every register reads all-ones, DMA stops
	FaultLinkDown                       // the link partner goes away for the fault's duration
	FaultPHYDead                        // the PHY stops answering MDIO (reads all-ones) and drops the link
	FaultIRQLost                        // interrupts are not delivered (the next one, or during the duration)
	FaultIRQStorm                       // interrupts fire continuously for the duration
	FaultDescError                      // the next received frame's descriptor is written back with an error bit

	numFaultKinds = int(FaultDescError) + 1
)

var faultNames = [numFaultKinds]string{
	FaultTxHang: "tx-hang", FaultRxStall: "rx-stall", FaultBusError: "bus-error", FaultRemoval: "removal",
	FaultLinkDown: "link-down", FaultPHYDead: "phy-dead", FaultIRQLost: "irq-lost", FaultIRQStorm: "irq-storm",
	FaultDescError: "desc-error",
}

var faultHelp = [numFaultKinds]string{
	FaultTxHang:    "the TX engine stops completing descriptors (until a reset, or FOR)",
	FaultRxStall:   "the RX DMA stops: frames wait in the FIFO and overflow it (until a reset, or FOR)",
	FaultBusError:  "a fatal bus error on the next descriptor fetch (dwmac FBE, fec EBERR, igb: the queue stops)",
	FaultRemoval:   "surprise removal: registers read all-ones, DMA stops, for good",
	FaultLinkDown:  "the link goes down, and up again after FOR (default 1s)",
	FaultPHYDead:   "the PHY stops answering MDIO (reads 0xffff) and the link drops (until a reset, or FOR)",
	FaultIRQLost:   "the next interrupt is lost (or every one during FOR)",
	FaultIRQStorm:  "every vector fires continuously for FOR (default 100ms)",
	FaultDescError: "the next received frame's descriptor is written back with an error bit",
}

func (k FaultKind) String() string {
	if int(k) > 0 && int(k) < numFaultKinds {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Help says what the fault does to the device.
func (k FaultKind) Help() string {
	if int(k) > 0 && int(k) < numFaultKinds {
		return faultHelp[k]
	}
	return ""
}

// FaultKinds lists every kind, in order.
func FaultKinds() []FaultKind {
	out := make([]FaultKind, 0, numFaultKinds-1)
	for k := FaultKind(1); int(k) < numFaultKinds; k++ {
		out = append(out, k)
	}
	return out
}

// FaultSpec is one scheduled fault: Kind, After the injector starts, lasting
// For (0: the kind's own end, see FaultKind).
type FaultSpec struct {
	Kind  FaultKind
	After time.Duration
	For   time.Duration
}

func (s FaultSpec) String() string {
	if s.For > 0 {
		return fmt.Sprintf("%s@%v:%v", s.Kind, s.After, s.For)
	}
	return fmt.Sprintf("%s@%v", s.Kind, s.After)
}

// ErrFaultSpec is wrapped by ParseFaultSpec's errors.
var ErrFaultSpec = errors.New("bad fault")

// ParseFaultSpec reads KIND@AFTER[:FOR], durations in Go syntax ("tx-hang@2s",
// "link-down@500ms:1s").
func ParseFaultSpec(s string) (FaultSpec, error) {
	name, when, ok := strings.Cut(s, "@")
	if !ok {
		return FaultSpec{}, fmt.Errorf("%w %q: want KIND@AFTER[:FOR], KIND one of %s", ErrFaultSpec, s, strings.Join(faultNames[1:], ", "))
	}
	var spec FaultSpec
	for k := FaultKind(1); int(k) < numFaultKinds; k++ {
		if faultNames[k] == name {
			spec.Kind = k
		}
	}
	if spec.Kind == 0 {
		return FaultSpec{}, fmt.Errorf("%w %q: no kind %q; the kinds are %s", ErrFaultSpec, s, name, strings.Join(faultNames[1:], ", "))
	}
	after, dur, hasFor := strings.Cut(when, ":")
	var err error
	if spec.After, err = time.ParseDuration(after); err != nil || spec.After < 0 {
		return FaultSpec{}, fmt.Errorf("%w %q: AFTER %q is not a duration like 2s or 500ms", ErrFaultSpec, s, after)
	}
	if hasFor {
		if spec.For, err = time.ParseDuration(dur); err != nil || spec.For <= 0 {
			return FaultSpec{}, fmt.Errorf("%w %q: FOR %q is not a positive duration", ErrFaultSpec, s, dur)
		}
	}
	if spec.Kind == FaultRemoval && hasFor {
		return FaultSpec{}, fmt.Errorf("%w %q: a removed device does not come back: removal takes no FOR", ErrFaultSpec, s)
	}
	return spec, nil
}

// FaultEvent is one fault as it happened.
type FaultEvent struct {
	Spec  FaultSpec
	Start time.Time // when it took effect
	End   time.Time // when it ended (its duration passed, or the device was reset); zero while on
	Reset bool      // a device reset ended it
}

// Injector makes scheduled faults happen on one model. The model asks On
// (a state fault: hang, stall, dead PHY, lost interrupts) or Take (a one-shot
// fault: the next fetch, the next descriptor, the next interrupt) where the
// fault shows, calls DeviceReset from its reset, and gives Start hooks for the
// faults it applies itself (link down, removal, storm). The zero value has
// nothing scheduled. Safe for concurrent use; On and Take do not allocate.
type Injector struct {
	on      [numFaultKinds]atomic.Bool
	pending [numFaultKinds]atomic.Int32 // one-shot faults not taken yet
	any     atomic.Bool                 // something was ever scheduled

	mu      sync.Mutex
	specs   []FaultSpec   // guarded by mu
	events  []FaultEvent  // guarded by mu
	timers  []*time.Timer // guarded by mu
	hooks   FaultHooks    // guarded by mu
	started bool          // guarded by mu
	closed  bool          // guarded by mu
}

// FaultHooks are what a model does when a fault starts or ends (both may be
// nil). They run on a timer's goroutine, without the injector's lock.
type FaultHooks struct {
	Start func(FaultKind)
	End   func(FaultKind)
}

// Schedule adds faults to run once Start is called (after Start: their
// clocks start now).
func (in *Injector) Schedule(specs ...FaultSpec) {
	if len(specs) > 0 {
		in.any.Store(true)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.specs = append(in.specs, specs...)
	if in.started && !in.closed {
		in.armLocked(specs)
	}
}

// armLocked starts the clocks of specs.
func (in *Injector) armLocked(specs []FaultSpec) {
	for i := range specs {
		spec := specs[i]
		in.timers = append(in.timers, time.AfterFunc(spec.After, func() { in.begin(spec) }))
	}
}

// Scheduled reports whether any fault was scheduled.
func (in *Injector) Scheduled() bool { return in != nil && in.any.Load() }

// SetHooks sets the model's hooks.
func (in *Injector) SetHooks(h FaultHooks) {
	in.mu.Lock()
	in.hooks = h
	in.mu.Unlock()
}

// Start starts the clocks of the scheduled faults (a second Start does
// nothing more).
func (in *Injector) Start() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.started || in.closed {
		return
	}
	in.started = true
	in.armLocked(in.specs)
}

// Close stops every pending fault clock; faults on stay on.
func (in *Injector) Close() {
	in.mu.Lock()
	in.closed = true
	for _, t := range in.timers {
		t.Stop()
	}
	in.mu.Unlock()
}

func (in *Injector) begin(spec FaultSpec) {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return
	}
	in.events = append(in.events, FaultEvent{Spec: spec, Start: time.Now()})
	idx := len(in.events) - 1
	hooks := in.hooks
	dur := spec.For
	switch spec.Kind {
	case FaultLinkDown:
		dur = cmpOr(dur, time.Second)
	case FaultIRQStorm:
		dur = cmpOr(dur, 100*time.Millisecond)
	}
	if dur > 0 {
		in.timers = append(in.timers, time.AfterFunc(dur, func() { in.end(spec.Kind, idx, false) }))
	}
	// Armed before the lock is dropped: whoever sees the event in Events
	// sees the fault in effect.
	switch spec.Kind {
	case FaultBusError, FaultDescError:
		in.pending[spec.Kind].Add(1)
	case FaultIRQLost:
		if spec.For == 0 {
			in.pending[spec.Kind].Add(1)
		} else {
			in.on[spec.Kind].Store(true)
		}
	default:
		in.on[spec.Kind].Store(true)
	}
	in.mu.Unlock()
	if hooks.Start != nil {
		hooks.Start(spec.Kind)
	}
	if spec.Kind == FaultBusError || spec.Kind == FaultDescError || (spec.Kind == FaultIRQLost && spec.For == 0) {
		in.end(spec.Kind, idx, false) // one-shot: done once scheduled (Take marks it used)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// end turns a state fault off and records it.
func (in *Injector) end(k FaultKind, idx int, reset bool) {
	in.mu.Lock()
	ev := &in.events[idx]
	if !ev.End.IsZero() {
		in.mu.Unlock()
		return
	}
	ev.End, ev.Reset = time.Now(), reset
	hooks := in.hooks
	in.mu.Unlock()
	oneShot := k == FaultBusError || k == FaultDescError || (k == FaultIRQLost && ev.Spec.For == 0)
	if oneShot {
		return
	}
	in.on[k].Store(false)
	if hooks.End != nil {
		hooks.End(k)
	}
}

// On reports whether a state fault of kind k is on now.
func (in *Injector) On(k FaultKind) bool {
	return in != nil && in.on[k].Load()
}

// Take reports (once per scheduled fault) that a one-shot fault of kind k
// happens now, at the access that asks.
func (in *Injector) Take(k FaultKind) bool {
	if in == nil {
		return false
	}
	for {
		n := in.pending[k].Load()
		if n <= 0 {
			return false
		}
		if in.pending[k].CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// DeviceReset ends the faults a reset clears: a hung TX engine, a stalled RX
// DMA, a dead PHY (its reset line). Removal and link faults are not the
// device's to clear. Call it from the model's reset.
func (in *Injector) DeviceReset() { in.Clear(FaultTxHang, FaultRxStall, FaultPHYDead) }

// Clear ends the faults of the given kinds that are on, as a reset of the
// part that hung does (a model whose DMA engines restart when the MAC is
// disabled clears the hang and the stall there).
func (in *Injector) Clear(kinds ...FaultKind) {
	if in == nil || !in.any.Load() {
		return
	}
	in.mu.Lock()
	var idx []int
	var ks []FaultKind
	for i, ev := range in.events {
		if !ev.End.IsZero() {
			continue
		}
		for _, k := range kinds {
			if ev.Spec.Kind == k {
				idx, ks = append(idx, i), append(ks, k)
			}
		}
	}
	in.mu.Unlock()
	for j, i := range idx {
		in.end(ks[j], i, true)
	}
}

// Events returns what happened so far, in order.
func (in *Injector) Events() []FaultEvent {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]FaultEvent(nil), in.events...)
}
