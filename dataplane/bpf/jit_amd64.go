//go:build linux && amd64

package bpf

import (
	"encoding/binary"
	"math"
)

// The amd64 backend. BPF registers live in machine registers for the whole
// run, assigned as the kernel's x86-64 JIT does for the argument registers
// (arch/x86/net/bpf_jit_comp.c): r0 = RAX, r1 = RDI, r2 = RSI, r3 = RDX,
// r4 = RCX, r5 = R8, r6 = RBX, r7 = R13, r8 = R14, r9 = R15, r10 = R12. R11
// holds the Runner, R9 and R10 are scratch; RBP holds the packet's buffer
// minus regionPacket<<32 (jit_amd64_pktbase.go: the trampolines set it and
// restore Go's frame pointer); RSP is never touched. The code uses no
// stack: it runs inside jitEnter's call and returns to it with RET after
// leaving the exit code in R9 (see jitExitDone).

const (
	jitArch  = true
	trapByte = 0xcc // int3
)

// flushCode is a no-op: amd64 keeps instruction and data caches coherent.
func flushCode([]byte) {}

// x86 register numbers.
const (
	xAX  = 0
	xCX  = 1
	xDX  = 2
	xBX  = 3
	xSI  = 6
	xDI  = 7
	xR8  = 8
	xR9  = 9
	xR10 = 10
	xR11 = 11
	xR12 = 12
	xR13 = 13
	xR14 = 14
	xR15 = 15

	xS1  = xR9  // scratch: address, offset
	xS2  = xR10 // scratch: region, buffer
	xCtx = xR11 // the Runner
)

// amd64Regs maps BPF registers to x86 registers.
var amd64Regs = [11]uint8{xAX, xDI, xSI, xDX, xCX, xR8, xBX, xR13, xR14, xR15, xR12}

// x86 condition codes (the low nibble of Jcc).
const (
	ccB  = 0x2
	ccAE = 0x3
	ccE  = 0x4
	ccNE = 0x5
	ccBE = 0x6
	ccA  = 0x7
	ccS  = 0x8
	ccL  = 0xc
	ccGE = 0xd
	ccLE = 0xe
	ccG  = 0xf
)

// amd64JumpCC is the condition code (the low nibble of Jcc, Intel SDM
// vol. 2 appendix B.1.4.7) of each BPF jump operation: unsigned compares
// map to above/below, signed ones to greater/less; JSET jumps on a
// non-zero TEST.
var amd64JumpCC = map[opcode]uint8{
	jmpJEQ: ccE, jmpJNE: ccNE, jmpJSET: ccNE,
	jmpJGT: ccA, jmpJGE: ccAE, jmpJLT: ccB, jmpJLE: ccBE,
	jmpJSGT: ccG, jmpJSGE: ccGE, jmpJSLT: ccL, jmpJSLE: ccLE,
}

// xmem is a memory operand [base + index + disp]; index < 0 means none.
type xmem struct {
	base  uint8
	index int8
	disp  int32
}

// x86asm accumulates machine code.
type x86asm struct {
	b []byte
	// patched are the displacements patch set, for threadJumps.
	patched []int
}

func (a *x86asm) byte1(v ...byte) { a.b = append(a.b, v...) }
func (a *x86asm) imm32(v int32)   { a.b = binary.LittleEndian.AppendUint32(a.b, uint32(v)) }

// rex emits a REX prefix when one is needed (or forced, for byte registers
// SIL/DIL).
func (a *x86asm) rex(w bool, reg, index, base uint8, force bool) {
	v := byte(0x40)
	if w {
		v |= 8
	}
	v |= (reg >> 3 & 1) << 2
	v |= (index >> 3 & 1) << 1
	v |= base >> 3 & 1
	if v != 0x40 || force {
		a.b = append(a.b, v)
	}
}

// rr emits opc with a register-direct ModRM (reg field reg, r/m field rm).
func (a *x86asm) rr(p66, w bool, opc []byte, reg, rm uint8, byteOp bool) {
	if p66 {
		a.b = append(a.b, 0x66)
	}
	a.rex(w, reg, 0, rm, byteOp)
	a.b = append(a.b, opc...)
	a.b = append(a.b, 0xc0|(reg&7)<<3|rm&7)
}

// rm emits opc with a memory ModRM.
func (a *x86asm) rm(p66, w bool, opc []byte, reg uint8, m xmem, byteOp bool) {
	if p66 {
		a.b = append(a.b, 0x66)
	}
	idx := uint8(0)
	if m.index >= 0 {
		idx = uint8(m.index)
	}
	a.rex(w, reg, idx, m.base, byteOp)
	a.b = append(a.b, opc...)
	var mod byte
	switch {
	case m.disp == 0 && m.base&7 != 5:
		mod = 0
	case m.disp >= math.MinInt8 && m.disp <= math.MaxInt8:
		mod = 1
	default:
		mod = 2
	}
	if m.index < 0 && m.base&7 != 4 {
		a.b = append(a.b, mod<<6|(reg&7)<<3|m.base&7)
	} else {
		sib := byte(4 << 3) // no index
		if m.index >= 0 {
			sib = (idx & 7) << 3
		}
		a.b = append(a.b, mod<<6|(reg&7)<<3|4, sib|m.base&7)
	}
	switch mod {
	case 1:
		a.b = append(a.b, byte(int8(m.disp)))
	case 2:
		a.imm32(m.disp)
	}
}

func fits8(v int32) bool { return v >= math.MinInt8 && v <= math.MaxInt8 }

// aluRR: dst op= src for the "r/m, r" opcodes (ADD 01, OR 09, AND 21,
// SUB 29, XOR 31, CMP 39, TEST 85, MOV 89).
func (a *x86asm) aluRR(w bool, opc byte, dst, src uint8) {
	a.rr(false, w, []byte{opc}, src, dst, false)
}

// aluRI: dst op= imm (group 1: ADD 0, OR 1, AND 4, SUB 5, XOR 6, CMP 7).
func (a *x86asm) aluRI(w bool, ext uint8, dst uint8, imm int32) {
	if fits8(imm) {
		a.rr(false, w, []byte{0x83}, ext, dst, false)
		a.byte1(byte(int8(imm)))
		return
	}
	a.rr(false, w, []byte{0x81}, ext, dst, false)
	a.imm32(imm)
}

func (a *x86asm) testRI(w bool, dst uint8, imm int32) {
	a.rr(false, w, []byte{0xf7}, 0, dst, false)
	a.imm32(imm)
}

// movRI sets dst to the 64-bit value v with the shortest encoding.
func (a *x86asm) movRI(dst uint8, v int64) {
	switch {
	case v >= 0 && v <= math.MaxUint32:
		a.rex(false, 0, 0, dst, false)
		a.byte1(0xb8 | dst&7)
		a.imm32(int32(uint32(v)))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		a.rr(false, true, []byte{0xc7}, 0, dst, false)
		a.imm32(int32(v))
	default:
		a.rex(true, 0, 0, dst, false)
		a.byte1(0xb8 | dst&7)
		a.b = binary.LittleEndian.AppendUint64(a.b, uint64(v))
	}
}

// shiftI: dst shifted by n (group 2: SHL 4, SHR 5, SAR 7).
func (a *x86asm) shiftI(w bool, ext, dst uint8, n uint8) {
	a.rr(false, w, []byte{0xc1}, ext, dst, false)
	a.byte1(n)
}

// shiftX: dst shifted by src (masked to the operand width by the CPU, as
// BPF masks it), through CL.
func (a *x86asm) shiftX(w bool, ext, dst, src uint8) {
	if src == xCX && dst != xCX {
		a.rr(false, w, []byte{0xd3}, ext, dst, false)
		return
	}
	a.aluRR(true, 0x89, xS1, xCX) // save r4
	if src != xCX {
		a.aluRR(true, 0x89, xCX, src)
	}
	if dst == xCX {
		a.rr(false, w, []byte{0xd3}, ext, xS1, false)
		a.aluRR(true, 0x89, xCX, xS1)
		return
	}
	a.rr(false, w, []byte{0xd3}, ext, dst, false)
	a.aluRR(true, 0x89, xCX, xS1)
}

// jcc emits a conditional jump with a 32-bit displacement to be patched and
// returns the displacement's position.
func (a *x86asm) jcc(cc uint8) int {
	a.byte1(0x0f, 0x80|cc)
	a.imm32(0)
	return len(a.b) - 4
}

func (a *x86asm) jmp() int {
	a.byte1(0xe9)
	a.imm32(0)
	return len(a.b) - 4
}

// patch points the 32-bit displacement at pos to target.
func (a *x86asm) patch(pos, target int) {
	binary.LittleEndian.PutUint32(a.b[pos:], uint32(int32(target-(pos+4))))
	a.patched = append(a.patched, pos)
}

// amd64Compiler turns one program into amd64 code.
type amd64Compiler struct {
	x86asm
	plain   []insn
	jumps   []jitFixup // to instruction starts
	slows   []jitFixup // to slow-path exits, by instruction
	generic []jitGeneric
	env     jitEnv
	targets []bool        // jumpTargets
	native  int           // helper calls compiled natively
	proven  []int32       // provenIn
	valued  []bool        // the accesses valueAccess compiled (valueReuse)
	vflow   *[]valueFacts // valueFlow, made at the first access that asks
	leaves  []bool        // array lookups that leave their entry (jit_amd64_cost.go)
	leaving bool          // the lookup being emitted leaves it
	// unchk: jit_amd64_value.go
	unchk jitUnchecked
	// elided: jit_amd64_elide.go
	elided map[int][]int
	// ctxResumes are the context loads that reuse the one before (ctxReuse).
	ctxResumes []jitResume
	nproven    int
	exact      exactLeft // the last exact staticAccess (jit_amd64_guess.go)
	// calls: local calls are compiled natively (nativeCalls), and every
	// exit first returns from a native call in progress; ncalls counts them.
	calls  bool
	ncalls int
	// nregions counts the value-region appends emitted (valueRegion):
	// the burst loop trims the table per frame only for code with some.
	nregions int
	// frameSure: the code runs only with a frame (frameSure); ctxFields:
	// the context's scalar loads (ctxScalarLoads). jit_frame.go.
	frameSure bool
	ctxFields []int32
	ctxR1     []bool // r1 holds the context (ctxArgs)
	stackLeft []bool // accesses that left stackBase in S2 (stackAccessAt)
}

// jitFixup is a displacement at pos to resolve to instruction (or exit) pc.
type jitFixup struct {
	pos int
	pc  int
}

// jitMaxCode bounds the code: rel32 displacements reach 2 GiB.
const jitMaxCode = math.MaxInt32

func newBackend(plain []insn, env jitEnv, targets []bool, proven []int32) jitBackend {
	c := &amd64Compiler{plain: plain, env: env, targets: targets, proven: proven, calls: nativeCalls(plain)}
	c.frameSure, c.ctxFields = frameSure(plain, proven), ctxScalarLoads(plain, env.funcs)
	c.ctxR1 = ctxArgs(plain, env.funcs)
	c.stackLeft = make([]bool, len(plain))
	c.b = make([]byte, 0, 24*len(plain)+64)
	return c
}

func (c *amd64Compiler) size() int { return len(c.b) }

// finish places the out-of-line region checks, resolves the jumps and
// emits one slow-path exit stub per instruction that may need one.
func (c *amd64Compiler) finish(entry []uint32) ([]byte, jitCounts) {
	for _, f := range c.jumps {
		c.patch(f.pos, int(entry[f.pc]))
	}
	c.leaveStubs(entry) // jit_amd64_cost.go
	c.ctxStubs(entry)
	for _, g := range c.generic {
		c.emitGeneric(g)
	}
	stubs := map[int]int{}
	for _, f := range c.slows {
		at, ok := stubs[f.pc]
		if !ok {
			at = len(c.b)
			stubs[f.pc] = at
			c.exit(f.pc, jitExitSlow)
		}
		c.patch(f.pos, at)
	}
	c.threadJumps() // jit_amd64_cost.go
	return c.b, jitCounts{native: c.native, proven: c.nproven, calls: c.ncalls, regions: c.nregions, err: c.elideErr()}
}

// exit leaves the exit code for pc in R9 (S1; a 32-bit move, which clears
// the high half) and returns to the trampoline, which hands it to Go.
func (c *amd64Compiler) exit(pc int, kind uint32) {
	c.movRI(xS1, int64(uint32(pc)<<8|kind))
	c.byte1(0xc3)
}

// slowIf jumps to pc's slow-path exit when cc holds.
func (c *amd64Compiler) slowIf(cc uint8, pc int) {
	c.slows = append(c.slows, jitFixup{c.jcc(cc), pc})
}

func reg(r uint8) uint8 { return amd64Regs[r] }

// regs are the x86 registers of in's dst and src.
func regs(in insn) (dst, src uint8) { return reg(in.dst & 15 % 11), reg(in.src & 15 % 11) }

// emitJA emits ja.
func (c *amd64Compiler) emitJA(pc int, in insn) { c.branch(pc, in, 0xff) }

// emitExit emits exit: the return from a native call in progress, else
// the end of the run or of a frame Go pushed.
func (c *amd64Compiler) emitExit(pc int) {
	if c.calls {
		c.callReturn()
	}
	c.exit(pc, jitExitDone)
}

// emitSlow sends the instruction at pc to the interpreter's slow path,
// which runs it and comes back.
func (c *amd64Compiler) emitSlow(pc int) { c.exit(pc, jitExitSlow) }

// x86Arith is the x86 encoding of a BPF ALU operation (Intel SDM vol. 2):
// rr is the opcode of its "op r/m, r" form; digit is the ModRM reg field
// (/digit) of its immediate form in group 1 (0x81/0x83: add, or, and, sub,
// xor) or, for shifts, group 2 (0xc1/0xd3: shl 4, shr 5, sar 7).
type x86Arith struct {
	rr    byte
	digit uint8
}

var amd64Arith = map[opcode]x86Arith{
	aluAdd:  {0x01, 0},
	aluSub:  {0x29, 5},
	aluOr:   {0x09, 1},
	aluAnd:  {0x21, 4},
	aluXor:  {0x31, 6},
	aluLsh:  {0, 4},
	aluRsh:  {0, 5},
	aluArsh: {0, 7},
}

// emitALU emits the ALU operations with K and X forms (and neg): 32-bit
// forms write the low half and so zero the high one, as BPF requires.
func (c *amd64Compiler) emitALU(in insn, info *opInfo) {
	dst, src := regs(in)
	w, x, k := info.width == 64, info.form == formALUX, int32(in.imm)
	switch opn := info.code.operation(); opn {
	case aluAdd, aluSub, aluOr, aluAnd, aluXor:
		if x {
			c.aluRR(w, amd64Arith[opn].rr, dst, src)
		} else {
			c.aluRI(w, amd64Arith[opn].digit, dst, k)
		}
	case aluLsh, aluRsh, aluArsh:
		if x {
			c.shiftX(w, amd64Arith[opn].digit, dst, src)
		} else {
			c.shiftI(w, amd64Arith[opn].digit, dst, uint8(in.imm))
		}
	case aluMul:
		if x {
			c.rr(false, w, []byte{0x0f, 0xaf}, dst, src, false) // imul r, r/m
		} else {
			c.rr(false, w, []byte{0x69}, dst, dst, false) // imul r, r/m, imm32
			c.imm32(k)
		}
	case aluMov:
		switch {
		case x:
			c.aluRR(w, 0x89, dst, src)
		case w:
			c.movRI(dst, in.imm)
		default:
			c.movRI(dst, int64(uint32(in.imm)))
		}
	case aluNeg:
		c.rr(false, w, []byte{0xf7}, 3, dst, false) // neg: f7 /3
	}
}

// emitMovSX emits the sign-extending moves (movsx, movsxd) and, for the rows
// with no extension (mov64 X and mov32 X, key 0), a plain move.
func (c *amd64Compiler) emitMovSX(in insn, info *opInfo) {
	dst, src := regs(in)
	w := info.width == 64
	switch info.key {
	case 8:
		c.rr(false, w, []byte{0x0f, 0xbe}, dst, src, true)
	case 16:
		c.rr(false, w, []byte{0x0f, 0xbf}, dst, src, false)
	case 32:
		c.rr(false, true, []byte{0x63}, dst, src, false)
	default:
		c.aluRR(w, 0x89, dst, src)
	}
}

// emitEndian emits le (a truncation: the host is little-endian) and be/bswap
// (BSWAP, then a shift down for 16 bits).
func (c *amd64Compiler) emitEndian(in insn, info *opInfo) {
	dst, _ := regs(in)
	if info.code.source() == srcK { // le
		switch info.width {
		case 16:
			c.rr(false, false, []byte{0x0f, 0xb7}, dst, dst, false) // movzx
		case 32:
			c.aluRR(false, 0x89, dst, dst)
		}
		return
	}
	c.rex(info.width == 64, 0, 0, dst, false)
	c.byte1(0x0f, 0xc8|dst&7) // bswap
	if info.width == 16 {
		c.shiftI(false, 5, dst, 16)
	}
}

// emitLddw sets dst to the wide load's value, a map handle or a subprogram.
func (c *amd64Compiler) emitLddw(in insn) {
	dst, _ := regs(in)
	c.movRI(dst, int64(lddwValue(in)))
}

// emitCtx emits a specialised context load: the frame's pointer, tagged
// with the packet region.
func (c *amd64Compiler) emitCtx(pc int, in insn) {
	dst, _ := regs(in)
	off := ctxFieldOff(in.op)
	if c.ctxReuse(pc, dst, off) { // jit_amd64_cost.go
		return
	}
	c.ctxFull(pc, dst, off)
}

// ctxFull is emitCtx's load of the frame's field at off into dst, which
// leaves the frame in S1 and the packet region's tag in S2.
func (c *amd64Compiler) ctxFull(pc int, dst uint8, off int32) {
	c.frame(pc)
	c.rm(false, true, []byte{0x8b}, dst, xmem{base: xS1, index: -1, disp: off}, false)
	c.movRI(xS2, int64(regionPacket<<32))
	c.aluRR(true, 0x09, dst, xS2)
}

// frame loads the frame's address into S1; for code that may run
// without one (frameSure), a bare run goes to the slow path, which loads
// as the interpreter does.
func (c *amd64Compiler) frame(pc int) {
	c.rm(false, true, []byte{0x8b}, xS1, ctxMem(offJFrame), false)
	if !c.frameSure {
		c.aluRR(true, 0x85, xS1, xS1)
		c.slowIf(ccE, pc)
	}
}

// emitLoad emits a load of the row's size, zero- or sign-extended.
func (c *amd64Compiler) emitLoad(pc int, in insn, info *opInfo) {
	dst, _ := regs(in)
	n, signed := info.width, info.signed
	if f := ctxScalarAt(c.ctxFields, pc); f != 0 { // jit_frame.go
		c.ctxField(pc, dst, f)
		return
	}
	m := c.access(pc, in.src, in.off, int32(n), false)
	switch {
	case n == 1 && !signed:
		c.rm(false, false, []byte{0x0f, 0xb6}, dst, m, false) // movzx
	case n == 1:
		c.rm(false, true, []byte{0x0f, 0xbe}, dst, m, false) // movsx
	case n == 2 && !signed:
		c.rm(false, false, []byte{0x0f, 0xb7}, dst, m, false)
	case n == 2:
		c.rm(false, true, []byte{0x0f, 0xbf}, dst, m, false)
	case n == 4 && !signed:
		c.rm(false, false, []byte{0x8b}, dst, m, false)
		c.ctxScalar(pc, dst)
	case n == 4:
		c.rm(false, true, []byte{0x63}, dst, m, false) // movsxd
	default:
		c.rm(false, true, []byte{0x8b}, dst, m, false)
	}
}

// emitStore emits a store of the row's size, of the immediate (ST) or of src
// (STX).
func (c *amd64Compiler) emitStore(pc int, in insn, info *opInfo) {
	_, src := regs(in)
	n := info.width
	m := c.access(pc, in.dst, in.off, int32(n), true)
	if info.form == formStx {
		// mov r/m8, r8 (88); mov r/m, r (89), with 66 for 16 bits.
		opc := byte(0x89)
		if n == 1 {
			opc = 0x88
		}
		c.rm(n == 2, n == 8, []byte{opc}, src, m, n == 1)
		return
	}
	switch n {
	case 1:
		c.rm(false, false, []byte{0xc6}, 0, m, false) // mov r/m8, imm8
		c.byte1(byte(in.imm))
	case 2:
		c.rm(true, false, []byte{0xc7}, 0, m, false)
		c.b = binary.LittleEndian.AppendUint16(c.b, uint16(in.imm))
	default:
		c.rm(false, n == 8, []byte{0xc7}, 0, m, false) // imm32, sign-extended for 8
		c.imm32(int32(in.imm))
	}
}

// emitCall emits a helper call natively where one is compiled (map lookups,
// tail calls), else an exit to the slow path, which runs every call.
func (c *amd64Compiler) emitCall(pc int, in insn) {
	switch {
	case in.op == opTailCall && c.tailCallAt(pc),
		in.op == opCall && callInfo(in.imm).nativeAny() && c.nativeHelper(pc): // helpers_table.go, kfunc.go
		c.native++
	case in.op == opCallLocal && c.calls:
		c.localCall(pc, in)
		c.ncalls++
	default:
		c.exit(pc, jitExitSlow)
	}
}

// emitDiv emits the division or modulo in with the interpreter's results
// (udiv64 ... smod32): a zero divisor gives 0 (div) or leaves dst (mod, 32
// bits zero-extended), a signed division by -1 negates (INT_MIN stays) and
// its modulo is 0; the CPU's divide, which traps on those, runs only for
// the other divisors. DIV needs RAX and RDX (r0 and r3): they are saved in
// R10 and jitState.spill around it.
func (c *amd64Compiler) emitDiv(in insn, info *opInfo) {
	dst, src := regs(in)
	w, isX := info.width == 64, info.form == formDivX
	signed, mod := info.signed, info.code.operation() == aluMod
	if isX {
		c.aluRR(true, 0x89, xS1, src)
	} else if w {
		c.movRI(xS1, in.imm)
	} else {
		c.movRI(xS1, int64(uint32(in.imm)))
	}
	c.aluRR(w, 0x85, xS1, xS1)
	zero := c.jcc(ccE)
	minus := -1
	if signed {
		c.aluRI(w, 7, xS1, -1)
		minus = c.jcc(ccE)
	}
	c.aluRR(true, 0x89, xS2, xAX)
	c.rm(false, true, []byte{0x89}, xDX, xmem{base: xCtx, index: -1, disp: offSpill}, false)
	c.aluRR(w, 0x89, xAX, dst)
	switch {
	case signed && w:
		c.byte1(0x48, 0x99) // cqo
	case signed:
		c.byte1(0x99) // cdq
	default:
		c.aluRR(false, 0x31, xDX, xDX)
	}
	ext := uint8(6) // div
	if signed {
		ext = 7 // idiv
	}
	c.rr(false, w, []byte{0xf7}, ext, xS1, false)
	res := uint8(xAX)
	if mod {
		res = xDX
	}
	c.aluRR(true, 0x89, xS1, res)
	c.aluRR(true, 0x89, xAX, xS2)
	c.rm(false, true, []byte{0x8b}, xDX, xmem{base: xCtx, index: -1, disp: offSpill}, false)
	c.aluRR(true, 0x89, dst, xS1)
	done := []int{c.jmp()}
	c.patch(zero, len(c.b))
	if !mod {
		c.movRI(dst, 0)
	} else if !w {
		c.aluRR(false, 0x89, dst, dst)
	}
	if signed {
		done = append(done, c.jmp())
		c.patch(minus, len(c.b))
		if mod {
			c.movRI(dst, 0)
		} else {
			c.rr(false, w, []byte{0xf7}, 3, dst, false) // neg
		}
	}
	for _, d := range done {
		c.patch(d, len(c.b))
	}
}

// emitAtomic emits the atomic operations as locked instructions (add, or, and,
// xor; fetch-add as XADD; exchange as XCHG; compare and exchange as
// CMPXCHG, whose implicit RAX is r0; fetch-or/and/xor as a CMPXCHG loop)
// after the store check of the region and a check of the natural alignment
// the interpreter requires (atomic32/atomic64); a failed check goes to the
// slow path, which reports the same fault.
func (c *amd64Compiler) emitAtomic(pc int, in insn) {
	_, src := regs(in)
	w := in.op == opAtomic64
	n := int32(4)
	if w {
		n = 8
	}
	var opc []byte
	switch in.imm {
	case atomicAdd:
		opc = []byte{0x01}
	case atomicOr:
		opc = []byte{0x09}
	case atomicAnd:
		opc = []byte{0x21}
	case atomicXor:
		opc = []byte{0x31}
	case atomicAdd | atomicFetch:
		opc = []byte{0x0f, 0xc1} // xadd
	case atomicXchg:
		opc = []byte{0x87} // xchg (locked without the prefix)
	case atomicCmpXchg:
		opc = []byte{0x0f, 0xb1} // cmpxchg: compares with and loads RAX (r0)
	case atomicOr | atomicFetch, atomicAnd | atomicFetch, atomicXor | atomicFetch:
		c.atomicFetchLoop(pc, in, src, w, n)
		return
	default:
		c.exit(pc, jitExitSlow)
		return
	}
	m := c.atomicAccess(pc, in.dst, in.off, n)     // jit_amd64_cost.go
	c.rm(false, true, []byte{0x8d}, xS2, m, false) // lea: the address
	c.testRI(true, xS2, n-1)
	c.slowIf(ccNE, pc)
	if in.imm != atomicXchg {
		c.byte1(0xf0) // lock
	}
	c.rm(false, w, opc, src, xmem{base: xS2, index: -1}, false)
	if in.imm == atomicCmpXchg && !w {
		// A 32-bit cmpxchg that succeeds leaves RAX as it was: r0 is the
		// old value, zero-extended, as the interpreter has it.
		c.aluRR(false, 0x89, xAX, xAX)
	}
}

// atomicFetchLoop emits fetch-or/and/xor as a CMPXCHG loop (no single x86
// instruction returns the old value): RAX (r0) is saved in jitState.spill,
// loaded with the old value, the new one computed in S1 and swapped in until
// no other writer got between; src gets the old value, zero-extended for 32
// bits, and RAX is restored unless src is r0.
func (c *amd64Compiler) atomicFetchLoop(pc int, in insn, src uint8, w bool, n int32) {
	var opc byte
	switch in.imm &^ atomicFetch {
	case atomicOr:
		opc = 0x0b // or r, r/m
	case atomicAnd:
		opc = 0x23
	default:
		opc = 0x33 // xor
	}
	m := c.atomicAccess(pc, in.dst, in.off, n)     // jit_amd64_cost.go
	c.rm(false, true, []byte{0x8d}, xS2, m, false) // lea: the address
	c.testRI(true, xS2, n-1)
	c.slowIf(ccNE, pc)
	spill := xmem{base: xCtx, index: -1, disp: offSpill}
	c.rm(false, true, []byte{0x89}, xAX, spill, false)
	loop := len(c.b)
	c.rm(false, w, []byte{0x8b}, xAX, xmem{base: xS2, index: -1}, false) // old
	c.aluRR(true, 0x89, xS1, xAX)
	if src == xAX {
		c.rm(false, w, []byte{opc}, xS1, spill, false) // the value was r0
	} else {
		c.rr(false, w, []byte{opc}, xS1, src, false)
	}
	c.byte1(0xf0) // lock
	c.rm(false, w, []byte{0x0f, 0xb1}, xS1, xmem{base: xS2, index: -1}, false)
	c.byte1(0x75, byte(int8(loop-(len(c.b)+2)))) // jnz loop
	if src != xAX {
		c.aluRR(w, 0x89, src, xAX)
		c.rm(false, true, []byte{0x8b}, xAX, spill, false)
	}
}

// access is the operand of the load or store at pc: without a check when
// provenIn proved it inside a region (the region's buffer, indexed by the
// low 32 bits of the pointer), else through check. A global data region
// is addressed at the buffer the proof was made on, the collection's own
// (staticBuf, an immediate), with no check of the Runner's collection:
// native code compiled for a collection only ever runs while the Runner
// is bound to it anyway (jitBoundColl in jit.go says why), so the table
// entry, which the interpreter reads, is that same buffer.
func (c *amd64Compiler) access(pc int, bpfBase uint8, off, n int32, write bool) xmem {
	rg := c.proven[pc]
	if rg == 0 {
		if m, ok := c.stackAccessAt(pc, bpfBase, off, n); ok {
			return m // jit_amd64_stack.go
		}
		if m, ok := c.valueAccess(pc, bpfBase, off, n, write); ok { // jit_amd64_value.go
			return m
		}
		return c.check(pc, bpfBase, off, n, write)
	}
	c.nproven++
	if m, ok := c.staticAccess(pc, bpfBase, rg, off); ok { // jit_amd64_guess.go
		return m
	}
	if rg == regionPacket {
		return xmem{base: xPkt, index: int8(reg(bpfBase)), disp: off} // jit_amd64_pktbase.go
	}
	// No compare of Runner.coll with c.env.coll here: see jitBoundColl.
	switch buf := staticBuf(c.env.coll, rg); { // jit_globals_unsafe.go
	case buf != 0:
		c.movRI(xS2, int64(buf)) // the collection's own buffer
	default:
		c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offRegions), false)
		c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: -1, disp: rg*regionSize + offRegionBuf}, false)
	}
	c.aluRR(false, 0x89, xS1, reg(bpfBase)) // the offset: low 32 bits
	return xmem{base: xS2, index: xS1, disp: off}
}

// check emits the region check of an n-byte access at reg(base)+off (the
// interpreter's: region number below the table's length, lo <= offset,
// offset+n <= hi, or whi for a store) and returns the operand that
// addresses the checked bytes. Anything else goes to the slow path, which
// loads from the context or reports the fault.
//
// The inline code guesses the region (the one the range analysis places
// the base in: guessedCheck; else the stack for r10, else the packet) and
// checks against that entry of the table, whose loads do not depend on
// the address; another region number goes to the full check out of line
// (generic), which comes back with the same registers. Both regions exist
// in every Runner's table (it never has fewer than regionStatic entries).
func (c *amd64Compiler) check(pc int, bpfBase uint8, off, n int32, write bool) xmem {
	if m, ok := c.guessedCheck(pc, bpfBase, off, n, write); ok { // jit_amd64_guess.go
		return m
	}
	return c.checkIn(pc, bpfBase, off, n, write, guessRegion(bpfBase))
}

// checkIn is check with the region guessed given.
func (c *amd64Compiler) checkIn(pc int, bpfBase uint8, off, n int32, write bool, guess int32) xmem {
	base := reg(bpfBase)
	hi := limitField(write)
	if guess == regionStack && n > 0 {
		if m, ok := c.stackKeyAccess(pc, bpfBase, off, n); ok {
			return m // jit_amd64_stack.go
		}
		return c.stackCheck(pc, bpfBase, off, n, hi)
	}
	field := func(off int32) xmem { return xmem{base: xS2, index: -1, disp: guess*regionSize + off} }
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: base, index: -1, disp: off}, false) // lea
	c.aluRR(true, 0x89, xS2, xS1)
	c.shiftI(true, 5, xS2, 32)
	c.aluRI(false, 7, xS2, guess)
	other := c.jcc(ccNE)
	if guess == regionPacket {
		return c.pktCheck(pc, n, hi, other) // jit_amd64_pktbase.go
	}
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xCtx, index: -1, disp: offRegions}, false)
	c.aluRR(false, 0x89, xS1, xS1) // the offset: low 32 bits
	c.rm(false, true, []byte{0x3b}, xS1, field(offRegionLo), false)
	c.slowIf(ccB, pc)
	c.aluRI(true, 0, xS1, n)
	c.rm(false, true, []byte{0x3b}, xS1, field(hi), false)
	c.slowIf(ccA, pc)
	c.rm(false, true, []byte{0x8b}, xS2, field(offRegionBuf), false)
	c.generic = append(c.generic, jitGeneric{from: other, resume: len(c.b), pc: pc, n: n, hi: hi})
	return xmem{base: xS2, index: xS1, disp: -n}
}

// jitGeneric is the out-of-line full check of an access whose region was
// not the one guessed: entered with the address in S1 and its region number
// in S2, it leaves the offset plus n in S1 and the buffer in S2 and jumps
// back to resume.
type jitGeneric struct {
	from, resume, pc int
	n, hi            int32
	// A 4-byte load may read a scalar field of the context: ctx says so,
	// with the register it loads and where the code goes on after it.
	ctx   bool
	dst   uint8
	after int
	// pkt: the access was guessed on the packet and addresses [RBP + S1]
	// (pktCheck); the full check leaves S1 to match.
	pkt bool
}

// ctxScalar lets the out-of-line check of the 4-byte load just emitted at
// pc serve the xdp_md fields ingress_ifindex and rx_queue_index from the
// Frame, as slowLoad does, instead of leaving for the slow path.
func (c *amd64Compiler) ctxScalar(pc int, dst uint8) {
	if len(c.generic) == 0 || c.generic[len(c.generic)-1].pc != pc {
		return // a proven access: no out-of-line check
	}
	g := &c.generic[len(c.generic)-1]
	g.ctx, g.dst, g.after = true, dst, len(c.b)
}

// emitCtxScalar is the start of g's out-of-line check for a load that may
// read the context: with the address in S1 and its region number in S2, a
// 4-byte load at offset 12 or 16 of the context reads the Frame's field
// (no frame: the slow path, as for data); other context offsets go to the
// slow path, other regions on to the full check.
func (c *amd64Compiler) emitCtxScalar(g jitGeneric) {
	c.aluRI(true, 7, xS2, regionCtx)
	other := c.jcc(ccNE)
	var done []int
	for _, f := range []struct {
		ctxOff, field int32
		ptr           bool // a packet pointer, as ctxFull loads it
	}{
		{xdpMdIngressIfindex, offIngress, false}, {xdpMdRxQueueIndex, offRxQueue, false},
		{xdpMdData, offData, true}, {xdpMdDataEnd, offDataEnd, true}, {xdpMdDataMeta, offDataMeta, true},
	} {
		c.aluRI(false, 7, xS1, f.ctxOff)
		next := c.jcc(ccNE)
		c.rm(false, true, []byte{0x8b}, xS1, ctxMem(offJFrame), false)
		c.aluRR(true, 0x85, xS1, xS1)
		c.slowIf(ccE, g.pc)
		c.rm(false, f.ptr, []byte{0x8b}, g.dst, xmem{base: xS1, index: -1, disp: f.field}, false)
		if f.ptr { // a context pointer the analysis lost (spilled to the stack): slowLoad's result
			c.movRI(xS2, int64(regionPacket<<32))
			c.aluRR(true, 0x09, g.dst, xS2)
		}
		done = append(done, c.jmp())
		c.patch(next, len(c.b))
	}
	c.slows = append(c.slows, jitFixup{c.jmp(), g.pc})
	for _, d := range done {
		c.patch(d, g.after)
	}
	c.patch(other, len(c.b))
}

func (c *amd64Compiler) emitGeneric(g jitGeneric) {
	c.patch(g.from, len(c.b))
	if g.ctx {
		c.emitCtxScalar(g)
	}
	c.tableBounds(g.pc, g.n, g.hi) // jit_amd64_guess.go
	if g.pkt {
		c.pktRebase(g.n) // jit_amd64_pktbase.go
	} else {
		c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: -1, disp: offRegionBuf}, false)
	}
	c.patch(c.jmp(), g.resume)
}

// emitJcc compares and jumps as BPF jump in does.
func (c *amd64Compiler) emitJcc(pc int, in insn, info *opInfo) {
	dst, src := regs(in)
	w, isX := info.width == 64, info.form == formJmpX
	isSet := info.code.operation() == jmpJSET
	switch {
	case isX && isSet:
		c.aluRR(w, 0x85, dst, src)
	case isX:
		c.aluRR(w, 0x39, dst, src)
	case isSet:
		c.testRI(w, dst, int32(in.imm))
	case in.imm == 0:
		// TEST sets the flags as CMP with 0 does (CF and OF clear, ZF and
		// SF from the value), a byte shorter.
		c.aluRR(w, 0x85, dst, dst)
	default:
		c.aluRI(w, 7, dst, int32(in.imm))
	}
	c.branch(pc, in, amd64JumpCC[info.code.operation()])
}

// branch jumps to in.off when cc holds (0xff: always). A backward jump
// charges the instruction budget first, as the interpreter does (see
// backJump).
func (c *amd64Compiler) branch(pc int, in insn, cc uint8) {
	target := int(in.off)
	if in.back == 0 {
		if cc == 0xff {
			c.jumps = append(c.jumps, jitFixup{c.jmp(), target})
		} else {
			c.jumps = append(c.jumps, jitFixup{c.jcc(cc), target})
		}
		return
	}
	skip := -1
	if cc != 0xff {
		c.byte1(0x70|cc^1, 0)
		skip = len(c.b)
	}
	c.charge(pc, target)
	c.jumps = append(c.jumps, jitFixup{c.jmp(), target})
	if skip >= 0 {
		c.b[skip-1] = byte(len(c.b) - skip)
	}
}

// charge subtracts what a backward jump or call at pc to target costs
// from the budget and leaves for the slow path at pc when it runs out.
func (c *amd64Compiler) charge(pc, target int) {
	at, n := backJump(pc, target)
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	budget := xmem{base: xCtx, index: -1, disp: offBudget}
	if fits8(int32(n)) {
		c.rm(false, true, []byte{0x83}, 5, budget, false) // sub qword [budget], n
		c.byte1(byte(n))
	} else {
		c.rm(false, true, []byte{0x81}, 5, budget, false)
		c.imm32(int32(n))
	}
	c.slowIf(ccS, at)
}
