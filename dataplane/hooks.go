package dataplane

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// Hooks on a running engine: live capture (AddCapture), program replacement
// (ReplaceProgram) and run-time statistics (SetRunTime). A poll goroutine
// looks them up once per poll, before it receives a burst: one atomic load of
// Engine.hooks and a pointer comparison, nothing more while nothing changes.
// A change is a new burstHooks value; each poll goroutine takes it between
// two bursts, so every frame of a burst sees one program and one set of
// captures, and no frame is run twice or skipped.

// burstHooks is one generation of hooks. Immutable once published.
type burstHooks struct {
	gen      uint64
	runners  []BurstRunner // by poller slot; nil: the Config's program
	prog     Program       // the program runners run (nil: the Config's)
	dump     Dumper        // Config.Dump and the captures, or nil
	captures []Dumper
	timed    bool // measure the program's run time per burst
}

// pollHooks is a poll goroutine's view of the hooks.
type pollHooks struct {
	cur      *burstHooks   // the generation the goroutine runs; its own
	untimed  BurstRunner   // the program's runner, without timing; its own
	taken    atomic.Uint64 // cur.gen, for ReplaceProgram's wait
	runBase  atomic.Uint64 // RxPackets when the program was taken
	runNanos atomic.Uint64 // time in the program since it was taken, when timed
}

// takeHooks makes h the poll goroutine's hooks: the program's runner when
// the program changed, the dumper. Called between bursts only.
func (p *poller) takeHooks(h *burstHooks) {
	old := p.hooks.cur
	if p.hooks.untimed == nil {
		p.hooks.untimed = p.run // the Config's program
	}
	if h.runners != nil && (old == nil || old.runners == nil || &old.runners[0] != &h.runners[0]) {
		p.hooks.untimed = h.runners[p.slot]
		p.clearRxMeta()
		p.initRxMeta(h.prog, p.port.p)
		p.hooks.runBase.Store(p.ctr[RxPackets])
		p.hooks.runNanos.Store(0)
	}
	p.run = p.hooks.untimed
	if h.timed {
		p.run = timedRunner{p.run, &p.hooks.runNanos}
	}
	p.dump = h.dump
	p.hooks.cur = h
	p.hooks.taken.Store(h.gen)
}

// clearRxMeta undoes initRxMeta for a program that may not read metadata.
func (p *poller) clearRxMeta() {
	p.metas = nil
	for i := range p.frames {
		p.frames[i].Meta = nil
	}
}

// timedRunner is a runner whose bursts are timed (SetRunTime): the poll
// goroutine runs it instead of the program's own while timing is on.
type timedRunner struct {
	BurstRunner
	nanos *atomic.Uint64
}

func (t timedRunner) RunBurst(frames []bpf.Frame, verdicts []bpf.Action, redirects []bpf.Redirect) (n, firstFault int) {
	t0 := time.Now()
	n, firstFault = t.BurstRunner.RunBurst(frames, verdicts, redirects)
	t.nanos.Add(uint64(time.Since(t0)))
	return n, firstFault
}

// current is the published hooks; callers hold e.hookMu.
func (e *Engine) current() burstHooks {
	if h := e.hooks.Load(); h != nil {
		return *h
	}
	return burstHooks{dump: e.cfg.Dump}
}

// publish stores h as the next generation; callers hold e.hookMu.
func (e *Engine) publish(h burstHooks) *burstHooks {
	h.gen = e.current().gen + 1
	e.hooks.Store(&h)
	return &h
}

// AddCapture makes d see every frame, with its verdict, as the program left
// it (alongside Config.Dump), from the next burst of every poll goroutine
// on; remove stops it, after which no poll goroutine calls d once the next
// burst began. d's methods are called from poll goroutines at once.
func (e *Engine) AddCapture(d Dumper) (remove func()) {
	e.hookMu.Lock()
	defer e.hookMu.Unlock()
	h := e.current()
	h.captures = append(slices.Clip(h.captures), d)
	h.dump = e.dumper(h.captures)
	e.publish(h)
	return func() {
		e.hookMu.Lock()
		defer e.hookMu.Unlock()
		h := e.current()
		h.captures = slices.DeleteFunc(slices.Clone(h.captures), func(x Dumper) bool { return x == d })
		h.dump = e.dumper(h.captures)
		e.publish(h)
	}
}

// dumper is Config.Dump and caps as one Dumper (nil: none).
func (e *Engine) dumper(caps []Dumper) Dumper {
	all := caps
	if e.cfg.Dump != nil {
		all = append([]Dumper{e.cfg.Dump}, caps...)
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return teeDumper(all)
}

// teeDumper hands each frame to every Dumper that wants its verdict.
type teeDumper []Dumper

func (t teeDumper) Want(a bpf.Action) bool {
	for _, d := range t {
		if d.Want(a) {
			return true
		}
	}
	return false
}

func (t teeDumper) Dump(port, queue int, a bpf.Action, frame []byte) {
	for _, d := range t {
		if d.Want(a) {
			d.Dump(port, queue, a, frame)
		}
	}
}

// ErrReplace is returned when a program cannot replace the running one.
var ErrReplace = errors.New("dataplane: program not replaced")

// ReplaceProgram makes prog the program every poll goroutine runs, from its
// next burst on: a frame is run by the old program or the new one, never
// both, never neither. It returns once every running poll goroutine took it
// (or timeout passed: an error, the program then reaches the rest at their
// next poll), so that the caller knows the old program runs no more. CPU
// workers keep the programs of their cpumap entries. prog must have been
// loaded for NumSlots runners.
func (e *Engine) ReplaceProgram(prog Program, timeout time.Duration) error {
	if prog == nil {
		return fmt.Errorf("%w: no program", ErrReplace)
	}
	slots := 0
	for _, p := range e.pollers {
		slots = max(slots, p.slot+1)
	}
	runners := make([]BurstRunner, max(slots, 1))
	for _, p := range e.pollers {
		runners[p.slot] = burstRunner(prog.NewRunner(p.slot))
	}
	e.hookMu.Lock()
	h := e.current()
	h.runners, h.prog = runners, prog
	gen := e.publish(h).gen
	e.hookMu.Unlock()
	return e.waitTaken(gen, timeout)
}

// waitTaken waits until every poll goroutine of a running engine took
// generation gen.
func (e *Engine) waitTaken(gen uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		e.mu.Lock()
		running := e.state == 1
		e.mu.Unlock()
		if !running {
			return nil // no poll goroutine runs: each takes it when it starts
		}
		late := -1
		for i, p := range e.pollers {
			if p.hooks.taken.Load() < gen {
				late = i
				break
			}
		}
		if late < 0 {
			return nil
		}
		if time.Now().After(deadline) {
			p := e.pollers[late]
			return fmt.Errorf("%w yet on port %s queue %d within %v (it takes it at its next poll)", ErrReplace, p.port.p.Name(), p.queue, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// SetRunTime turns the measurement of the program's run time on or off
// (bpftool's kernel.bpf_stats_enabled); on, a poll reads the clock twice per
// burst.
func (e *Engine) SetRunTime(on bool) {
	e.hookMu.Lock()
	defer e.hookMu.Unlock()
	h := e.current()
	if h.timed != on {
		h.timed = on
		e.publish(h)
	}
}

// ProgramRuns is how many frames the poll goroutines ran through the program
// since it was last replaced (or since Start), and the time they spent in it
// while SetRunTime was on.
func (e *Engine) ProgramRuns() (runs uint64, nanos time.Duration) {
	for _, p := range e.pollers {
		if c, base := p.pub[RxPackets].Load(), p.hooks.runBase.Load(); c > base {
			runs += c - base
		}
		nanos += time.Duration(p.hooks.runNanos.Load())
	}
	return runs, nanos
}
