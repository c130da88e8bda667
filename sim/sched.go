package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Sched is a model's device side: the work a DMA engine does beside the CPU
// (fetching a descriptor, finishing a transmit, clocking out an MDIO frame,
// coming out of reset) runs here, later than the register write that asked for
// it, instead of inside that write.
//
// A model makes one Timer per kind of work and arms it from a register access
// (under its own lock). An armed timer becomes due after a latency drawn from a
// seeded generator (Config.MinLatency..MaxLatency) and then runs, on whichever
// goroutine gets to it first:
//
//   - a background goroutine that sleeps until the earliest due timer (started
//     by the first Arm, parked while nothing is armed, ended by Close), or
//   - Poll, which the model calls at every register access before handling it
//     (with its lock released): a driver that reads a register after waiting
//     long enough always finds the device has moved on, whatever the Go
//     scheduler did with the background goroutine.
//
// So the device may observe memory between any two of the driver's register
// accesses, and at random moments between them. The latencies come from one
// seeded PCG; Seed reports the seed (the models put it in their fault log on
// the first fault, and a test can rerun with SchedConfig.Seed or the
// XNIC_SIM_SEED environment variable). The Go scheduler still decides exact
// interleavings, so reruns are reproducible in latencies, not in every
// instruction.
//
// In synchronous mode (SchedConfig.Sync, for benchmarks) an armed timer is due
// at once, so Poll at the end of the access that armed it runs it: the model
// then behaves as if the device finished inside the write.
//
// A timer's function runs with no Sched lock held, never concurrently with
// itself, and may re-arm its own timer (the next frame, the next poll).
type Sched struct {
	seed    uint64
	sync    bool
	min     time.Duration
	span    int64 // max-min in ns
	armedN  atomic.Int32
	mu      sync.Mutex
	rng     *rand.Rand
	timers  []*Timer
	worker  bool          // the background goroutine was started
	done    chan struct{} // closed by Close: the worker ends
	wake    chan struct{} // pokes the worker when an earlier timer is armed
	idle    *sync.Cond    // signalled when a timer finishes running
	running int           // timers running now
	busyN   int           // armed timers not armed by ArmIdle; guarded by mu
	pass    uint64        // runDue passes; guarded by mu
	closed  bool
}

// Timer is one kind of deferred device work.
type Timer struct {
	s       *Sched
	fn      func()
	armed   bool      // guarded by s.mu
	due     time.Time // guarded by s.mu
	running bool      // guarded by s.mu
	again   bool      // armed while running; guarded by s.mu
	idle    bool      // armed by ArmIdle; guarded by s.mu
	real    bool      // armed by ArmReal: due at a time even when synchronous; guarded by s.mu
	pass    uint64    // the runDue pass that last ran it; guarded by s.mu
}

// SchedConfig sets a device side's latencies.
type SchedConfig struct {
	// Seed seeds the latencies. 0: XNIC_SIM_SEED from the environment if set,
	// else a random seed (Seed reports it).
	Seed uint64
	// Sync runs every armed timer at the next Poll (the end of the register
	// access that armed it): no asynchrony, for benchmarks.
	Sync bool
	// MinLatency and MaxLatency bound the time from arming a timer to it being
	// due. 0: DefaultMinLatency and DefaultMaxLatency.
	MinLatency, MaxLatency time.Duration
}

// Default device latencies: a few microseconds, the order of a descriptor
// fetch plus a short frame on a gigabit wire (a 1514-byte frame takes 12 us).
const (
	DefaultMinLatency = 2 * time.Microsecond
	DefaultMaxLatency = 20 * time.Microsecond
)

// SeedEnv is the environment variable that fixes the seed of every Sched
// whose config leaves Seed 0.
const SeedEnv = "XNIC_SIM_SEED"

// SyncEnv set to 1 makes every Sched synchronous (SchedConfig.Sync), to
// measure what the asynchronous device sides cost; the tests of the device's
// own time then fail, as they should.
const SyncEnv = "XNIC_SIM_SYNC"

var seedCounter atomic.Uint64

// spinBelow is the shortest wait the background goroutine sleeps for; shorter
// ones it spends yielding.
const spinBelow = 200 * time.Microsecond

// NewSched makes a device side. It starts no goroutine until a timer is armed.
func NewSched(cfg SchedConfig) *Sched {
	seed := cfg.Seed
	if seed == 0 {
		if v, err := strconv.ParseUint(os.Getenv(SeedEnv), 0, 64); err == nil && v != 0 {
			seed = v
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) ^ seedCounter.Add(1)<<32 | 1
	}
	lo, hi := cfg.MinLatency, cfg.MaxLatency
	if lo <= 0 {
		lo = DefaultMinLatency
	}
	if hi <= 0 {
		hi = DefaultMaxLatency
	}
	if hi < lo {
		hi = lo
	}
	s := &Sched{seed: seed, sync: cfg.Sync || os.Getenv(SyncEnv) == "1", min: lo, span: int64(hi - lo),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), wake: make(chan struct{}, 1),
		done: make(chan struct{})}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Seed is the seed of the latencies.
func (s *Sched) Seed() uint64 { return s.seed }

// Synchronous reports SchedConfig.Sync.
func (s *Sched) Synchronous() bool { return s.sync }

// String names the schedule for fault messages.
func (s *Sched) String() string {
	if s.sync {
		return "device side synchronous"
	}
	return fmt.Sprintf("device schedule seed %d (%s=%d reruns it)", s.seed, SeedEnv, s.seed)
}

// Between draws a duration in [lo, hi] from the seeded generator (for a
// latency of its own, as ArmAfter's argument).
func (s *Sched) Between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// IntN draws an int in [0, n) from the seeded generator (n > 0).
func (s *Sched) IntN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

// NewTimer registers fn as deferred work. Make timers when the model is built
// (this allocates; arming does not).
func (s *Sched) NewTimer(fn func()) *Timer {
	t := &Timer{s: s, fn: fn}
	s.mu.Lock()
	s.timers = append(s.timers, t)
	s.mu.Unlock()
	return t
}

// Arm makes t due after a random latency; an armed timer keeps its time. Safe
// under the model's lock.
func (t *Timer) Arm() { t.arm(-1, false) }

// ArmAfter makes t due after d (plus nothing random); an armed timer that is
// due later is moved earlier.
func (t *Timer) ArmAfter(d time.Duration) { t.arm(d, false) }

// ArmReal makes t due after d of real time, even on a synchronous device side:
// for what the physical world times (a frame's time on the wire), not the
// device's latency. On a synchronous side the background goroutine runs it.
func (t *Timer) ArmReal(d time.Duration) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	due := time.Now().Add(max(d, 0))
	if t.running {
		if !t.again || due.Before(t.due) {
			t.due = due
		}
		t.idle, t.again, t.real = false, true, true
		return
	}
	if t.armed && !t.real && s.sync {
		return // due at once already
	}
	was := t.armed
	s.setArmed(t, false)
	if was && !due.Before(t.due) {
		return
	}
	t.due, t.real = due, true
	s.wakeLocked()
}

// ArmIdle arms t like Arm for a device that only keeps looking (a ring waiting
// for the rest of a frame): Settle runs it once but does not wait for it.
func (t *Timer) ArmIdle() { t.arm(idlePoll, true) }

// idlePoll is how often a device that only keeps looking looks again.
const idlePoll = 500 * time.Microsecond

// setArmed marks t armed; idle says it was armed only by ArmIdle.
func (s *Sched) setArmed(t *Timer, idle bool) {
	if !t.armed {
		t.armed = true
		s.armedN.Add(1)
		t.idle = idle
		if !idle {
			s.busyN++
		}
		return
	}
	if t.idle && !idle {
		t.idle = false
		s.busyN++
	}
}

// setDisarmed marks t not armed.
func (s *Sched) setDisarmed(t *Timer) {
	if t.armed {
		t.armed = false
		s.armedN.Add(-1)
		if !t.idle {
			s.busyN--
		}
	}
}

func (t *Timer) arm(d time.Duration, idle bool) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var due time.Time // synchronous: due at once (and no clock read: it is slow on some VMs)
	if !s.sync {
		if d < 0 {
			d = s.min
			if s.span > 0 {
				d += time.Duration(s.rng.Int64N(s.span + 1))
			}
		}
		due = time.Now().Add(d)
	}
	if t.running {
		if !t.again || due.Before(t.due) {
			t.due = due
		}
		if !t.again {
			t.idle = idle
		}
		t.idle = t.idle && idle
		t.again = true
		return
	}
	was := t.armed
	s.setArmed(t, idle)
	if was && !due.Before(t.due) && !(s.sync && t.real) {
		return
	}
	t.due, t.real = due, false
	if s.sync {
		return
	}
	s.wakeLocked()
}

// wakeLocked starts the worker or pokes it to look at the timers again.
func (s *Sched) wakeLocked() {
	if !s.worker {
		s.worker = true
		go s.work()
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Armed reports whether t waits to run (or runs now).
func (t *Timer) Armed() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.armed || t.running
}

// Poll runs every timer that is due, on the caller's goroutine. Models call it
// at each register access without holding their own lock.
func (s *Sched) Poll() {
	if s.armedN.Load() == 0 {
		return
	}
	s.runDue(false)
}

// Settle runs every armed timer now, as if their time had come, until none is
// armed or running: the device finishes what it was asked to do. For tests
// (and Close); a timer that keeps re-arming itself forever makes Settle give
// up after 10 s.
func (s *Sched) Settle() {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.runDue(true)
		s.mu.Lock()
		for s.running > 0 {
			s.idle.Wait()
		}
		busy := s.busyN != 0
		s.mu.Unlock()
		if !busy {
			return
		}
	}
}

// Close disarms every timer and ends the background goroutine; later Arms do
// nothing.
func (s *Sched) Close() {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	for _, t := range s.timers {
		s.setDisarmed(t)
		t.again = false
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// runDue runs the due timers (all armed ones with all set), each at most once:
// a timer that re-arms itself runs again at a later call.
func (s *Sched) runDue(all bool) { s.runDueFrom(all, false) }

// runDueFrom is runDue; worker says the background goroutine calls it, which
// on a synchronous device side runs only ArmReal timers (the others belong to
// the register access that armed them).
func (s *Sched) runDueFrom(all, worker bool) {
	s.mu.Lock()
	s.pass++
	pass := s.pass
	s.mu.Unlock()
	for {
		s.mu.Lock()
		var now time.Time // read once a timer needs it (the clock is slow on some VMs)
		var t *Timer
		for _, c := range s.timers {
			if !c.armed || c.running || c.pass == pass {
				continue
			}
			due := all || (s.sync && !c.real && !worker)
			if !due && (!s.sync || c.real) {
				if now.IsZero() {
					now = time.Now()
				}
				due = !c.due.After(now)
			}
			if due {
				t = c
				break
			}
		}
		if t == nil {
			s.mu.Unlock()
			return
		}
		s.setDisarmed(t)
		t.pass = pass
		t.running = true
		s.running++
		s.mu.Unlock()

		t.fn()

		s.mu.Lock()
		t.running = false
		s.running--
		if t.again && !s.closed {
			t.again = false
			s.setArmed(t, t.idle)
			if !s.sync || t.real {
				s.wakeLocked()
			}
		}
		s.idle.Broadcast()
		s.mu.Unlock()
	}
}

// work is the background goroutine: it sleeps until the earliest due timer,
// runs what is due, parks while nothing is armed and ends at Close.
func (s *Sched) work() {
	var sleeper *time.Timer
	for {
		s.mu.Lock()
		var next time.Time
		found := false
		for _, t := range s.timers {
			if t.armed && (!s.sync || t.real) && (!found || t.due.Before(next)) {
				next, found = t.due, true
			}
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		if !found {
			select {
			case <-s.wake:
			case <-s.done:
				return
			}
			continue
		}
		if d := time.Until(next); d > 0 && d < spinBelow {
			// Go's timers sleep for about a millisecond whatever they are
			// asked: yield until the few microseconds have passed.
			for time.Now().Before(next) && s.armedN.Load() != 0 {
				runtime.Gosched()
			}
		} else if d > 0 {
			if sleeper == nil {
				sleeper = time.NewTimer(d)
			} else {
				sleeper.Reset(d)
			}
			select {
			case <-sleeper.C:
			case <-s.wake:
				sleeper.Stop()
				continue
			case <-s.done:
				return
			}
		}
		s.runDueFrom(false, true)
	}
}
