package bpf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Engine selects how programs run: the JIT (native code) or the interpreter.
type Engine uint8

const (
	// EngineDefault is the JIT where xnic has a backend for the platform
	// (JITAvailable), the interpreter elsewhere. The environment variable
	// XNIC_ENGINE=interp (or jit) overrides it for the whole process: a
	// switch for tests and benchmarks that load programs with the default.
	EngineDefault Engine = iota
	// EngineInterp is the interpreter: the reference, on every platform.
	EngineInterp
	// EngineJIT is the JIT; loading fails where it is not available.
	EngineJIT
)

func (e Engine) String() string {
	switch e {
	case EngineDefault:
		return "default"
	case EngineInterp:
		return "interp"
	case EngineJIT:
		return "jit"
	}
	return fmt.Sprintf("Engine(%d)", uint8(e))
}

// ParseEngine reads an engine name: "interp", "jit" or "default" (or "").
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "", "default", "auto":
		return EngineDefault, nil
	case "interp", "interpreter":
		return EngineInterp, nil
	case "jit":
		return EngineJIT, nil
	}
	return EngineDefault, fmt.Errorf("unknown engine %q (want interp or jit)", s)
}

// ErrNoJIT is returned when EngineJIT is asked for on a platform without a
// JIT backend.
var ErrNoJIT = errors.New("no JIT for this platform (" + runtime.GOOS + "/" + runtime.GOARCH + ")")

// JITAvailable reports whether xnic compiles programs to native code on this
// platform.
func JITAvailable() bool { return jitArch }

// Exit codes of native code (left in a scratch register, returned by the
// trampoline): the low 8 bits say why it returned, the rest is the
// instruction index.
const (
	jitExitDone = 1 // an exit instruction at pc: Go pops the frame or ends
	jitExitSlow = 2 // the interpreter's slow path runs the instruction at pc
	// jitExitCalled is never left by native code: Go ran the helper call at
	// pc of a burst's frame (burstCall) and reg[0] holds its result, but the
	// frame cannot go on in the burst loop; jitAfter goes on after the call.
	jitExitCalled = 3
)

// The hash scratch's slots past the key words (jitState.hs): an LRU
// eviction's (jit_amd64_hashevict.go).
const (
	hsEvict      = 7 + maps.NativeKeyMax/8 - 2
	hsEvictSlots = 4
)

// jitState is the part of the Runner that only native code uses (at
// offsets fixed when the code is generated). It holds no Go pointer.
type jitState struct {
	// spill is scratch for a register the code must free (amd64 division,
	// fetch atomics, the hash and LPM lookups, the spin and time helpers).
	spill uint64
	// frame and pkt are what native code reads of the frame (Runner.frame)
	// and of the packet region (regions[regionPacket]): the same, as plain
	// addresses and numbers, so that the burst loop (jitBurst) can point
	// them at each frame in turn without writing a Go pointer (native code
	// can give no write barrier). Go copies them in at every entry into
	// native code (jitRun, jitStart, jitStartFrame); the burst loop sets
	// them per frame and Go points its own at the frame it stopped at
	// (finishBurst). The address of a
	// frame's buffer stays valid while native code runs: the caller of
	// RunBurst holds the frames, the Runner the others.
	frame uintptr
	pkt   jitRegion
	// rds are the redirect records native bpf_redirect and
	// bpf_redirect_map write (jit_redirect.go), at the byte offset rdo
	// from rds[0]: rds[0] in a run entered from Go, which Go turns into
	// Runner.redirect whenever native code returns (takeRedirect);
	// rds[i+1] for frame i of a native burst, where the loop moves rdo
	// per frame and Go builds the Redirects afterwards (fillRedirects).
	rdo uint64
	rds [jitBurstMax + 1]jitRedirect
	// rdUsed is the last slot of rds a burst may have written since Go
	// last cleared them (jitBurst): the slots past it are clear.
	rdUsed uint64
	// rdStop is the slot of the last frame the last entry into the burst
	// loop ran (burstEnd): the one burstCall would go on with.
	rdStop uint64
	// rdn is the number of frames the last native burst stored an
	// XDP_REDIRECT verdict for (jitEnterBurst counts them): a burst with
	// none has no redirect to fill in (fillRedirects).
	rdn uint64
	// tail is the id of the program a native tail call went to (0: none
	// since native code was entered, which clears it): the program whose
	// instructions the exit code now counts (tailProg).
	tail uint64
	// hs is scratch of the native hash lookup (jitHash): the key's hash,
	// its first two words, the stripe's sequence and the stripe's address;
	// the map-in-map lookups' cache (hsDesc, hsMimID); the words past
	// the second of a longer key (hsWord); an LRU eviction's state
	// (hsEvict).
	hs [hsEvict + hsEvictSlots]uint64
	// depth is the number of native bpf-to-bpf calls in progress, calls
	// their frames (jit_amd64_calls.go): pushed and popped by native code
	// above Runner.depth's frames, turned into those by Go whenever the
	// code returns to it with any (adoptCalls), so Go never sees them.
	depth uint64
	calls [maxFrames]jitCall
	// spin is the lock a native bpf_spin_lock holds (jit_*_spin.go): the
	// lock word's address and the pointer r1 held; 0 when none. Go takes
	// it over whenever the code returns to it (adoptSpin).
	spin [2]uint64
	// resume, when not 0, is where the next jitEnterBurst goes on with its
	// first frame, a run Go stopped at a helper call and ran the helper of
	// (burstCall): with the registers in Runner.regs and the frame's state
	// as it left it, instead of starting that frame. The trampoline clears
	// it. resumes counts them, for tests.
	resume  uintptr
	resumes uint64
	// loops are the native bpf_loop calls in progress (jit_loop.go), by
	// the frame index of their callback's frame.
	loops [maxFrames]jitLoop
	// first vouches for the region table entry just past the fixed part
	// (jit_first.go): 0, or the tag of the value it describes.
	first uint64
	// pcpu is the address of Runner.cpu's slots in per-CPU array number k
	// of the bound collection, 0 for none (jit_first.go).
	pcpu [jitPCPUMaps]uint64
	// stackBase is the address of the Runner's stack minus
	// regionStack<<32 (NewRunner), so that [stackBase + r10 + off]
	// addresses the stack at r10+off (jit_amd64_stack.go).
	stackBase uint64
}

// jitCall is the frame of a native bpf-to-bpf call: callFrame without the
// program (native calls stay in one program's code), plus the native
// address to return to.
type jitCall struct {
	ret   uint64    // native address of the instruction after the call
	pc    uint64    // its index
	saved [4]uint64 // r6-r9
	fp    uint64    // r10
}

// adoptCalls turns the frames of native calls in progress into Go's
// (Runner.frames), as the interpreter's callLocal would have pushed them,
// so that the slow path, helpers and exits see the call stack they expect:
// p is the program the native code ran (tailProg).
func (r *Runner) adoptCalls(p *Program) {
	for i := range r.jit.depth {
		c := &r.jit.calls[i]
		f := &r.frames[r.depth] // the code checked the sum against maxFrames
		f.prog, f.ret, f.saved, f.fp = p, int(c.pc), c.saved, c.fp
		r.depth++
	}
	r.jit.depth = 0
}

// nativeCalls reports whether a backend compiles the local calls of plain
// natively: it has some, and no tail call, which would leave the code of
// the program whose frames native code holds.
func nativeCalls(plain []insn) bool {
	calls := false
	for _, in := range plain {
		switch in.op {
		case opTailCall:
			return false
		case opCallLocal:
			calls = true
		case opCall:
			calls = calls || int32(in.imm) == helperLoop // jit_loop.go
		}
	}
	return calls
}

// jitBurstMax is the most frames one native burst runs (the size of
// jitState.rds but one); a longer burst enters native code again.
const jitBurstMax = 64

// afterNative brings Go's view up to date when native code returns: the
// redirect it recorded, and the packet region of the frame, whose offsets
// a native adjust helper may have moved (the region's numbers follow the
// frame's, as setPacket sets them; the buffer does not change).
func (r *Runner) afterNative() {
	if r.jit.rds[0].kind != 0 {
		r.takeRedirect()
	}
	if r.frame != nil && len(r.regions) > regionPacket {
		rg := &r.regions[regionPacket]
		rg.lo = uint64(r.frame.DataMeta)
		rg.hi = uint64(r.frame.DataEnd)
		rg.whi = rg.hi
	}
}

// jitRegion is a region as native code reads it (jitState.pkt).
type jitRegion struct {
	buf         uintptr
	lo, hi, whi uint64
}

// jitProg is a program's native code: one executable mapping, with the entry
// offset of every instruction slot.
type jitProg struct {
	mu    sync.Mutex
	mem   []byte   // the mapping (read and execute once sealed)
	entry []uint32 // offset into mem of each instruction slot
	base  uintptr  // address of mem[0]: the prologue (jit_entry.go), then pc 0
	pc0   uintptr  // address of instruction 0's code, past the prologue
	freed bool
	// native counts the helper calls compiled to native code (array map
	// lookups), for tests.
	native int
	// proven counts the packet accesses compiled without their check
	// (provenIn): the code then needs a frame (see Runner.code).
	proven int
	// calls counts the bpf-to-bpf calls compiled natively, for tests.
	calls int
	// burst is the burst loop's per-frame work the code may need
	// (jit_burst_flags.go): 0 runs its bursts in the lean loop.
	burst uint8
}

// addr is the native address where instruction pc starts.
func (j *jitProg) addr(pc int) uintptr { return j.base + uintptr(j.entry[pc]) }

// release unmaps the code; the program runs in the interpreter afterwards.
func (j *jitProg) release() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.freed {
		return
	}
	j.freed = true
	_ = unmapCode(j.mem)
	j.mem = nil
}

// jitEnv is what a backend knows of the program beyond its instructions:
// the collection its map handles resolve in (nil for none) and its
// subprogram entries.
type jitEnv struct {
	coll  *Collection
	funcs []bool
	hints []accessHint // rangeIn: what the range analysis knows of each access
	// long: every branch in its long form (arm64: a first compile found a
	// short one out of reach, errFar).
	long bool
}

// errFar is a backend's finish finding a branch it emitted in a short
// form out of that form's reach: compileNative compiles again with
// jitEnv.long.
var errFar = errors.New("internal: a short branch out of reach")

// mapRef is map number k of env's collection, nil when there is none.
func (env jitEnv) mapRef(k uint32) *mapRef {
	if c := env.coll; c != nil && uint64(k) < uint64(len(c.mapRefs)) {
		return c.mapRefs[k]
	}
	return nil
}

// mapHandle is the value r1 holds for map number k (its region pointer):
// what a native call compares r1 with.
func mapHandle(k uint32) uint64 { return regionMap<<32 | uint64(k) }

// jitBackend is an architecture's code generator (jit_amd64.go,
// jit_arm64.go), as compileNative drives it.
type jitBackend interface {
	jitForms
	// size is the length of the code emitted so far.
	size() int
	// finish emits the out-of-line code and the slow-path exits, resolves
	// the branches (entry: the offset of each instruction's code) and
	// returns the code with its counts.
	finish(entry []uint32) ([]byte, jitCounts)
}

// compileNative compiles the plain instruction stream to native code in
// an executable mapping, with the backend of this platform.
func compileNative(plain []insn, env jitEnv) (*jitProg, error) {
	if !jitArch {
		return nil, ErrNoJIT
	}
	if len(plain) == 0 {
		return nil, errors.New("internal: no instructions")
	}
	proven, hints := rangeIn(plain, env) // jit_range.go, jit_range_guess.go
	env.hints = hints
	b := newBackend(plain, env, jumpTargets(plain, env.funcs), proven)
	zero := entryZero(plain) // jit_entry.go
	for i := range uint8(10) {
		if zero&(1<<i) != 0 {
			b.emitALU(insn{op: opMov64K, dst: i}, &opTable[opMov64K])
		}
	}
	entry := make([]uint32, len(plain))
	for pc, in := range plain {
		entry[pc] = uint32(b.size())
		compileInsn(b, pc, in)
	}
	code, n := b.finish(entry)
	if n.err == errFar && !env.long {
		env.long = true
		return compileNative(plain, env)
	}
	if n.err != nil {
		return nil, n.err
	}
	if len(code) >= jitMaxCode {
		return nil, fmt.Errorf("code too large (%d bytes)", len(code))
	}
	mem, base, err := mapCode(code)
	if err != nil {
		return nil, err
	}
	burst := burstAll
	if jitBurstLean {
		burst = burstWork(plain, n.regions)
	}
	return &jitProg{mem: mem, entry: entry, base: base, pc0: base + uintptr(entry[0]),
		native: n.native, proven: n.proven, calls: n.calls, burst: burst}, nil
}

// jitCounts are what a backend compiled natively, for tests and jitProg.
type jitCounts struct {
	native int // helper calls
	proven int // accesses without their check
	calls  int // bpf-to-bpf calls
	// regions counts the value-region appends (burstRegions), which a
	// backend with the lean burst loop (jitBurstLean) counts.
	regions int
	err     error // the backend broke a promise it relied on (jit_elide.go)
}

// jitForms is a backend's code for each operand form of opTable's rows:
// compileInsn dispatches an instruction on its row's form, and the
// backend reads the variant (width, signedness, the opcode's operation
// field) from the row.
type jitForms interface {
	emitALU(in insn, info *opInfo) // K and X forms, neg
	emitMovSX(in insn, info *opInfo)
	emitEndian(in insn, info *opInfo)
	emitDiv(in insn, info *opInfo)
	emitLddw(in insn)
	emitCtx(pc int, in insn)
	emitLoad(pc int, in insn, info *opInfo)
	emitStore(pc int, in insn, info *opInfo) // ST and STX
	emitAtomic(pc int, in insn)
	emitJA(pc int, in insn)
	emitJcc(pc int, in insn, info *opInfo)
	emitExit(pc int)
	emitCall(pc int, in insn) // natively where the backend can, else the slow path
	emitSlow(pc int)
}

// lddwValue is what the wide load in leaves in dst: a map's handle, a
// subprogram's address, or the immediate (a map value's pointer, decoded).
func lddwValue(in insn) uint64 {
	switch in.op {
	case opLdMap:
		return regionMap<<32 | uint64(uint32(in.imm))
	case opLdFunc:
		return regionFunc<<32 | uint64(uint32(in.imm))
	}
	return uint64(in.imm)
}

// compileInsn has b emit the instruction in at pc.
func compileInsn(b jitForms, pc int, in insn) {
	info := &opTable[in.op]
	switch info.form {
	case formALUK, formALUX, formNeg:
		b.emitALU(in, info)
	case formMovSX:
		b.emitMovSX(in, info)
	case formEnd:
		b.emitEndian(in, info)
	case formDivK, formDivX:
		b.emitDiv(in, info)
	case formLddw:
		b.emitLddw(in)
	case formCtx:
		b.emitCtx(pc, in)
	case formLdx:
		b.emitLoad(pc, in, info)
	case formSt, formStx:
		b.emitStore(pc, in, info)
	case formAtomic:
		b.emitAtomic(pc, in)
	case formJA:
		b.emitJA(pc, in)
	case formJmpK, formJmpX:
		b.emitJcc(pc, in, info)
	case formExit:
		b.emitExit(pc)
	case formCall:
		b.emitCall(pc, in)
	default:
		// Calls through a register: the slow path.
		b.emitSlow(pc)
	}
}

// compileFor compiles code (the plain, unfused instruction stream) for the
// engine asked for: nil, nil means the interpreter runs the program.
func compileFor(name string, plain []insn, e Engine, env jitEnv) (*jitProg, error) {
	switch e {
	case EngineInterp:
		return nil, nil
	case EngineJIT:
		if !jitArch {
			return nil, ErrNoJIT
		}
	case EngineDefault:
		switch envEngine() {
		case EngineInterp:
			return nil, nil
		case EngineJIT:
			return compileFor(name, plain, EngineJIT, env)
		}
		if !jitArch {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("program %s: unknown engine %d", name, e)
	}
	j, err := compileNative(plain, env)
	if err != nil {
		if e == EngineDefault {
			// The interpreter runs it: same results, only slower.
			return nil, nil
		}
		return nil, fmt.Errorf("program %s: jit: %w", name, err)
	}
	return j, nil
}

// envEngine is XNIC_ENGINE, read once (EngineDefault when unset or unknown).
var envEngine = sync.OnceValue(func() Engine {
	e, err := ParseEngine(os.Getenv("XNIC_ENGINE"))
	if err != nil {
		return EngineDefault
	}
	return e
})

// compile gives p native code for engine e (plain is its instruction stream
// before fusion, as decodeProgram left it in decodeEnv.plain).
func (p *Program) compile(plain []insn, e Engine) error {
	j, err := compileFor(p.name, plain, e, jitEnv{coll: p.coll, funcs: p.funcs})
	if err != nil {
		return err
	}
	p.setJIT(j)
	return nil
}

// setJIT attaches j to p and arranges for the code to be unmapped when p is
// no longer reachable (Collection.Close unmaps it explicitly before that).
func (p *Program) setJIT(j *jitProg) {
	if j == nil {
		return
	}
	p.jit.Store(j)
	runtime.AddCleanup(p, func(j *jitProg) { j.release() }, j)
}

// releaseJIT detaches and unmaps p's native code.
func (p *Program) releaseJIT() {
	if j := p.jit.Swap(nil); j != nil {
		j.release()
	}
}

// Engine reports which engine runs p: EngineJIT or EngineInterp.
func (p *Program) Engine() Engine {
	if p.jit.Load() != nil {
		return EngineJIT
	}
	return EngineInterp
}

// step runs from pc until an instruction needs the interpreter's slow path,
// in native code when p has it (fastJIT), else in the interpreter's fast
// loop; same contract as fast.
func (r *Runner) step(p *Program, pc, base int, reg *[256]uint64) (int, *Program, bool) {
	if j := r.code(p); j != nil {
		return r.fastJIT(j, p, pc, base, reg)
	}
	return r.fast(p, pc, base, reg)
}

// code is the native code to run p with, or nil for the interpreter: code
// with packet accesses proven in bounds (jitProg.proven) relies on the
// context loads reading a frame, so a bare run (RunRaw) interprets it.
func (r *Runner) code(p *Program) *jitProg {
	j := p.jit.Load()
	if j != nil && j.proven != 0 && r.frame == nil {
		return nil
	}
	return j
}

// runJIT is Run: for a program with native code, its first native round,
// where most runs end, runs without Run's recover, which costs a deferred
// call per run: the Go code on that path cannot panic (its one index, the
// packet region, is checked against the table's length first; every other
// case, and every program without native code, goes to runGuarded, which
// does the whole run under the recover), and no recover could catch a
// fault in native code anyway (a signal there is fatal). A round that
// comes back for the slow path (helpers, calls, faults) goes on under the
// recover (finishJIT); the state only the slow path reads (ring buffer
// records) is reset there, the call depth (which native bpf-to-bpf calls
// read too) before the first round.
func (r *Runner) runJIT(p *Program, f *Frame) Action {
	if p == nil {
		return r.runGuarded(p, f)
	}
	j := p.jit.Load()
	if j == nil {
		return r.runInterp(p, f) // interp.go
	}
	if f == nil || !jitBoundColl(r, p) || f.DataMeta < 0 || f.DataMeta > f.Data || f.Data > f.DataEnd ||
		f.DataEnd > len(f.Buf) || int64(len(f.Buf)) >= 1<<31 {
		return r.runGuarded(p, f) // interprets, binds the collection, or reports the frame
	}
	// bind, for the collection already bound: drop the last run's regions.
	regions := r.regions
	if n := uint(r.fixed); uint(len(regions)) > n {
		regions = regions[:n]
		r.regions = regions
	}
	if len(regions) <= regionPacket {
		return r.runGuarded(p, f) // a Runner not made by NewRunner
	}
	r.runs++
	r.faulted = false
	r.tails = 0 // native tail calls count from the first round
	// Native bpf-to-bpf calls count their depth from Runner.depth, which
	// a run that ended in Go inside a call (a fault, a panic) left above 0.
	r.depth = 0
	if r.redirect.Kind != RedirectNone {
		r.redirect = Redirect{}
	}
	rg := &regions[regionPacket] // as setPacket
	rg.buf = f.Buf
	rg.lo = uint64(f.DataMeta)
	rg.hi = uint64(f.DataEnd)
	rg.whi = uint64(f.DataEnd)
	r.budget = p.budget
	e, v := jitStartFrame(r, f, j.base)
	if e&0xff != jitExitDone {
		r.frame = f
		r.afterNative()
		return r.finishJIT(j, p, e)
	}
	// Done in one round: no helper ran in Go, so no fault and no ring
	// buffer record (endRun's cases) can be pending; a native helper may
	// have recorded a redirect.
	if r.jit.rds[0].kind != 0 {
		r.takeRedirect()
	}
	if Action(v) > ActionRedirect {
		return r.verdict(p, uint32(v), true) // the fault of an unknown action
	}
	return Action(uint32(v))
}

// burstReady reports whether RunBurst can run p's native code j in a
// native burst (jitBurst): the Runner is bound to p's collection and has
// its packet region (runJIT's conditions that hold for a whole burst).
func (r *Runner) burstReady(p *Program, j *jitProg) bool {
	return jitArch && jitBoundColl(r, p) && len(r.regions) > regionPacket && p.jit.Load() == j
}

// jitBoundColl reports whether r is bound to p's collection: the condition
// on which Go enters p's native code from the start of a run (runJIT, the
// burst; runFrame binds p's collection just before). It is checked there
// once, and never again in native code: a proven access to global data
// (access in jit_amd64.go and jit_arm64.go) compares no Runner.coll with
// the collection the code was compiled for (jitEnv.coll, Program.coll). It
// addresses that collection's buffer itself (staticBuf), which the proof
// made at load is about; the interpreter and the code's fallback read
// the buffer from the Runner's table entry regionStatic+i. Both are the
// same because native code compiled for a collection C runs only while
// Runner.coll is C:
//   - Runner.coll is written only by bind, in Go at the start of a run
//     (runFrame, RunRaw), never during one: no helper binds, and native
//     code writes no Go pointer. bind puts C's statics at those entries
//     whenever the collection changes, and nothing else writes entries
//     below Runner.fixed (lookups add theirs above).
//   - Go enters native code at the start of a run only for a program of the
//     bound collection (this check, or runFrame's bind), and a burst runs
//     one program's code for all its frames with no Go in between.
//   - Go re-enters native code after an exit to it (jitAfter: helpers, the
//     slow path, faults handled in Go; burstCall, which goes on with a
//     burst after a helper or load run in Go, through tailTarget as
//     jitAfter through tailProg) only for the program the run is in
//     now: the run's own program, the caller of a bpf-to-bpf call or of
//     a callback (the same program: subprograms and callbacks are part
//     of it), or the target of a tail call (tailProg, which looks the
//     target up among Runner.coll's programs).
//   - A tail call reaches only a program of the caller's collection. A
//     program array may hold a program of another collection
//     (maps.ProgArray.SetProg takes any program; the control plane can put
//     it there), and such a slot falls through as an empty one does: the
//     interpreter's Runner.tailCall compares Program.coll, and the native
//     tail call (tailCall, jit_amd64_helpers.go and jit_arm64_tail.go)
//     compares the target's Program.coll with the caller's collection
//     before jumping to it.
//
// TestJITGlobalsBoundColl covers each of these.
func jitBoundColl(r *Runner, p *Program) bool { return r.coll == p.coll }

// enterBurst runs frames[*next:] in one native burst (jitBurst) with the
// state a run starts from: no fault, no redirect, and the packet region of
// the table (which native code does not read, but its out-of-line check
// would) matching nothing until Go points it at a frame again. A frame that
// stops the burst at a call of a helper run in Go has its helper run here
// and the burst goes on with it (burstCall) when nothing the frame's end
// must look at is pending. It advances *next past the frames finished, so
// that an internal panic (burst's recover) names the frame it happened in,
// and returns, for the frame at *next when one is left, what jitBurst does
// or jitExitCalled (see finishBurst). The targets of the frames the loop
// finished with XDP_REDIRECT are stored in redirects (when long enough).
func (r *Runner) enterBurst(p *Program, j *jitProg, frames []Frame, verdicts []Action, redirects []Redirect, next *int) (exit uint32, r0 uint64) {
	start := *next
	frames, verdicts = frames[start:], verdicts[start:]
	if start < len(redirects) {
		redirects = redirects[start:]
	} else {
		redirects = nil
	}
	r.faulted = false
	if r.redirect.Kind != RedirectNone {
		r.redirect = Redirect{}
	}
	r.depth = 0 // as runJIT
	r.regions[regionPacket] = region{lo: 1}
	done, exit, r0 := jitBurst(r, j, frames, verdicts, p.budget)
	filled := 0
	for resumed := true; resumed && exit&0xff == jitExitSlow; {
		// What a panic in the helper leaves behind is the Go path's.
		if len(redirects) > filled {
			r.fillRedirects(verdicts[:done], redirects, filled) // jit_burst.go
		}
		filled, *next = done, start+done
		done, exit, r0, resumed = r.burstCall(p, j, frames, verdicts, done, exit, r0) // jit_resume.go
	}
	r.fillRedirects(verdicts[:done], redirects, filled)
	*next = start + done
	return exit, r0
}

// finishBurst finishes the run of f at which a native burst stopped with
// exit code e and r0 v (enterBurst), as runJIT would have: e 0 means f
// failed the frame check and did not run (run reports it); a run done in
// its first round left a verdict for verdict; any other exit goes on in Go
// from the slow path, with the frame and packet region set in Go as
// native code had them (jitExitCalled: after the helper call burstCall
// ran, whose records and faults stand). Called under burst's recover.
func (r *Runner) finishBurst(p *Program, j *jitProg, f *Frame, e uint32, v uint64) Action {
	switch {
	case e == 0:
		return r.run(p, f)
	case e&0xff == jitExitDone:
		return r.verdict(p, uint32(v), true)
	}
	r.frame = f
	r.setPacket(f)
	if e&0xff != jitExitCalled {
		r.depth = 0
		r.records = r.records[:0]
	}
	ret, ok := r.endRun(r.resumeJIT(j, p, e, &r.regs[0]))
	return r.verdict(p, ret, ok)
}

// finishJIT goes on with a run whose first native round (runJIT) returned
// exit code e, under the recover of runGuarded.
func (r *Runner) finishJIT(j *jitProg, p *Program, e uint32) (a Action) {
	defer func() {
		if e := recover(); e != nil {
			r.internalFault(p)
			a = ActionAborted
		}
	}()
	r.depth = 0
	r.records = r.records[:0]
	ret, ok := r.endRun(r.resumeJIT(j, p, e, &r.regs[0]))
	return r.verdict(p, ret, ok)
}

// fastJIT is fast for native code: it enters p's code at pc and goes on
// as jitAfter says.
func (r *Runner) fastJIT(j *jitProg, p *Program, pc, base int, reg *[256]uint64) (int, *Program, bool) {
	if uint(pc) >= uint(len(j.entry)) {
		return pc, p, false // slow reports it
	}
	return r.jitAfter(j, p, jitRun(r, reg, j.addr(pc)), base, reg)
}

// tailProg is the program native code ran last: p, or the one a native
// tail call went to (jitState.tail), with its code. It clears the tail
// call's id: the next exit codes are read against the program returned.
func (r *Runner) tailProg(p *Program, j *jitProg) (*Program, *jitProg) {
	q, qj := r.tailTarget(p, j)
	r.jit.tail = 0
	return q, qj
}

// tailTarget is tailProg without clearing jitState.tail, for a run that
// goes on in native code (burstCall).
func (r *Runner) tailTarget(p *Program, j *jitProg) (*Program, *jitProg) {
	id := r.jit.tail
	if id == 0 {
		return p, j
	}
	if r.coll != nil {
		for _, q := range r.coll.progs {
			if uint64(q.id) == id {
				if qj := q.jit.Load(); qj != nil {
					return q, qj
				}
			}
		}
	}
	panic("bpf: a native tail call went to a program of another collection") // unreachable: the code checks
}

// jitAfter handles the native code's exit e, then re-enters it, until the
// frame exec started in (base) exits or an instruction needs the slow path:
// an exit pops a subprogram's frame as fast does, a helper call runs the
// helper as the slow path would (reg[0] = its result) and goes on at the
// next instruction. A helper that faults ends the run: done, r0 = 0, and
// the callers see r.faulted.
func (r *Runner) jitAfter(j *jitProg, p *Program, e uint32, base int, reg *[256]uint64) (int, *Program, bool) {
	for {
		p, j = r.tailProg(p, j)
		if r.jit.depth != 0 {
			r.adoptCalls(p)
		}
		if r.jit.spin[0] != 0 {
			r.adoptSpin() // jit_spin.go
		}
		pc := int(e >> 8)
		if e&0xff != jitExitDone {
			if uint(pc) >= uint(len(p.code)) || p.code[pc].op != opCall {
				return pc, p, false
			}
			if e&0xff != jitExitCalled { // else burstCall ran it
				reg[0] = r.callHelper(p, pc, int32(p.code[pc].imm), (*[16]uint64)(reg[:16]))
			}
			if r.faulted {
				reg[0] = 0
				return pc, p, true
			}
			pc++
		} else {
			if r.depth == base {
				return pc, p, true
			}
			r.depth--
			f := &r.frames[r.depth]
			reg[6], reg[7], reg[8], reg[9] = f.saved[0], f.saved[1], f.saved[2], f.saved[3]
			reg[10] = f.fp
			p = f.prog
			pc = f.ret
			if pc < 0 { // a native bpf_loop's callback returned (jit_loop.go)
				e = jitRun(r, reg, uintptr(r.jit.loops[r.depth].resume))
				continue
			}
			if j = r.code(p); j == nil {
				return r.fast(p, pc, base, reg)
			}
		}
		if uint(pc) >= uint(len(j.entry)) {
			return pc, p, false
		}
		e = jitRun(r, reg, j.addr(pc))
	}
}

// resumeJIT goes on with a top-level run (base 0) whose first native round
// returned exit code e (see runFrame).
func (r *Runner) resumeJIT(j *jitProg, p *Program, e uint32, reg *[256]uint64) uint64 {
	pc, q, done := r.jitAfter(j, p, e, 0, reg)
	if done {
		return reg[0]
	}
	return r.slow(q, pc, 0, reg)
}

// backJump is what a backward jump at pc to target charges to the budget
// and the slot a budget fault names: the interpreter's amounts.
func backJump(pc, target int) (at int, charge int64) {
	return pc, int64(pc-target) + 1
}

// guessRegion is the region a load or store through BPF register base is
// checked against inline (others are checked out of line): the stack for
// r10, else the packet. Both exist in every Runner's table, which never has
// fewer than regionStatic entries.
func guessRegion(base uint8) int32 {
	if base == 10 {
		return regionStack
	}
	return regionPacket
}

// releaseJIT unmaps the native code of every program of c.
func (c *Collection) releaseJIT() {
	for _, p := range c.progs {
		p.releaseJIT()
	}
}

// jumpTargets marks the instructions of plain that control reaches other
// than from the one before: jump targets, subprogram entries (funcs, and
// the targets of local calls and function pointers).
func jumpTargets(plain []insn, funcs []bool) []bool {
	t := make([]bool, len(plain)+1)
	mark := func(i int64) {
		if i >= 0 && i < int64(len(t)) {
			t[i] = true
		}
	}
	for pc, in := range plain {
		switch {
		case in.op == opJA || in.op >= opJEQ64K && in.op <= opJSLE32X:
			mark(int64(in.off))
		case in.op == opCallLocal || in.op == opLdFunc:
			mark(in.imm)
		}
		if pc < len(funcs) && funcs[pc] {
			t[pc] = true
		}
	}
	return t
}

// straightLine reports whether op neither leaves the straight line (jumps,
// calls, exits) nor writes a register other than its dst (atomics may write
// src or r0).
func straightLine(o op) bool {
	switch {
	case o == opJA || o == opExit || o == opCall || o == opCallLocal || o == opCallX || o == opTailCall:
		return false
	case o >= opJEQ64K && o <= opJSLE32X:
		return false
	case o == opAtomic32 || o == opAtomic64:
		return false
	}
	return true
}

// mapAt returns the map number r1 holds at the call at pc when a lddw of a
// map into r1 reaches the call in a straight line (no jump target, control
// flow or other write of r1 in between). r1 then holds that handle at the
// call on every path, so native code does not check it (mapChecksProof in
// jit_first.go).
func mapAt(plain []insn, targets []bool, pc int) (uint32, bool) {
	return mapIn(plain, targets, pc, 1)
}

// mapIn is mapAt for register reg (r2 for a tail call's program array).
func mapIn(plain []insn, targets []bool, pc int, reg uint8) (uint32, bool) {
	k, ok := loadedIn(plain, targets, pc, reg, opLdMap)
	return uint32(k), ok && k >= 0 && k <= math.MaxUint32
}

// loadedIn returns the immediate of the lddw of that kind (opLdMap, a
// map; opLdFunc, a function) that loads register reg and reaches pc in a
// straight line: no jump target, control flow or other write of reg in
// between.
func loadedIn(plain []insn, targets []bool, pc int, reg uint8, kind op) (int64, bool) {
	for q := pc - 1; q >= 0 && !targets[q+1]; q-- {
		in := plain[q]
		switch {
		case in.op == kind && in.dst == reg:
			return in.imm, true
		case in.dst == reg || !straightLine(in.op):
			return 0, false
		}
	}
	return 0, false
}
