//go:build linux && arm64

package bpf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The arm64 backend (A64 encodings from the Arm Architecture Reference
// Manual, section C6). BPF r0-r5 live in X0-X5, r6-r10 in X19-X23; X24
// holds the Runner, X9-X13 are scratch. X18 (platform register), X28 (g),
// X29 (frame pointer), X30 (link register, set by jitEnter's BL) and SP are
// never written. The code uses no stack and returns to jitEnter with RET
// after leaving the exit code in X9 (see jitExitDone).

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
	aZR  = 31
)

var arm64Regs = [11]uint32{0, 1, 2, 3, 4, 5, 19, 20, 21, 22, 23}

// A64 condition codes.
const (
	aEQ = 0x0
	aNE = 0x1
	aHS = 0x2
	aLO = 0x3
	aMI = 0x4
	aHI = 0x8
	aLS = 0x9
	aGE = 0xa
	aLT = 0xb
	aGT = 0xc
	aLE = 0xd
	aAL = 0xe
)

// arm64JumpCC is the condition of each BPF jump (order of jumpCC on amd64).
var arm64JumpCC = [11]uint32{aEQ, aHI, aHS, aNE, aNE, aGT, aGE, aLO, aLS, aLT, aLE}

type a64Fixup struct {
	pos    int
	target int // instruction index, or stub position
	cond   bool
}

type a64Generic struct {
	from, resume, pc int
	n                int32
	hi               int32
}

type arm64Compiler struct {
	b            []byte
	plain, fused []insn
	entry        []uint32
	long         bool // branches may be out of B.cond's 1 MB range
	jumps        []a64Fixup
	slows        []a64Fixup // target: pc of the slow exit
	generic      []a64Generic
	env          jitEnv
	targets      []bool  // jumpTargets
	proven       []int32 // provenIn
	nproven      int
	native       int // helper calls compiled natively
}

func (c *arm64Compiler) w(i uint32) { c.b = binary.LittleEndian.AppendUint32(c.b, i) }

func compileNative(plain, fused []insn, env jitEnv) (*jitProg, error) {
	if len(plain) != len(fused) || len(plain) == 0 {
		return nil, fmt.Errorf("internal: %d plain and %d fused instructions", len(plain), len(fused))
	}
	c := &arm64Compiler{plain: plain, fused: fused, entry: make([]uint32, len(plain)), env: env}
	c.targets = jumpTargets(plain, env.funcs)
	c.proven = provenIn(plain, env)
	// At most about 30 instructions a slot plus the out-of-line code: past
	// 4000 slots, branches take the long form.
	c.long = len(plain) > 4000
	c.b = make([]byte, 0, 64*len(plain)+64)
	for pc := range plain {
		c.entry[pc] = uint32(len(c.b))
		c.insn(pc)
	}
	for _, g := range c.generic {
		c.emitGeneric(g)
	}
	for _, f := range c.jumps {
		c.patch(f, int(c.entry[f.target]))
	}
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
	if len(c.b) >= 1<<27 {
		return nil, fmt.Errorf("code too large")
	}
	mem, base, err := mapCode(c.b)
	if err != nil {
		return nil, err
	}
	return &jitProg{mem: mem, entry: c.entry, base: base, native: c.native, proven: c.nproven}, nil
}

// patch resolves a branch at f.pos to byte offset to.
func (c *arm64Compiler) patch(f a64Fixup, to int) {
	d := int32(to-f.pos) / 4
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
		c.w(0x14000000)
		return a64Fixup{pos: len(c.b) - 4}
	}
	if c.long {
		c.w(0x54000040 | (cond ^ 1)) // b.!cond +8
		c.w(0x14000000)
		return a64Fixup{pos: len(c.b) - 4}
	}
	c.w(0x54000000 | cond)
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
				c.w(0x92800000 | uint32(i)<<21 | (^ch[i]&0xffff)<<5 | d) // movn
				first = false
			} else {
				c.w(0xf2800000 | uint32(i)<<21 | ch[i]<<5 | d) // movk
			}
		}
		if first {
			c.w(0x92800000 | d) // movn d, #0: all ones
		}
		return
	}
	for i := range ch {
		if ch[i] == 0 {
			continue
		}
		if first {
			c.w(0xd2800000 | uint32(i)<<21 | ch[i]<<5 | d) // movz
			first = false
		} else {
			c.w(0xf2800000 | uint32(i)<<21 | ch[i]<<5 | d)
		}
	}
	if first {
		c.w(0xd2800000 | d)
	}
}

// ldr and str: 64-bit load and store of [n + off].
func (c *arm64Compiler) ldr(t, n uint32, off int32) {
	if off >= 0 && off%8 == 0 && off/8 < 4096 {
		c.w(0xf9400000 | uint32(off/8)<<10 | n<<5 | t)
		return
	}
	c.movImm(aS5, uint64(int64(off)))
	c.w(0xf8606800 | aS5<<16 | n<<5 | t)
}

func (c *arm64Compiler) str(t, n uint32, off int32) {
	if off >= 0 && off%8 == 0 && off/8 < 4096 {
		c.w(0xf9000000 | uint32(off/8)<<10 | n<<5 | t)
		return
	}
	c.movImm(aS5, uint64(int64(off)))
	c.w(0xf8206800 | aS5<<16 | n<<5 | t)
}

// exit leaves the exit code for pc in X9 (S1) and returns to the
// trampoline, which hands it to Go.
func (c *arm64Compiler) exit(pc int, kind uint32) {
	c.movImm(aS1, uint64(uint32(pc)<<8|kind))
	c.w(0xd65f03c0) // ret
}

// rrr emits a three-register data-processing instruction d = n op m.
func (c *arm64Compiler) rrr(op, d, n, m uint32) { c.w(op | m<<16 | n<<5 | d) }

// bfm emits UBFM/SBFM d, n, immr, imms.
func (c *arm64Compiler) bfm(op, d, n, immr, imms uint32) { c.w(op | immr<<16 | imms<<10 | n<<5 | d) }

// ALU opcodes: 64-bit forms; the 32-bit ones clear bit 31.
const (
	a64Add  = 0x8b000000
	a64Sub  = 0xcb000000
	a64And  = 0x8a000000
	a64Orr  = 0xaa000000
	a64Eor  = 0xca000000
	a64Mul  = 0x9b007c00
	a64Lslv = 0x9ac02000
	a64Lsrv = 0x9ac02400
	a64Asrv = 0x9ac02800
	a64W    = 0x80000000 // the sf bit
)

func (c *arm64Compiler) alu(op uint32, is64 bool, d, m uint32) {
	if !is64 {
		op &^= a64W
	}
	c.rrr(op, d, d, m)
}

func (c *arm64Compiler) aluK(op uint32, is64 bool, d uint32, imm int64) {
	v := uint64(imm)
	if !is64 {
		v = uint64(uint32(imm))
	}
	c.movImm(aS3, v)
	c.alu(op, is64, d, aS3)
}

func (c *arm64Compiler) shiftK(kind int, is64 bool, d uint32, s uint32) {
	if is64 {
		switch kind {
		case 0:
			c.bfm(0xd3400000, d, d, (64-s)&63, 63-s)
		case 1:
			c.bfm(0xd3400000, d, d, s, 63)
		default:
			c.bfm(0x93400000, d, d, s, 63)
		}
		return
	}
	switch kind {
	case 0:
		c.bfm(0x53000000, d, d, (32-s)&31, 31-s)
	case 1:
		c.bfm(0x53000000, d, d, s, 31)
	default:
		c.bfm(0x13000000, d, d, s, 31)
	}
}

func (c *arm64Compiler) insn(pc int) {
	in := c.plain[pc]
	d, s := arm64Regs[in.dst&15%11], arm64Regs[in.src&15%11]
	switch in.op {
	case opAdd64K, opSub64K, opOr64K, opAnd64K, opXor64K, opMul64K:
		c.aluK(a64AluOp(in.op), true, d, in.imm)
	case opAdd32K, opSub32K, opOr32K, opAnd32K, opXor32K, opMul32K:
		c.aluK(a64AluOp(in.op), false, d, in.imm)
	case opAdd64X, opSub64X, opOr64X, opAnd64X, opXor64X, opMul64X, opLsh64X, opRsh64X, opArsh64X:
		c.alu(a64AluOp(in.op), true, d, s)
	case opAdd32X, opSub32X, opOr32X, opAnd32X, opXor32X, opMul32X, opLsh32X, opRsh32X, opArsh32X:
		c.alu(a64AluOp(in.op), false, d, s)
	case opLsh64K:
		c.shiftK(0, true, d, uint32(in.imm)&63)
	case opRsh64K:
		c.shiftK(1, true, d, uint32(in.imm)&63)
	case opArsh64K:
		c.shiftK(2, true, d, uint32(in.imm)&63)
	case opLsh32K:
		c.shiftK(0, false, d, uint32(in.imm)&31)
	case opRsh32K:
		c.shiftK(1, false, d, uint32(in.imm)&31)
	case opArsh32K:
		c.shiftK(2, false, d, uint32(in.imm)&31)
	case opMov64K:
		c.movImm(d, uint64(in.imm))
	case opMov32K:
		c.movImm(d, uint64(uint32(in.imm)))
	case opMov64X:
		c.rrr(a64Orr, d, aZR, s)
	case opMov32X:
		c.rrr(a64Orr&^a64W, d, aZR, s)
	case opNeg64:
		c.rrr(a64Sub, d, aZR, d)
	case opNeg32:
		c.rrr(a64Sub&^a64W, d, aZR, d)
	case opMovSX8to64:
		c.bfm(0x93400000, d, s, 0, 7)
	case opMovSX16to64:
		c.bfm(0x93400000, d, s, 0, 15)
	case opMovSX32to64:
		c.bfm(0x93400000, d, s, 0, 31)
	case opMovSX8to32:
		c.bfm(0x13000000, d, s, 0, 7)
	case opMovSX16to32:
		c.bfm(0x13000000, d, s, 0, 15)
	case opTrunc16:
		c.bfm(0x53000000, d, d, 0, 15)
	case opTrunc32:
		c.rrr(a64Orr&^a64W, d, aZR, d)
	case opNop:
	case opSwap16:
		c.w(0x5ac00400 | d<<5 | d) // rev16 w
		c.bfm(0x53000000, d, d, 0, 15)
	case opSwap32:
		c.w(0x5ac00800 | d<<5 | d) // rev w
	case opSwap64:
		c.w(0xdac00c00 | d<<5 | d) // rev x

	case opLdImm64, opLdMapValue:
		c.movImm(d, uint64(in.imm))
	case opLdMap:
		c.movImm(d, regionMap<<32|uint64(uint32(in.imm)))
	case opLdFunc:
		c.movImm(d, regionFunc<<32|uint64(uint32(in.imm)))

	case opLdCtxData, opLdCtxDataEnd, opLdCtxDataMeta:
		off := offData
		switch in.op {
		case opLdCtxDataEnd:
			off = offDataEnd
		case opLdCtxDataMeta:
			off = offDataMeta
		}
		c.ldr(aS1, aCtx, offJFrame)
		c.w(0xf100001f | aS1<<5) // cmp x9, #0
		c.slowIf(aEQ, pc)
		c.ldr(d, aS1, off)
		c.movImm(aS2, regionPacket<<32)
		c.rrr(a64Orr, d, d, aS2)

	case opLdxB, opLdxH, opLdxW, opLdxDW, opLdxSB, opLdxSH, opLdxSW:
		n, signed := loadSize(in.op)
		c.access(pc, in.src, in.off, int32(n), false)
		var op uint32
		switch {
		case n == 1 && !signed:
			op = 0x38606800
		case n == 1:
			op = 0x38a06800
		case n == 2 && !signed:
			op = 0x78606800
		case n == 2:
			op = 0x78a06800
		case n == 4 && !signed:
			op = 0xb8606800
		case n == 4:
			op = 0xb8a06800
		default:
			op = 0xf8606800
		}
		c.w(op | aS1<<16 | aS2<<5 | d)
	case opStB, opStH, opStW, opStDW, opStxB, opStxH, opStxW, opStxDW:
		n := storeSize(in.op)
		c.access(pc, in.dst, in.off, int32(n), true)
		v := s
		if in.op <= opStDW {
			c.movImm(aS5, uint64(in.imm))
			v = aS5
		}
		var op uint32
		switch n {
		case 1:
			op = 0x38206800
		case 2:
			op = 0x78206800
		case 4:
			op = 0xb8206800
		default:
			op = 0xf8206800
		}
		c.w(op | aS1<<16 | aS2<<5 | v)

	case opDiv64K, opDiv64X, opMod64K, opMod64X, opSDiv64K, opSDiv64X, opSMod64K, opSMod64X,
		opDiv32K, opDiv32X, opMod32K, opMod32X, opSDiv32K, opSDiv32X, opSMod32K, opSMod32X:
		c.div(in, d, s)
	case opAtomic32, opAtomic64:
		c.atomic(pc, in, s)
	case opJA:
		c.jump(pc, in, aAL)
	case opExit:
		c.exit(pc, jitExitDone)
	case opCall:
		if c.nativeHelper(pc) { // jit_arm64_hash.go
			c.native++
			return
		}
		c.exit(pc, jitExitSlow)
	default:
		if in.op >= opJEQ64K && in.op <= opJSLE32X {
			c.condJump(pc, in, d, s)
			return
		}
		// Division, calls, tail calls, atomics: the slow path.
		c.exit(pc, jitExitSlow)
	}
}

// div emits the division or modulo in: UDIV and SDIV give the
// interpreter's results for every divisor (0 for a zero divisor, INT_MIN
// for INT_MIN / -1) and do not trap; the modulo is dst - q*divisor (MSUB),
// which leaves dst for a zero divisor and gives 0 for -1, as udiv64 ...
// smod32 do. 32-bit forms work on W registers (zero-extended results).
func (c *arm64Compiler) div(in insn, d, s uint32) {
	o := in.op
	is64 := o < opAdd32K
	isX := (o-opDiv64K)%2 == 1
	if !is64 {
		isX = (o-opDiv32K)%2 == 1
	}
	var signed, mod bool
	switch o {
	case opSDiv64K, opSDiv64X, opSDiv32K, opSDiv32X:
		signed = true
	case opMod64K, opMod64X, opMod32K, opMod32X:
		mod = true
	case opSMod64K, opSMod64X, opSMod32K, opSMod32X:
		signed, mod = true, true
	}
	m := s
	if !isX {
		v := uint64(in.imm)
		if !is64 {
			v = uint64(uint32(in.imm))
		}
		c.movImm(aS3, v)
		m = aS3
	}
	op := uint32(0x9ac00800) // udiv
	if signed {
		op = 0x9ac00c00 // sdiv
	}
	msub := uint32(0x9b008000)
	if !is64 {
		op &^= a64W
		msub &^= a64W
	}
	if !mod {
		c.rrr(op, d, d, m)
		return
	}
	c.rrr(op, aS4, d, m)
	c.w(msub | m<<16 | d<<10 | aS4<<5 | d) // d = d - q*m
}

// atomic emits an atomic operation as a load-acquire/store-release
// exclusive loop (LDAXR/STLXR, what sync/atomic uses on cores without LSE,
// such as the i.MX8's Cortex-A53), after the store check of the region and
// the natural-alignment check the interpreter requires; a failed check goes
// to the slow path, which reports the same fault.
func (c *arm64Compiler) atomic(pc int, in insn, s uint32) {
	is64 := in.op == opAtomic64
	n := int32(4)
	ldaxr, stlxr := uint32(0x885ffc00), uint32(0x8800fc00)
	cmp := uint32(0x6b00001f)
	if is64 {
		n = 8
		ldaxr, stlxr = 0xc85ffc00, 0xc800fc00
		cmp = 0xeb00001f
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
	c.check(pc, in.dst, in.off, n, true)
	c.rrr(a64Add, aS2, aS2, aS1) // the address
	c.movImm(aS3, uint64(n-1))
	c.rrr(0xea00001f, 0, aS2, aS3) // tst
	c.slowIf(aNE, pc)
	loop := len(c.b)
	c.w(ldaxr | aS2<<5 | aS4)
	switch in.imm {
	case atomicCmpXchg:
		c.rrr(cmp, 0, aS4, 0) // cmp old, r0
		ne := c.branchShort(aNE)
		c.w(stlxr | aS6<<16 | aS2<<5 | s)
		c.cbnzLoop(loop)
		c.patch(ne, len(c.b))
		c.rrr(a64Orr&^a64W|boolW(is64), 0, aZR, aS4) // r0 = old
		return
	case atomicXchg:
		c.w(stlxr | aS6<<16 | aS2<<5 | s)
	default:
		c.rrr(op, aS5, aS4, s)
		c.w(stlxr | aS6<<16 | aS2<<5 | aS5)
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
	c.w(0x54000000 | cond)
	return a64Fixup{pos: len(c.b) - 4, cond: true}
}

// cbnzLoop branches back to loop while the store-exclusive status is not 0.
func (c *arm64Compiler) cbnzLoop(loop int) {
	d := int32(loop-len(c.b)) / 4
	c.w(0x35000000 | (uint32(d)&0x7ffff)<<5 | aS6)
}

// a64AluOp is the A64 opcode (64-bit form) of a BPF ALU operation.
func a64AluOp(o op) uint32 {
	switch o {
	case opAdd64K, opAdd64X, opAdd32K, opAdd32X:
		return a64Add
	case opSub64K, opSub64X, opSub32K, opSub32X:
		return a64Sub
	case opOr64K, opOr64X, opOr32K, opOr32X:
		return a64Orr
	case opAnd64K, opAnd64X, opAnd32K, opAnd32X:
		return a64And
	case opXor64K, opXor64X, opXor32K, opXor32X:
		return a64Eor
	case opMul64K, opMul64X, opMul32K, opMul32X:
		return a64Mul
	case opLsh64X, opLsh32X:
		return a64Lslv
	case opRsh64X, opRsh32X:
		return a64Lsrv
	}
	return a64Asrv
}

// access leaves in S2 the buffer and in S1 the offset of the load or store
// at pc: without a check when provenIn proved it inside a region (the
// region's buffer at the pointer's low 32 bits plus off, after a check of
// the Runner's collection for global data, as on amd64), else through
// check.
func (c *arm64Compiler) access(pc int, bpfBase uint8, off, n int32, write bool) {
	rg := c.proven[pc]
	if rg == 0 {
		c.check(pc, bpfBase, off, n, write)
		return
	}
	c.nproven++
	base := arm64Regs[bpfBase&15%11]
	if rg != regionPacket {
		c.movImm(aS1, uint64(uintptrOf(c.env.coll)))
		c.cmpField(aCtx, offColl, aS1)
		c.slowIf(aNE, pc)
	}
	if rg == regionPacket {
		c.ldr(aS2, aCtx, offPktBuf)
	} else {
		c.ldr(aS2, aCtx, offRegions)
		c.ldr(aS2, aS2, rg*regionSize+offRegionBuf)
	}
	c.rrr(a64Orr&^a64W, aS1, aZR, base) // the offset: low 32 bits
	switch {
	case off >= 0 && off < 4096:
		c.w(0x91000000 | uint32(off)<<10 | aS1<<5 | aS1)
	case off < 0 && off > -4096:
		c.w(0xd1000000 | uint32(-off)<<10 | aS1<<5 | aS1)
	default:
		c.movImm(aS3, uint64(int64(off)))
		c.rrr(a64Add, aS1, aS1, aS3)
	}
}

// check emits the region check of an n-byte access at reg(base)+off, as the
// amd64 backend's (the same rules), and leaves the buffer in S2 and the
// offset in S1.
func (c *arm64Compiler) check(pc int, bpfBase uint8, off, n int32, write bool) {
	c.checkIn(pc, bpfBase, off, n, write, guessRegion(bpfBase))
}

// checkIn is check with the region guessed given.
func (c *arm64Compiler) checkIn(pc int, bpfBase uint8, off, n int32, write bool, guess int32) {
	base := arm64Regs[bpfBase&15%11]
	hi := offRegionHi
	if write {
		hi = offRegionWhi
	}
	switch {
	case off >= 0 && off < 4096:
		c.w(0x91000000 | uint32(off)<<10 | base<<5 | aS1)
	case off < 0 && off > -4096:
		c.w(0xd1000000 | uint32(-off)<<10 | base<<5 | aS1)
	default:
		c.movImm(aS3, uint64(int64(off)))
		c.rrr(a64Add, aS1, base, aS3)
	}
	c.bfm(0xd3400000, aS2, aS1, 32, 63)          // lsr x10, x9, #32
	c.w(0xf100001f | uint32(guess)<<10 | aS2<<5) // cmp x10, #guess
	other := c.branch(aNE)
	// The guessed region's entry: the packet's copy in jitState (the
	// burst loop changes it per frame), the stack's in the table.
	tab, field := uint32(aS2), func(off int32) int32 { return guess*regionSize + off }
	if guess == regionPacket {
		tab, field = aCtx, pktField
	} else {
		c.ldr(aS2, aCtx, offRegions)
	}
	c.rrr(a64Orr&^a64W, aS1, aZR, aS1) // the offset: low 32 bits
	c.ldr(aS3, tab, field(offRegionLo))
	c.rrr(0xeb00001f, 0, aS1, aS3) // cmp x9, x11
	c.slowIf(aLO, pc)
	c.w(0x91000000 | uint32(n)<<10 | aS1<<5 | aS4)
	c.ldr(aS3, tab, field(hi))
	c.rrr(0xeb00001f, 0, aS4, aS3)
	c.slowIf(aHI, pc)
	c.ldr(aS2, tab, field(offRegionBuf))
	c.generic = append(c.generic, a64Generic{from: other.pos, resume: len(c.b), pc: pc, n: n, hi: hi})
	c.jumpsFixOther(other)
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
	c.ldr(aS3, aCtx, offRegionsLen)
	c.rrr(0xeb00001f, 0, aS2, aS3)
	c.slowIf(aHS, g.pc)
	c.movImm(aS3, uint64(regionSize))
	c.rrr(a64Mul, aS2, aS2, aS3)
	c.ldr(aS3, aCtx, offRegions)
	c.rrr(a64Add, aS2, aS2, aS3)
	c.rrr(a64Orr&^a64W, aS1, aZR, aS1)
	c.ldr(aS3, aS2, offRegionLo)
	c.rrr(0xeb00001f, 0, aS1, aS3)
	c.slowIf(aLO, g.pc)
	c.w(0x91000000 | uint32(g.n)<<10 | aS1<<5 | aS4)
	c.ldr(aS3, aS2, g.hi)
	c.rrr(0xeb00001f, 0, aS4, aS3)
	c.slowIf(aHI, g.pc)
	c.ldr(aS2, aS2, offRegionBuf)
	b := c.branch(aAL)
	c.patch(b, g.resume)
}

func (c *arm64Compiler) condJump(pc int, in insn, d, s uint32) {
	idx := int(in.op - opJEQ64K)
	is64 := idx < 22
	kind := idx % 22 / 2
	isX := idx%2 == 1
	m := s
	if !isX {
		v := uint64(in.imm)
		if !is64 {
			v = uint64(uint32(in.imm))
		}
		c.movImm(aS3, v)
		m = aS3
	}
	op := uint32(0xeb00001f) // cmp (subs xzr)
	if kind == 3 {
		op = 0xea00001f // tst (ands xzr)
	}
	if !is64 {
		op &^= a64W
	}
	c.rrr(op, 0, d, m)
	c.jump(pc, in, arm64JumpCC[kind])
}

// jump branches to in.off on cond, charging the budget on a backward jump
// as the interpreter does (see backJump).
func (c *arm64Compiler) jump(pc int, in insn, cond uint32) {
	target := int(in.off)
	if in.back == 0 {
		c.jumpTo(cond, target)
		return
	}
	at, charge := backJump(pc, target)
	skip := -1
	if cond != aAL {
		c.w(0x54000000 | (cond ^ 1)) // b.!cond skip, patched below
		skip = len(c.b) - 4
	}
	c.ldr(aS1, aCtx, offBudget)
	if charge < 4096 {
		c.w(0xf1000000 | uint32(charge)<<10 | aS1<<5 | aS1) // subs x9, x9, #charge
	} else {
		if charge > math.MaxInt32 {
			charge = math.MaxInt32
		}
		c.movImm(aS3, uint64(charge))
		c.rrr(0xeb000000, aS1, aS1, aS3) // subs x9, x9, x11
	}
	c.str(aS1, aCtx, offBudget)
	c.slowIf(aMI, at)
	c.jumpTo(aAL, target)
	if skip >= 0 {
		c.patch(a64Fixup{pos: skip, cond: true}, len(c.b))
	}
}
