package bpf

import (
	"fmt"
	"time"
)

// Region numbers: the high 32 bits of a pointer value. Offsets (low 32 bits)
// index the region's buffer.
const (
	regionNone   = 0 // plain numbers: never dereferenceable
	regionCtx    = 1 // struct xdp_md (or the raw entry's memory)
	regionStack  = 2 // the Runner's stack, all frames
	regionPacket = 3 // Frame.Buf; valid bytes are [DataMeta, DataEnd)
	regionMap    = 4 // map handles (lddw map): offset = map number
	regionFunc   = 5 // subprogram pointers (lddw func): offset = index
	regionStatic = 6 // first region of the collection's global data

	// maxRegions caps the region table: each map lookup and ring buffer
	// reservation in one run adds a region.
	maxRegions = 1 << 16
)

// Call frames, as the kernel: MAX_CALL_FRAMES = 8, MAX_BPF_STACK = 512 each.
const (
	maxFrames = 8
	frameSize = 512
	stackSize = maxFrames * frameSize
)

// DefaultInsnBudget is the instruction budget of one run when Options leaves
// it zero.
const DefaultInsnBudget = 1_000_000

// maxTailCalls is the kernel's MAX_TAIL_CALL_CNT.
const maxTailCalls = 33

// region is one block of memory a program may address. Loads need
// lo <= off && off+size <= hi; stores need off+size <= whi as well (whi is 0
// for read-only data). hi and whi never exceed len(buf).
type region struct {
	buf []byte
	lo  uint64
	hi  uint64
	whi uint64
}

// callFrame is what a local call saves: the kernel's callee-saved registers.
type callFrame struct {
	prog  *Program
	ret   int
	saved [4]uint64 // r6-r9
	fp    uint64    // r10
}

// Runner executes programs for one goroutine. It owns the stack, the region
// table and the redirect state, and is not safe for concurrent use: make one
// per poll loop. Its memory is reused from run to run: Run does not allocate.
type Runner struct {
	cpu     int
	regions []region // [0, fixed) fixed for coll
	fixed   int      // regionStatic+len(coll.statics), set by bind
	coll    *Collection
	frame   *Frame
	depth   int
	budget  int64
	tails   int
	frames  [maxFrames]callFrame
	// regs holds the register files, one per nesting level of exec (see
	// exec); hreg is the one of the tail call in progress.
	regs [maxFrames][256]uint64
	hreg *[16]uint64
	// key is scratch space for helpers that build a map key.
	key   [4]byte
	stack []byte

	redirect Redirect

	// Ring buffer records reserved in this run and not yet submitted.
	records []ringRecord

	rng uint64

	// Fault state of the last run (built into a *Fault on demand).
	faulted     bool
	faultProg   *Program
	faultPC     int
	faultKind   faultKind
	faultAddr   uint64
	faultSize   uint64
	faultDetail int64
	faultPkt    [2]uint64 // the packet region's lo and hi at the fault
	// The first fault of a burst, kept while later frames run.
	saved savedFault

	// trace_printk output buffer, reused.
	printBuf []byte

	// Counters.
	runs    uint64
	aborted uint64

	// jit is what native code writes (jit.go).
	jit jitState
}

// NewRunner returns a Runner for one goroutine. cpu is the per-CPU map slot
// its programs use and what bpf_get_smp_processor_id returns.
func NewRunner(cpu int) *Runner {
	r := &Runner{cpu: cpu, fixed: regionStatic, rng: uint64(time.Now().UnixNano())*2 + 1}
	// A separate allocation: 8-byte aligned, for atomics on the stack.
	r.stack = make([]byte, stackSize)
	r.jit.stackBase = stackBase(r.stack)
	r.regions = make([]region, regionStatic, 64)
	r.regions[regionStack] = region{buf: r.stack, hi: stackSize, whi: stackSize}
	r.regions[regionCtx] = region{lo: 1} // never matches: handled by ctxLoad
	r.regions[regionMap] = region{lo: 1}
	r.regions[regionFunc] = region{lo: 1}
	r.records = make([]ringRecord, 0, 8)
	return r
}

// CPU returns the per-CPU slot of the Runner.
func (r *Runner) CPU() int { return r.cpu }

// Runs returns how many runs the Runner made and how many ended in a fault.
func (r *Runner) Runs() (runs, aborted uint64) { return r.runs, r.aborted }

// Redirect returns where the last run's XDP_REDIRECT sends the frame.
func (r *Runner) Redirect() Redirect { return r.redirect }

// bind prepares the region table for a program of coll.
func (r *Runner) bind(coll *Collection) {
	if r.coll != coll {
		r.coll = coll
		r.jit.hs[hsMimID] = 0 // mim_desc_unsafe.go
		r.jit.first = 0       // jit_first.go
		r.setPCPU(coll)       // jit_pcpu_unsafe.go
		r.regions = r.regions[:regionStatic]
		if coll != nil {
			r.regions = append(r.regions, coll.statics...)
		}
	}
	n := regionStatic
	if coll != nil {
		n += len(coll.statics)
	}
	r.fixed = n
	if len(r.regions) > n {
		// Not cleared: entries past the length are never addressed (every
		// access checks the region number against it), and addRegion
		// reuses the one a lookup of the same entry left there in the last
		// run. They only keep map values from being collected, which live
		// as long as their maps anyway.
		r.regions = r.regions[:n]
	}
}

// setPacket points the packet region at f.
func (r *Runner) setPacket(f *Frame) {
	// Field by field: building the struct and copying it stalls on store
	// forwarding.
	rg := &r.regions[regionPacket]
	rg.buf = f.Buf
	rg.lo = uint64(f.DataMeta)
	rg.hi = uint64(f.DataEnd)
	rg.whi = uint64(f.DataEnd)
}

// addRegion registers b and returns a pointer to its first byte, or 0 when the
// table is full.
func (r *Runner) addRegion(b []byte, writable bool) uint64 {
	n := len(r.regions)
	// A program that looks the same entry up again gets the same region.
	for i := n - 1; i >= n-4 && i >= regionStatic; i-- {
		rg := &r.regions[i]
		if len(rg.buf) == len(b) && len(b) > 0 && &rg.buf[0] == &b[0] && (rg.whi != 0) == writable {
			return uint64(i) << 32
		}
	}
	if n >= maxRegions {
		return 0
	}
	w := uint64(0)
	if writable {
		w = uint64(len(b))
	}
	// The same lookup in the last run left this very region past the end.
	if n < cap(r.regions) && len(b) > 0 {
		next := r.regions[:n+1]
		rg := &next[n]
		if len(rg.buf) == len(b) && &rg.buf[0] == &b[0] && rg.lo == 0 && rg.hi == uint64(len(b)) && rg.whi == w {
			r.regions = next
			return uint64(n) << 32
		}
	}
	r.regions = append(r.regions, region{buf: b, hi: uint64(len(b)), whi: w})
	r.jit.first = 0 // jit_first.go
	return uint64(n) << 32
}

// Run executes p on f, like the kernel's XDP hook: r1 = xdp_md, the verdict is
// the low 32 bits of r0. It never panics; a run that faults returns
// ActionAborted and Fault says why, as does a verdict that is no XDP action
// (the kernel warns and drops those). Frame offsets move when the program
// calls the adjust helpers.
//
// A program with native code takes runJIT, whose first native round runs
// without the recover (nothing on it can panic); the rest runs under it.
func (r *Runner) Run(p *Program, f *Frame) Action {
	return r.runJIT(p, f) // small enough to inline: one call per run
}

// runGuarded is Run under the recover that turns an internal panic into
// ActionAborted.
func (r *Runner) runGuarded(p *Program, f *Frame) (a Action) {
	defer func() {
		if e := recover(); e != nil {
			r.internalFault(p)
			a = ActionAborted
		}
	}()
	return r.run(p, f)
}

// run is Run without the recover.
func (r *Runner) run(p *Program, f *Frame) Action {
	ret, ok := r.runFrame(p, f)
	return r.verdict(p, ret, ok)
}

// verdict turns a run's raw return value into its action: ActionAborted
// when it faulted (ok false) or returned no XDP action, which is a fault.
func (r *Runner) verdict(p *Program, ret uint32, ok bool) Action {
	if !ok {
		return ActionAborted
	}
	a := Action(ret)
	if a > ActionRedirect {
		r.setFault(p, -1, faultBadAction, 0, 0)
		r.faultDetail = int64(ret)
		r.aborted++
		return ActionAborted
	}
	return a
}

// RunFrame is Run returning the program's raw 32-bit return value, as
// BPF_PROG_TEST_RUN reports it; ok is false when the run faulted.
func (r *Runner) RunFrame(p *Program, f *Frame) (ret uint32, ok bool) {
	defer func() {
		if e := recover(); e != nil {
			r.internalFault(p)
			ret, ok = 0, false
		}
	}()
	return r.runFrame(p, f)
}

// internalFault records a panic of the interpreter (a bug in xnic, never the
// program's doing) as the run's fault.
func (r *Runner) internalFault(p *Program) {
	r.setFault(p, -1, faultInternal, 0, 0)
	r.aborted++
	r.frame = nil
	r.depth = 0
}

// RunBurst runs p on frames[0], frames[1], ... in turn, as Run would on
// each, and stores the verdicts in verdicts; for a frame whose verdict is
// ActionRedirect it also stores where it goes (Redirect) in redirects[i],
// when redirects is not nil (other entries are left as they are). It runs
// n = min(len(frames), len(verdicts)) frames (and no more than
// len(redirects) when redirects is not nil) and returns n and the index of
// the first frame whose run xnic aborted (a fault or an unknown verdict),
// or -1: afterwards Fault describes that first fault of the burst, where
// after Run it describes the last run. It never panics and does not
// allocate.
//
// The result is the same as calling Run on each frame, but the safety net
// that turns an internal panic into ActionAborted is set up once per burst
// instead of once per frame.
func (r *Runner) RunBurst(p *Program, frames []Frame, verdicts []Action, redirects []Redirect) (n, firstFault int) {
	n = min(len(frames), len(verdicts))
	if redirects != nil {
		n = min(n, len(redirects))
	}
	firstFault = -1
	for i := 0; i < n; {
		i = r.burst(p, frames[:n], verdicts, redirects, i, &firstFault)
	}
	if firstFault >= 0 {
		r.loadFault()
	}
	return n, firstFault
}

// burst runs frames[i:] until the end or an internal panic, which aborts that
// one frame; it returns where to go on.
func (r *Runner) burst(p *Program, frames []Frame, verdicts []Action, redirects []Redirect, i int, firstFault *int) (next int) {
	defer func() {
		if e := recover(); e != nil {
			r.internalFault(p)
			if next < len(frames) && next < len(verdicts) {
				verdicts[next] = ActionAborted
			}
			if *firstFault < 0 {
				*firstFault = next
				r.saveFault()
			}
			next++
		}
	}()
	var j *jitProg
	if p != nil {
		j = p.jit.Load()
	}
	if j == nil && p != nil {
		next = i
		r.burstInterp(p, frames, verdicts, redirects, &next, firstFault) // interp.go
		return next
	}
	for next = i; next < len(frames) && next < len(verdicts); next++ {
		var a Action
		switch {
		case j != nil && r.burstReady(p, j):
			// Native code runs the frames it can in one entry (jit.go).
			e, v := r.enterBurst(p, j, frames, verdicts, redirects, &next)
			if next >= len(frames) || next >= len(verdicts) {
				return next
			}
			a = r.finishBurst(p, j, &frames[next], e, v)
		case j != nil:
			a = r.runJIT(p, &frames[next])
		default:
			a = r.run(p, &frames[next])
		}
		verdicts[next] = a
		if a == ActionRedirect && next < len(redirects) {
			redirects[next] = r.redirect
		}
		if r.faulted && *firstFault < 0 {
			*firstFault = next
			r.saveFault()
		}
	}
	return next
}

// runFrame is RunFrame without the recover.
func (r *Runner) runFrame(p *Program, f *Frame) (ret uint32, ok bool) {
	r.runs++
	r.faulted = false
	if r.redirect.Kind != RedirectNone {
		r.redirect = Redirect{}
	}
	if p == nil || f == nil {
		r.setFault(nil, -1, faultBadFrame, 0, 0)
		r.aborted++
		return 0, false
	}
	if f.DataMeta < 0 || f.DataMeta > f.Data || f.Data > f.DataEnd || f.DataEnd > len(f.Buf) || int64(len(f.Buf)) >= 1<<31 {
		r.setFault(p, -1, faultBadFrame, 0, 0)
		r.aborted++
		return 0, false
	}
	r.bind(p.coll)
	r.frame = f
	r.setPacket(f)
	r.depth = 0
	r.tails = 0
	r.budget = p.budget
	r.records = r.records[:0]
	// exec, unrolled for the top frame: most runs never leave fast.
	reg := &r.regs[0]
	var v uint64
	if j := p.jit.Load(); j != nil {
		// fastJIT's first round, inline: most runs end in one. The
		// trampoline sets the registers as below and stores them into reg
		// only when the round did not end (r11-r15 are never used: decode
		// allows r0-r10).
		e, r0 := jitStart(r, reg, j.base, regionCtx<<32, regionStack<<32|stackSize)
		if e&0xff == jitExitDone {
			v = r0 // the first round calls no subprogram: depth is 0
		} else {
			v = r.resumeJIT(j, p, e, reg)
		}
	} else {
		clear(reg[:16])
		reg[1], reg[10] = regionCtx<<32, regionStack<<32|stackSize
		if pc, q, done := r.fast(p, 0, 0, reg); done {
			v = reg[0]
		} else {
			v = r.slow(q, pc, 0, reg)
		}
	}
	return r.endRun(v)
}

// endRun ends a run whose r0 is v: it drops the ring buffer records not
// submitted and counts a fault.
func (r *Runner) endRun(v uint64) (ret uint32, ok bool) {
	if len(r.records) != 0 {
		r.dropRecords()
	}
	r.frame = nil
	if r.faulted {
		r.aborted++
		return 0, false
	}
	return uint32(v), true
}

// faultKind says why a run was aborted.
type faultKind uint8

const (
	faultNone faultKind = iota
	faultLoad
	faultStore
	faultCtxStore
	faultBudget
	faultCallDepth
	faultHelperArg
	faultBadAction
	faultBadFrame
	faultCallX
	faultMisaligned
	faultInternal
	faultRegions
	faultNoPC
	faultSpinStuck
)

func (k faultKind) String() string {
	switch k {
	case faultLoad:
		return "load outside any region"
	case faultStore:
		return "store outside any writable region"
	case faultCtxStore:
		return "store to the read-only context"
	case faultBudget:
		return "instruction budget exhausted"
	case faultCallDepth:
		return "call stack deeper than 8 frames"
	case faultHelperArg:
		return "bad helper argument"
	case faultBadAction:
		return "program returned an unknown XDP action"
	case faultBadFrame:
		return "invalid frame (offsets out of order or outside the buffer)"
	case faultCallX:
		return "callx to something that is neither a subprogram nor a helper"
	case faultMisaligned:
		return "misaligned atomic access"
	case faultInternal:
		return "internal error in the interpreter"
	case faultRegions:
		return "too many map value pointers in one run"
	case faultNoPC:
		return "program counter out of range"
	case faultSpinStuck:
		return "bpf_spin_lock waited too long: the lock is never released (taken twice in one run, or its word written directly)"
	}
	return "no fault"
}

func (r *Runner) setFault(p *Program, pc int, k faultKind, addr, size uint64) {
	if r.faulted {
		return
	}
	r.faulted = true
	r.faultProg = p
	r.faultPC = pc
	r.faultKind = k
	r.faultAddr = addr
	r.faultSize = size
	r.faultDetail = 0
	// The packet's bounds now, for the message: by the time Fault is read
	// the region may describe another frame of the burst.
	if len(r.regions) > regionPacket {
		r.faultPkt = [2]uint64{r.regions[regionPacket].lo, r.regions[regionPacket].hi}
	}
}

// savedFault is a copy of a run's fault state.
type savedFault struct {
	prog   *Program
	pc     int
	kind   faultKind
	addr   uint64
	size   uint64
	detail int64
	pkt    [2]uint64
}

func (r *Runner) saveFault() {
	r.saved = savedFault{r.faultProg, r.faultPC, r.faultKind, r.faultAddr, r.faultSize, r.faultDetail, r.faultPkt}
}

func (r *Runner) loadFault() {
	s := &r.saved
	r.faulted = true
	r.faultProg, r.faultPC, r.faultKind, r.faultAddr, r.faultSize, r.faultDetail = s.prog, s.pc, s.kind, s.addr, s.size, s.detail
	r.faultPkt = s.pkt
}

// Fault describes why the last run was aborted by xnic (not by a program that
// returned XDP_ABORTED itself).
type Fault struct {
	Program string
	Index   int    // instruction index, -1 when not tied to one
	Insn    string // its disassembly
	Reason  string
}

func (f *Fault) Error() string {
	if f.Index < 0 {
		return fmt.Sprintf("program %s: %s", f.Program, f.Reason)
	}
	return fmt.Sprintf("program %s: instruction %d (%s): %s", f.Program, f.Index, f.Insn, f.Reason)
}

// Fault returns why the last run was aborted by xnic, or nil when it was not.
// It allocates; call it off the fast path.
func (r *Runner) Fault() error {
	if !r.faulted {
		return nil
	}
	f := &Fault{Index: r.faultPC, Reason: r.faultKind.String()}
	if r.faultProg != nil {
		f.Program = r.faultProg.name
		if r.faultPC >= 0 {
			f.Insn = r.faultProg.insnString(r.faultPC)
		}
	}
	switch r.faultKind {
	case faultLoad, faultStore, faultCtxStore, faultMisaligned:
		f.Reason += fmt.Sprintf(": %d bytes at %s", r.faultSize, r.describe(r.faultAddr))
	case faultHelperArg:
		if r.faultDetail != 0 {
			f.Reason += fmt.Sprintf(" (%s)", helperArgReason(r.faultDetail))
		}
	case faultBadAction:
		f.Reason += fmt.Sprintf(": %d", r.faultDetail)
	}
	return f
}

// describe names the region a pointer value points into.
func (r *Runner) describe(a uint64) string {
	idx := a >> 32
	off := a & 0xffffffff
	name := ""
	switch {
	case idx == regionNone:
		return fmt.Sprintf("address 0x%x (not a pointer)", a)
	case idx == regionCtx:
		name = "context"
	case idx == regionStack:
		return fmt.Sprintf("stack offset %d from the top", int64(off)-stackSize)
	case idx == regionPacket:
		return fmt.Sprintf("packet offset %d (valid %d..%d)", off, r.faultPkt[0], r.faultPkt[1])
	case idx == regionMap:
		name = "map handle"
	case idx == regionFunc:
		name = "function pointer"
	case r.coll != nil && idx < uint64(regionStatic+len(r.coll.statics)):
		name = "global data " + r.coll.staticNames[idx-regionStatic]
	case idx < uint64(len(r.regions)):
		name = "map value or ring buffer record"
	default:
		return fmt.Sprintf("address 0x%x (no such region)", a)
	}
	hi := uint64(0)
	if idx < uint64(len(r.regions)) {
		hi = r.regions[idx].hi
	}
	return fmt.Sprintf("%s offset %d (size %d)", name, off, hi)
}
