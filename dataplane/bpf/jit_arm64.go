//go:build linux && arm64

package bpf

import (
	"encoding/binary"
	"math"
)

// The arm64 backend (A64 encodings from the Arm Architecture Reference
// Manual, section C6). BPF r0-r5 live in X0-X5, r6-r10 in X19-X23; X24
// holds the Runner, X25 the packet's buffer minus regionPacket<<32
// (jit_arm64_pktbase.go), X9-X13 are scratch. X18 (platform register),
// X28 (g), X29 (frame pointer), X30 (link register, set by jitEnter's BL)
// and SP are never written. The code uses no stack and returns to
// jitEnter with RET after leaving the exit code in X9 (see jitExitDone).

const (
	jitArch  = true
	trapByte = 0x00 // 0x00000000 is UDF #0
)

// flushCode makes the instruction stream see the bytes written into mem:
// arm64 instruction caches are not coherent with data writes (DC CVAU, IC
// IVAU, DSB, ISB over the range; Linux lets EL0 run them, SCTLR_EL1.UCI).
func flushCode(mem []byte) {
	if len(mem) > 0 {
		jitFlush(&mem[0], uintptr(len(mem)))
	}
}

// jitFlush is in jit_arm64.s.
//
//go:noescape
func jitFlush(p *byte, n uintptr)

const (
	aS1  = 9  // address, then offset
	aS2  = 10 // region, then buffer
	aS3  = 11 // loaded bounds, immediates
	aS4  = 12 // offset + size
	aS5  = 13 // large field offsets, store immediates
	aS6  = 14 // store-exclusive status
	aCtx = 24 // the Runner
)

var arm64Regs = [11]uint32{0, 1, 2, 3, 4, 5, 19, 20, 21, 22, 23}

// arm64JumpCC is the condition (Arm ARM C1.2.4, "Condition code") each BPF
// jump operation branches on: unsigned compares HI/HS/LO/LS, signed ones
// GT/GE/LT/LE; JSET on a non-zero TST.
var arm64JumpCC = map[opcode]uint32{
	jmpJEQ: aEQ, jmpJNE: aNE, jmpJSET: aNE,
	jmpJGT: aHI, jmpJGE: aHS, jmpJLT: aLO, jmpJLE: aLS,
	jmpJSGT: aGT, jmpJSGE: aGE, jmpJSLT: aLT, jmpJSLE: aLE,
}

type a64Fixup struct {
	pos    int
	target int // instruction index, or stub position
	cond   bool
}

type a64Generic struct {
	from, resume, pc int
	n                int32
	hi               int32
	pkt              bool // guessed on the packet: the access is [aPkt, S1] (pktCheck)
}

type arm64Compiler struct {
	b       []byte
	plain   []insn
	long    bool // branches may be out of B.cond's 1 MB range
	far     bool // a B.cond, CBZ or ADR patched past its 1 MiB reach (errFar)
	jumps   []a64Fixup
	slows   []a64Fixup // target: pc of the slow exit
	generic []a64Generic
	env     jitEnv
	targets []bool  // jumpTargets
	proven  []int32 // provenIn
	valued  []bool  // the accesses valueAccess compiled (valueReuse)
	// unchk: jit_value.go, jit_arm64_value.go
	unchk  jitUnchecked
	elided map[int][]int // elided lookups' value accesses (jit_arm64_elide.go)
	// disp: the offset the next load or store adds to its buffer
	// register, when hasDisp (dispNext, jit_arm64_value.go).
	disp    int32
	hasDisp bool
	// ctxResumes: the context loads that use the frame the one before
	// left in S1 (ctxAfterCtx), re-entered through ctxStubs; stackLeft:
	// the stack accesses that left stackBase in S2 (stackHeld).
	ctxResumes []a64Resume
	stackLeft  []bool
	nproven    int
	exact      exactLeft // the last exact staticAccess (jit_arm64_guess.go)
	native     int       // helper calls compiled natively
	nregions   int       // value-region appends emitted (valueRegion: burstRegions)
	// calls: local calls are compiled natively (nativeCalls, and
	// every return address within ADR's 1 MiB); ncalls counts them; adrs
	// are the ADRs to resolve to instruction starts.
	calls  bool
	ncalls int
	adrs   []a64Fixup
	// frameSure: the code runs only with a frame (frameSure); ctxFields:
	// the context's scalar loads (ctxScalarLoads). jit_frame.go.
	frameSure bool
	ctxR1     []bool // r1 holds the context (ctxArgs): tail calls read it
	ctxFields []int32
}

func (c *arm64Compiler) w(i uint32) { c.b = binary.LittleEndian.AppendUint32(c.b, i) }

// jitMaxCode bounds the code: B reaches 128 MiB.
const jitMaxCode = 1 << 27

func newBackend(plain []insn, env jitEnv, targets []bool, proven []int32) jitBackend {
	c := &arm64Compiler{plain: plain, env: env, targets: targets, proven: proven, stackLeft: make([]bool, len(plain))}
	c.frameSure, c.ctxFields = frameSure(plain, proven), ctxScalarLoads(plain, env.funcs)
	c.ctxR1 = ctxArgs(plain, env.funcs)
	// At most about 30 instructions a slot plus the out-of-line code: past
	// 4000 slots, branches take the long form; so do those of code that
	// came out larger than that (env.long: native helpers, such as a
	// bpf_fib_lookup's hundreds of instructions, can pass 1 MiB in fewer
	// slots).
	c.long = len(plain) > 4000 || env.long
	c.calls = nativeCalls(plain) && !c.long
	c.b = make([]byte, 0, 64*len(plain)+64)
	return c
}

func (c *arm64Compiler) size() int { return len(c.b) }

// finish places the out-of-line region checks, resolves the jumps and
// emits one slow-path exit stub per instruction that may need one.
func (c *arm64Compiler) finish(entry []uint32) ([]byte, jitCounts) {
	for _, g := range c.generic {
		c.emitGeneric(g)
	}
	for _, f := range c.jumps {
		c.patch(f, int(entry[f.target]))
	}
	for _, f := range c.adrs {
		bytes := int(entry[f.target]) - f.pos
		c.far = c.far || bytes < -1<<20 || bytes >= 1<<20
		binary.LittleEndian.PutUint32(c.b[f.pos:], a64ADR(binary.LittleEndian.Uint32(c.b[f.pos:])&31, int32(bytes)))
	}
	c.leaveStubs(entry) // jit_arm64_value.go
	c.ctxStubs(entry)   // jit_arm64_stack.go
	stubs := map[int]int{}
	for _, f := range c.slows {
		at, ok := stubs[f.target]
		if !ok {
			at = len(c.b)
			stubs[f.target] = at
			c.exit(f.target, jitExitSlow)
		}
		c.patch(f, at)
	}
	err := c.elideErr()
	if err == nil && c.far {
		err = errFar
	}
	return c.b, jitCounts{native: c.native, proven: c.nproven, calls: c.ncalls, regions: c.nregions, err: err}
}

// patch resolves a branch at f.pos to byte offset to; a B.cond or CBZ
// (imm19) out of reach sets c.far.
func (c *arm64Compiler) patch(f a64Fixup, to int) {
	d := int32(to-f.pos) / 4
	if f.cond && (d < -1<<18 || d >= 1<<18) {
		c.far = true
	}
	i := binary.LittleEndian.Uint32(c.b[f.pos:])
	if f.cond {
		i |= (uint32(d) & 0x7ffff) << 5
	} else {
		i |= uint32(d) & 0x3ffffff
	}
	binary.LittleEndian.PutUint32(c.b[f.pos:], i)
}

// branch emits a branch on cond (aAL: always) to be patched; it returns the
// fixup.
func (c *arm64Compiler) branch(cond uint32) a64Fixup {
	if cond == aAL {
		c.w(a64B)
		return a64Fixup{pos: len(c.b) - 4}
	}
	if c.long {
		c.w(a64Branch(a64Bcond, 2, cond^1)) // b.!cond +8
		c.w(a64B)
		return a64Fixup{pos: len(c.b) - 4}
	}
	c.w(a64Branch(a64Bcond, 0, cond))
	return a64Fixup{pos: len(c.b) - 4, cond: true}
}

func (c *arm64Compiler) jumpTo(cond uint32, pc int) {
	f := c.branch(cond)
	f.target = pc
	c.jumps = append(c.jumps, f)
}

func (c *arm64Compiler) slowIf(cond uint32, pc int) {
	f := c.branch(cond)
	f.target = pc
	c.slows = append(c.slows, f)
}

// movImm sets X d to v.
func (c *arm64Compiler) movImm(d uint32, v uint64) {
	var ch [4]uint32
	zeros, ones := 0, 0
	for i := range ch {
		ch[i] = uint32(v>>(16*i)) & 0xffff
		if ch[i] == 0 {
			zeros++
		}
		if ch[i] == 0xffff {
			ones++
		}
	}
	first := true
	if ones > zeros {
		for i := range ch {
			if ch[i] == 0xffff {
				continue
			}
			if first {
				c.w(a64MovWide(a64Movn, d, uint32(i), ^ch[i]))
				first = false
			} else {
				c.w(a64MovWide(a64Movk, d, uint32(i), ch[i]))
			}
		}
		if first {
			c.w(a64MovWide(a64Movn, d, 0, 0)) // all ones
		}
		return
	}
	for i := range ch {
		if ch[i] == 0 {
			continue
		}
		if first {
			c.w(a64MovWide(a64Movz, d, uint32(i), ch[i]))
			first = false
		} else {
			c.w(a64MovWide(a64Movk, d, uint32(i), ch[i]))
		}
	}
	if first {
		c.w(a64MovWide(a64Movz, d, 0, 0))
	}
}

// ldr and str: 64-bit load and store of [n + off].
func (c *arm64Compiler) ldr(t, n uint32, off int32) {
	if off >= 0 && off%8 == 0 && off/8 < 4096 {
		c.w(a64Imm12(a64LdrXImm, t, n, uint32(off/8)))
		return
	}
	c.movImm(aS5, uint64(int64(off)))
	c.w(a64RRR(a64LdrX, t, n, aS5))
}

func (c *arm64Compiler) str(t, n uint32, off int32) {
	if off >= 0 && off%8 == 0 && off/8 < 4096 {
		c.w(a64Imm12(a64StrXImm, t, n, uint32(off/8)))
		return
	}
	c.movImm(aS5, uint64(int64(off)))
	c.w(a64RRR(a64StrX, t, n, aS5))
}

// exit leaves the exit code for pc in X9 (S1) and returns to the
// trampoline, which hands it to Go.
func (c *arm64Compiler) exit(pc int, kind uint32) {
	c.movImm(aS1, uint64(uint32(pc)<<8|kind))
	c.w(a64Ret)
}

// rrr emits a three-register data-processing instruction d = n op m.
func (c *arm64Compiler) rrr(op, d, n, m uint32) { c.w(a64RRR(op, d, n, m)) }

// bfm emits UBFM/SBFM d, n, immr, imms.
func (c *arm64Compiler) bfm(op, d, n, immr, imms uint32) { c.w(a64BFM(op, d, n, immr, imms)) }

func (c *arm64Compiler) alu(op uint32, is64 bool, d, m uint32) {
	if !is64 {
		op &^= a64W
	}
	c.rrr(op, d, d, m)
}

// aluK emits d = d op imm for the BPF operation opn, in one instruction
// when the constant fits the operation's immediate form (aluImm), else
// through S3.
func (c *arm64Compiler) aluK(opn opcode, is64 bool, d uint32, imm int64) {
	v := uint64(imm)
	if !is64 {
		v = uint64(uint32(imm))
	}
	if c.aluImm(opn, is64, d, v) {
		return
	}
	c.movImm(aS3, v)
	c.alu(a64Arith[opn], is64, d, aS3)
}

// aluImm emits d = d op v (v already truncated to the width) as one
// immediate instruction and reports whether it could: ADD or SUB of a
// 12-bit immediate, or of the negated one (the same sum modulo 2^64, or
// 2^32 in the W form, which zeroes the high half as the interpreter's
// 32-bit ALU does), AND, ORR or EOR of a bitmask immediate
// (a64LogicalImm). d is never register 31, which these forms read as SP.
func (c *arm64Compiler) aluImm(opn opcode, is64 bool, d uint32, v uint64) bool {
	w := boolW(!is64)
	neg := -v
	if !is64 {
		neg = uint64(uint32(neg))
	}
	var add, sub uint32 = a64AddImm, a64SubImm
	switch opn {
	case aluSub:
		add, sub = sub, add
		fallthrough
	case aluAdd:
		switch {
		case v < 4096:
			c.w(a64Imm12(add&^w, d, d, uint32(v)))
		case neg < 4096:
			c.w(a64Imm12(sub&^w, d, d, uint32(neg)))
		default:
			return false
		}
		return true
	}
	op, ok := a64LogicOps[opn]
	if !ok {
		return false
	}
	n, immr, imms, ok := a64LogicalImm(v, is64)
	if !ok {
		return false
	}
	c.w(a64BFM((op|n)&^w, d, d, immr, imms))
	return true
}

// a64LogicOps are the logical (immediate) instructions of the BPF
// operations that have one.
var a64LogicOps = map[opcode]uint32{aluAnd: a64AndImm, aluOr: a64OrrImm, aluXor: a64EorImm}

// shiftK emits a shift by a constant as its bitfield-move alias (LSL,
// LSR, ASR (immediate)).
func (c *arm64Compiler) shiftK(opn opcode, is64 bool, d uint32, s uint32) {
	ubfm, sbfm, top := uint32(a64UbfmW), uint32(a64SbfmW), uint32(31)
	if is64 {
		ubfm, sbfm, top = a64Ubfm, a64Sbfm, 63
	}
	switch opn {
	case aluLsh:
		c.bfm(ubfm, d, d, (top+1-s)&top, top-s)
	case aluRsh:
		c.bfm(ubfm, d, d, s, top)
	default:
		c.bfm(sbfm, d, d, s, top)
	}
}

// a64Regs are the A64 registers of in's dst and src.
func a64Regs(in insn) (d, s uint32) { return arm64Regs[in.dst&15%11], arm64Regs[in.src&15%11] }

// emitJA emits ja.
func (c *arm64Compiler) emitJA(pc int, in insn) { c.jump(pc, in, aAL) }

// emitExit emits exit: the return from a native call in progress, else
// the end of the run or of a frame Go pushed.
func (c *arm64Compiler) emitExit(pc int) {
	if c.calls {
		c.callReturn()
	}
	c.exit(pc, jitExitDone)
}

// emitCall emits a local call, a tail call and the helpers of the table's
// native column natively where it can, and any other call as an exit to
// the slow path.
func (c *arm64Compiler) emitCall(pc int, in insn) {
	switch {
	case in.op == opTailCall && emitTail(c, c.env, c.plain, c.targets, tailFacts{c.ctxR1, c.frameSure}, pc): // jit_tail_targets.go
		c.native++
		return
	case in.op == opCallLocal && c.calls:
		c.localCall(pc, in)
		c.ncalls++
		return
	case in.op == opCall && callInfo(in.imm).nativeAny(): // helpers_table.go, kfunc.go
		if c.nativeHelper(pc) { // jit_arm64_hash.go
			c.native++
			return
		}
	}
	c.exit(pc, jitExitSlow)
}

// emitSlow sends the instruction at pc to the interpreter's slow path.
func (c *arm64Compiler) emitSlow(pc int) { c.exit(pc, jitExitSlow) }

// a64Arith is the A64 instruction (64-bit form) of each BPF ALU operation
// with a register form.
var a64Arith = map[opcode]uint32{
	aluAdd: a64Add, aluSub: a64Sub, aluOr: a64Orr, aluAnd: a64And, aluXor: a64Eor,
	aluMul: a64Mul, aluLsh: a64Lslv, aluRsh: a64Lsrv, aluArsh: a64Asrv,
}

// emitALU emits the ALU operations with K and X forms (and neg); 32-bit
// forms use W registers, which zero the high half.
func (c *arm64Compiler) emitALU(in insn, info *opInfo) {
	d, s := a64Regs(in)
	is64, x := info.width == 64, info.form == formALUX
	switch opn := info.code.operation(); {
	case opn == aluMov && is64:
		c.movImm(d, uint64(in.imm))
	case opn == aluMov:
		c.movImm(d, uint64(uint32(in.imm)))
	case opn == aluNeg:
		c.rrr(a64Sub&^boolW(!is64), d, aZR, d)
	case x:
		c.alu(a64Arith[opn], is64, d, s)
	case opn == aluLsh || opn == aluRsh || opn == aluArsh:
		c.shiftK(opn, is64, d, uint32(in.imm)&uint32(info.width-1))
	default:
		c.aluK(opn, is64, d, in.imm)
	}
}

// emitMovSX emits the sign-extending moves (SBFM) and, for the rows with no
// extension (mov64 X and mov32 X, key 0), a plain move (ORR from XZR).
func (c *arm64Compiler) emitMovSX(in insn, info *opInfo) {
	d, s := a64Regs(in)
	is64 := info.width == 64
	if info.key == 0 {
		c.rrr(a64Orr&^boolW(!is64), d, aZR, s)
		return
	}
	op := uint32(a64SbfmW)
	if is64 {
		op = a64Sbfm
	}
	c.bfm(op, d, s, 0, uint32(info.key)-1)
}

// emitEndian emits le (a truncation: the host is little-endian) and be/bswap
// (REV16, REV).
func (c *arm64Compiler) emitEndian(in insn, info *opInfo) {
	d, _ := a64Regs(in)
	le := info.code.source() == srcK
	switch {
	case le && info.width == 16:
		c.bfm(a64UbfmW, d, d, 0, 15) // uxth
	case le && info.width == 32:
		c.rrr(a64Orr&^a64W, d, aZR, d) // mov w, w
	case le:
	case info.width == 16:
		c.w(a64RR(a64Rev16W, d, d))
		c.bfm(a64UbfmW, d, d, 0, 15)
	case info.width == 32:
		c.w(a64RR(a64RevW, d, d))
	default:
		c.w(a64RR(a64RevX, d, d))
	}
}

// emitLddw sets d to the wide load's value, a map handle or a subprogram.
func (c *arm64Compiler) emitLddw(in insn) {
	d, _ := a64Regs(in)
	c.movImm(d, lddwValue(in))
}

// emitCtx emits a specialised context load: the frame's pointer, tagged
// with the packet region.
func (c *arm64Compiler) emitCtx(pc int, in insn) {
	d, _ := a64Regs(in)
	off := ctxFieldOff(in.op)
	reuse := ctxAfterCtx(c.plain, c.targets, pc) // jit_cost.go
	if !reuse {
		c.frame(pc)
	}
	c.ldr(d, aS1, off)
	c.tagPacket(d)
	if reuse {
		c.ctxResumes = append(c.ctxResumes, a64Resume{pc: pc, after: len(c.b)})
	}
}

// tagPacket sets d's tag to the packet region's: ORR of the bitmask
// immediate regionPacket<<32 when it is one (a run of ones), else through
// S2.
func (c *arm64Compiler) tagPacket(d uint32) {
	if n, immr, imms, ok := a64LogicalImm(regionPacket<<32, true); ok {
		c.w(a64BFM(a64OrrImm|n, d, d, immr, imms))
		return
	}
	c.movImm(aS2, regionPacket<<32)
	c.rrr(a64Orr, d, d, aS2)
}

// frame loads the frame's address into S1; for code that may run
// without one (frameSure), a bare run goes to the slow path, which loads
// as the interpreter does.
func (c *arm64Compiler) frame(pc int) {
	c.ldr(aS1, aCtx, offJFrame)
	if !c.frameSure {
		c.w(a64Imm12(a64SubsImm, aZR, aS1, 0)) // cmp x9, #0
		c.slowIf(aEQ, pc)
	}
}

// a64Loads and a64Stores are the register-offset loads and stores of each
// access size; sign-extending loads index a64Loads at size+8.
var (
	a64Loads  = map[uint8]uint32{1: a64Ldrb, 2: a64Ldrh, 4: a64LdrW, 8: a64LdrX, 9: a64Ldrsb, 10: a64Ldrsh, 12: a64Ldrsw}
	a64Stores = map[uint8]uint32{1: a64Strb, 2: a64Strh, 4: a64StrW, 8: a64StrX}
)

// emitLoad emits a load of the row's size, zero- or sign-extended.
func (c *arm64Compiler) emitLoad(pc int, in insn, info *opInfo) {
	d, _ := a64Regs(in)
	if f := ctxScalarAt(c.ctxFields, pc); f != 0 { // jit_frame.go
		reuse := ctxAfterCtx(c.plain, c.targets, pc)
		if !reuse {
			c.frame(pc)
		}
		c.ldrWOff(d, aS1, frameFieldOff(f)) // zero-extended
		if reuse {
			c.ctxResumes = append(c.ctxResumes, a64Resume{pc: pc, after: len(c.b)})
		}
		return
	}
	b := c.access(pc, in.src, in.off, int32(info.width), false)
	k := info.width
	if info.signed {
		k += 8
	}
	c.memOp(false, k, int32(info.width), d, b)
}

// emitStore emits a store of the row's size, of the immediate (ST, through S5)
// or of s (STX).
func (c *arm64Compiler) emitStore(pc int, in insn, info *opInfo) {
	_, s := a64Regs(in)
	b := c.access(pc, in.dst, in.off, int32(info.width), true)
	v := s
	if info.form == formSt {
		c.movImm(aS5, uint64(in.imm))
		v = aS5
	}
	c.memOp(true, info.width, int32(info.width), v, b)
}

// emitDiv emits the division or modulo in: UDIV and SDIV give the
// interpreter's results for every divisor (0 for a zero divisor, INT_MIN
// for INT_MIN / -1) and do not trap; the modulo is dst - q*divisor (MSUB),
// which leaves dst for a zero divisor and gives 0 for -1, as udiv64 ...
// smod32 do. 32-bit forms work on W registers (zero-extended results).
func (c *arm64Compiler) emitDiv(in insn, info *opInfo) {
	d, s := a64Regs(in)
	is64, isX := info.width == 64, info.form == formDivX
	signed, mod := info.signed, info.code.operation() == aluMod
	m := s
	if !isX {
		v := uint64(in.imm)
		if !is64 {
			v = uint64(uint32(in.imm))
		}
		c.movImm(aS3, v)
		m = aS3
	}
	op := uint32(a64Udiv)
	if signed {
		op = a64Sdiv
	}
	msub := uint32(a64Msub)
	if !is64 {
		op &^= a64W
		msub &^= a64W
	}
	if !mod {
		c.rrr(op, d, d, m)
		return
	}
	c.rrr(op, aS4, d, m)
	c.w(a64Msub3(msub, d, aS4, m, d)) // d = d - q*m
}

// emitAtomic emits an atomic operation as a load-acquire/store-release
// exclusive loop (LDAXR/STLXR, what sync/atomic uses on cores without LSE,
// such as the i.MX8's Cortex-A53), after the store check of the region and
// the natural-alignment check the interpreter requires; a failed check goes
// to the slow path, which reports the same fault.
func (c *arm64Compiler) emitAtomic(pc int, in insn) {
	_, s := a64Regs(in)
	is64 := in.op == opAtomic64
	n := int32(4)
	ldaxr, stlxr := uint32(a64LdaxrW), uint32(a64StlxrW)
	if is64 {
		n = 8
		ldaxr, stlxr = a64LdaxrX, a64StlxrX
	}
	var op uint32
	switch in.imm &^ atomicFetch {
	case atomicAdd:
		op = a64Add
	case atomicOr:
		op = a64Orr
	case atomicAnd:
		op = a64And
	case atomicXor:
		op = a64Eor
	case atomicXchg &^ atomicFetch, atomicCmpXchg &^ atomicFetch:
	default:
		c.exit(pc, jitExitSlow)
		return
	}
	if !is64 {
		op &^= a64W
	}
	b := c.check(pc, in.dst, in.off, n, true)
	c.rrr(a64Add, aS2, b, aS1) // the address
	c.movImm(aS3, uint64(n-1))
	c.rrr(a64Ands, aZR, aS2, aS3) // tst
	c.slowIf(aNE, pc)
	loop := len(c.b)
	c.w(a64Excl(ldaxr, 0, aS4, aS2))
	switch in.imm {
	case atomicCmpXchg:
		c.rrr(a64Subs&^boolW(!is64), aZR, aS4, 0) // cmp old, r0
		ne := c.branchShort(aNE)
		c.w(a64Excl(stlxr, aS6, s, aS2))
		c.cbnzLoop(loop)
		c.patch(ne, len(c.b))
		c.rrr(a64Orr&^a64W|boolW(is64), 0, aZR, aS4) // r0 = old
		return
	case atomicXchg:
		c.w(a64Excl(stlxr, aS6, s, aS2))
	default:
		c.rrr(op, aS5, aS4, s)
		c.w(a64Excl(stlxr, aS6, aS5, aS2))
	}
	c.cbnzLoop(loop)
	if in.imm&atomicFetch != 0 {
		c.rrr(a64Orr&^a64W|boolW(is64), s, aZR, aS4) // src = old
	}
}

// boolW is the sf bit when is64.
func boolW(is64 bool) uint32 {
	if is64 {
		return a64W
	}
	return 0
}

// branchShort is a B.cond (imm19) to be patched, whatever c.long says: for
// targets a few instructions away.
func (c *arm64Compiler) branchShort(cond uint32) a64Fixup {
	c.w(a64Branch(a64Bcond, 0, cond))
	return a64Fixup{pos: len(c.b) - 4, cond: true}
}

// cbnzLoop branches back to loop while the store-exclusive status is not 0.
func (c *arm64Compiler) cbnzLoop(loop int) {
	d := int32(loop-len(c.b)) / 4
	c.w(a64Branch(a64CbnzW, d, aS6))
}

// access leaves in S2 the buffer and in S1 the offset of the load or store
// at pc, and returns S2 (the register that holds the buffer): without a
// check when provenIn proved it inside a region (the region's buffer at the
// pointer's low 32 bits plus off; for global data the collection's own
// buffer as an immediate, with no check of the Runner's collection, as on
// amd64: jitBoundColl; for the packet S1 is the pointer plus off, and the
// buffer register returned is aPkt: jit_arm64_pktbase.go), else through
// check.
func (c *arm64Compiler) access(pc int, bpfBase uint8, off, n int32, write bool) uint32 {
	rg := c.proven[pc]
	if rg == 0 && c.stackAccessAt(pc, bpfBase, off, n) { // jit_arm64_stack.go
		return aS2
	}
	if rg == 0 {
		if !c.valueAccess(pc, bpfBase, off, n, write) { // jit_arm64_value.go
			return c.check(pc, bpfBase, off, n, write)
		}
		return aS2
	}
	c.nproven++
	if c.staticAccess(pc, bpfBase, rg, off) { // jit_arm64_guess.go
		return aS2
	}
	base := arm64Regs[bpfBase&15%11]
	if rg == regionPacket {
		c.addOff(aS1, base, off, 0)
		return aPkt
	}
	// No compare of Runner.coll with c.env.coll here: see jitBoundColl.
	switch {
	case staticBuf(c.env.coll, rg) != 0: // jit_globals_unsafe.go
		c.movImm(aS2, uint64(staticBuf(c.env.coll, rg))) // the collection's own buffer
	default:
		c.ldr(aS2, aCtx, offRegions)
		c.ldr(aS2, aS2, rg*regionSize+offRegionBuf)
	}
	c.rrr(a64Orr&^a64W, aS1, aZR, base) // the offset: low 32 bits
	switch {
	case off >= 0 && off < 4096:
		c.w(a64Imm12(a64AddImm, aS1, aS1, uint32(off)))
	case off < 0 && off > -4096:
		c.w(a64Imm12(a64SubImm, aS1, aS1, uint32(-off)))
	default:
		c.movImm(aS3, uint64(int64(off)))
		c.rrr(a64Add, aS1, aS1, aS3)
	}
	return aS2
}

// check emits the region check of an n-byte access at reg(base)+off, as the
// amd64 backend's (the same rules), and leaves the buffer in S2 and the
// offset in S1; it returns the register that holds the buffer (S2, or aPkt
// for a guess on the packet, when S1 is the address: pktCheck).
func (c *arm64Compiler) check(pc int, bpfBase uint8, off, n int32, write bool) uint32 {
	if c.guessedCheck(pc, bpfBase, off, n, write) { // jit_arm64_guess.go: S2
		return aS2
	}
	return c.checkIn(pc, bpfBase, off, n, write, guessRegion(bpfBase))
}

// checkIn is check with the region guessed given.
func (c *arm64Compiler) checkIn(pc int, bpfBase uint8, off, n int32, write bool, guess int32) uint32 {
	base := arm64Regs[bpfBase&15%11]
	hi := limitField(write)
	if guess == regionStack && n > 0 {
		if !c.stackKeyAccess(pc, bpfBase, off, n) { // jit_arm64_stack.go
			c.stackCheck(pc, bpfBase, off, n, hi)
		}
		return aS2
	}
	c.addOff(aS1, base, off, 0)                        // jit_arm64_stack.go
	c.bfm(a64Ubfm, aS2, aS1, 32, 63)                   // lsr x10, x9, #32
	c.w(a64Imm12(a64SubsImm, aZR, aS2, uint32(guess))) // cmp x10, #guess
	other := c.branch(aNE)
	if guess == regionPacket {
		return c.pktCheck(pc, n, hi, other) // jit_arm64_pktbase.go
	}
	// The guessed region's entry in the table.
	tab, field := uint32(aS2), func(off int32) int32 { return guess*regionSize + off }
	c.ldr(aS2, aCtx, offRegions)
	c.offsetIn(pc, aS1, aS1, n, tab, field(offRegionLo), field(hi)) // jit_arm64_pktbase.go
	c.ldr(aS2, tab, field(offRegionBuf))
	c.generic = append(c.generic, a64Generic{from: other.pos, resume: len(c.b), pc: pc, n: n, hi: hi})
	c.jumpsFixOther(other)
	return aS2
}

// jumpsFixOther records the branch to the out-of-line check: patched when
// emitGeneric places it.
func (c *arm64Compiler) jumpsFixOther(f a64Fixup) {
	g := &c.generic[len(c.generic)-1]
	g.from = f.pos
	if f.cond {
		g.from = -f.pos - 1 // marks a B.cond
	}
}

func (c *arm64Compiler) emitGeneric(g a64Generic) {
	f := a64Fixup{pos: g.from}
	if g.from < 0 {
		f = a64Fixup{pos: -g.from - 1, cond: true}
	}
	c.patch(f, len(c.b))
	c.tableCheck(g.pc, g.n, g.hi) // jit_arm64_guess.go
	if g.pkt {
		c.pktRebase() // jit_arm64_pktbase.go
	}
	b := c.branch(aAL)
	c.patch(b, g.resume)
}

// emitJcc compares (CMP, or TST for JSET) and branches as BPF jump in
// does.
func (c *arm64Compiler) emitJcc(pc int, in insn, info *opInfo) {
	d, s := a64Regs(in)
	is64, isX := info.width == 64, info.form == formJmpX
	m := s
	jset := info.code.operation() == jmpJSET
	if !isX && in.imm == 0 && c.jumpZero(in, info, d) {
		return
	}
	if !isX {
		v := uint64(in.imm)
		if !is64 {
			v = uint64(uint32(in.imm))
		}
		if c.jccImm(jset, is64, d, v) {
			c.jump(pc, in, arm64JumpCC[info.code.operation()])
			return
		}
		c.movImm(aS3, v)
		m = aS3
	}
	op := uint32(a64Subs) // cmp
	if jset {
		op = a64Ands // tst
	}
	c.rrr(op&^boolW(!is64), aZR, d, m)
	c.jump(pc, in, arm64JumpCC[info.code.operation()])
}

// jumpZero emits `if d == 0` and `if d != 0` (64- or 32-bit) that jump
// forward as CBZ and CBNZ, which compare and branch in one instruction
// within B.cond's range, and reports whether it did (not in the long
// form, nor for a backward jump, which charges the budget first).
func (c *arm64Compiler) jumpZero(in insn, info *opInfo, d uint32) bool {
	op := uint32(a64Cbz)
	switch info.code.operation() {
	case jmpJEQ:
	case jmpJNE:
		op = a64Cbnz
	default:
		return false
	}
	if c.long || in.back != 0 {
		return false
	}
	c.w(a64Branch(op&^boolW(info.width != 64), 0, d))
	c.jumps = append(c.jumps, a64Fixup{pos: len(c.b) - 4, target: int(in.off), cond: true})
	return true
}

// jccImm sets the flags as CMP d, v (TST d, v for jset) would with v in a
// register, in one immediate instruction, and reports whether it could:
// CMP of a 12-bit immediate; CMN of the negated one, whose flags are the
// same (both are AddWithCarry of d and the same sum: d + NOT(-k) + 1 and
// d + k + 0, with equal unsigned and signed sums for 0 < k < 4096); TST
// of a bitmask immediate (a64LogicalImm).
func (c *arm64Compiler) jccImm(jset, is64 bool, d uint32, v uint64) bool {
	w := boolW(!is64)
	if jset {
		n, immr, imms, ok := a64LogicalImm(v, is64)
		if ok {
			c.w(a64BFM((a64AndsImm|n)&^w, aZR, d, immr, imms))
		}
		return ok
	}
	neg := -v
	if !is64 {
		neg = uint64(uint32(neg))
	}
	switch {
	case v < 4096:
		c.w(a64Imm12(a64SubsImm&^w, aZR, d, uint32(v)))
	case neg < 4096:
		c.w(a64Imm12(a64AddsImm&^w, aZR, d, uint32(neg)))
	default:
		return false
	}
	return true
}

// charge subtracts what a backward jump or call at pc to target costs
// from the budget and leaves for the slow path when it runs out.
func (c *arm64Compiler) charge(pc, target int) {
	at, charge := backJump(pc, target)
	c.ldr(aS1, aCtx, offBudget)
	if charge < 4096 {
		c.w(a64Imm12(a64SubsImm, aS1, aS1, uint32(charge))) // subs x9, x9, #charge
	} else {
		if charge > math.MaxInt32 {
			charge = math.MaxInt32
		}
		c.movImm(aS3, uint64(charge))
		c.rrr(a64Subs, aS1, aS1, aS3) // subs x9, x9, x11
	}
	c.str(aS1, aCtx, offBudget)
	c.slowIf(aMI, at)
}

// jump branches to in.off on cond, charging the budget on a backward jump
// as the interpreter does (see backJump).
func (c *arm64Compiler) jump(pc int, in insn, cond uint32) {
	target := int(in.off)
	if in.back == 0 {
		c.jumpTo(cond, target)
		return
	}
	skip := -1
	if cond != aAL {
		c.w(a64Branch(a64Bcond, 0, cond^1)) // b.!cond skip, patched below
		skip = len(c.b) - 4
	}
	c.charge(pc, target)
	c.jumpTo(aAL, target)
	if skip >= 0 {
		c.patch(a64Fixup{pos: skip, cond: true}, len(c.b))
	}
}
