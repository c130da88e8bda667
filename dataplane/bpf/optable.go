package bpf

import "fmt"

// The operation table: every eBPF operation xnic knows, described once.
// Decode and its field checks (decodeInsn), the interpreter's two levels
// (opInfo.slow), the disassembler (InsnText) and the JIT backends' contract
// (opInfo.jit, checked against each backend by TestOpTableJIT) all read it.
//
// Sources: RFC 9669 ("BPF Instruction Set Architecture"), section 3 for the
// encoding and the opcode byte, 4 for arithmetic and jumps, 5 for loads,
// stores and atomics, appendix A for the list of opcodes; the kernel's
// verifier (kernel/bpf/verifier.c: check_alu_op, do_check's JMP, LDX, ST and
// STX cases, check_cond_jmp_op, check_ld_imm, resolve_pseudo_ldimm64) for
// which fields an instruction must leave zero ("uses reserved fields"); LLVM's
// BPF instruction printer (the syntax of llvm-objdump -d) for the text.

// form is an operation's operand layout: which fields it reads, which the
// kernel requires to be zero, and how it prints.
type form uint8

const (
	formNone   form = iota
	formALUK        // dst op= imm
	formALUX        // dst op= src
	formDivK        // dst op= imm, off 1 for the signed form
	formDivX        // dst op= src, off 1 for the signed form
	formNeg         // dst = -dst
	formMovSX       // dst = (sN) src, N in off
	formEnd         // dst = le/be/bswap N dst, N in imm
	formJA          // goto off
	formJA32        // gotol imm (JMP32 class)
	formJmpK        // if dst op imm goto off
	formJmpX        // if dst op src goto off
	formCall        // call imm; src says what imm names
	formCallX       // call the subprogram or helper in dst (xnic and ubpf)
	formExit        // exit
	formLdx         // dst = *(size *)(src + off)
	formSt          // *(size *)(dst + off) = imm
	formStx         // *(size *)(dst + off) = src
	formAtomic      // atomic read-modify-write of *(size *)(dst + off), op in imm
	formLddw        // dst = 64-bit immediate over two slots; src says what it names
	formCtx         // a specialised context load (derived from formLdx, never decoded)
	formLegacy      // LD_ABS/LD_IND: refused in XDP
)

// field is a set of an instruction's fields.
type field uint8

const (
	fDst field = 1 << iota
	fSrc
	fOff
	fImm
)

func (f field) String() string {
	switch f {
	case fDst:
		return "dst"
	case fSrc:
		return "src"
	case fOff:
		return "off"
	case fImm:
		return "imm"
	}
	return "fields"
}

// formInfo is what a form implies for every operation of it.
type formInfo struct {
	// zero are the fields the kernel's verifier requires to be zero (its
	// "uses reserved fields" refusals), less the one that selects among
	// operations sharing an opcode (sel).
	zero field
	// sel is the field that tells apart operations with the same opcode
	// byte (off for sdiv/smod and movsx, imm for byte swaps and atomics,
	// src for calls and lddw), or 0.
	sel field
	// writes: the operation writes dst, so dst may not be r10.
	writes bool
}

var forms = [...]formInfo{
	formALUK:   {zero: fSrc | fOff, writes: true},
	formALUX:   {zero: fImm | fOff, writes: true},
	formDivK:   {zero: fSrc, sel: fOff, writes: true},
	formDivX:   {zero: fImm, sel: fOff, writes: true},
	formNeg:    {zero: fSrc | fOff | fImm, writes: true},
	formMovSX:  {zero: fImm, sel: fOff, writes: true},
	formEnd:    {zero: fSrc | fOff, sel: fImm, writes: true},
	formJA:     {zero: fDst | fSrc | fImm},
	formJA32:   {zero: fDst | fSrc | fOff},
	formJmpK:   {zero: fSrc},
	formJmpX:   {zero: fImm},
	formCall:   {zero: fDst | fOff, sel: fSrc},
	formCallX:  {},
	formExit:   {zero: fDst | fSrc | fImm},
	formLdx:    {zero: fImm, writes: true},
	formSt:     {zero: fSrc},
	formStx:    {zero: fImm},
	formAtomic: {}, // imm: one of atomicOps
	formLddw:   {zero: fOff, sel: fSrc, writes: true},
	formCtx:    {writes: true},
	formLegacy: {},
}

// immRule is how decode stores a K operand in insn.imm.
type immRule uint8

const (
	immSext  immRule = iota // sign-extended to 64 bits (RFC 9669 section 4.1)
	immZext                 // 32-bit operations: the immediate's 32 bits, zero-extended
	immShift                // shift counts: masked to the width (RFC 9669 section 4.1)
)

// jitPath is what each JIT backend does with an operation.
type jitPath uint8

const (
	jitNone   jitPath = iota // never in a decoded program
	jitNative                // compiled to native code (its fault cases exit to the slow path)
	jitSlow                  // always exits to the interpreter's slow path
)

// opInfo describes one operation.
type opInfo struct {
	name string // for messages and tests: "add64 K", "ldxw"; unique
	// code is the opcode byte (RFC 9669 section 3): class in bits 2:0,
	// then source and operation (ALU, JMP) or size and mode (loads and
	// stores).
	code opcode
	form form
	// key is the value of the form's sel field that picks this operation
	// (off 1 for sdiv, imm 16 for be16, src 1 for a local call, ...).
	key int32
	// width is the operand width in bits (ALU, jumps, the value swapped) or
	// the access size in bytes (loads, stores, atomics).
	width  uint8
	signed bool // signed division, compare, sign-extending load or move
	// sym is the operator or name llvm-objdump prints: "+=", "s>", "be".
	sym string
	imm immRule
	// slow: the interpreter runs it only on its slow level (helpers,
	// calls, atomics, division and shifts by a register, which need fixed
	// registers on amd64 and would make the fast loop spill).
	slow bool
	jit  jitPath
}

// alu, jmp and mem spell out the table's rows, one call per row, with the
// fields every row of their kind shares (all compiled natively by the JIT;
// 32-bit K jumps compare the immediate's 32 bits, zero-extended).
func alu(name string, code opcode, f form, width uint8, sym string, imm immRule, slow bool) opInfo {
	return opInfo{name: name, code: code, form: f, width: width, sym: sym, imm: imm, slow: slow, jit: jitNative}
}

func jmp(name string, code opcode, f form, width uint8, signed bool, sym string) opInfo {
	imm := immSext
	if width == 32 && f == formJmpK {
		imm = immZext
	}
	return opInfo{name: name, code: code, form: f, width: width, signed: signed, sym: sym, imm: imm, jit: jitNative}
}

func mem(name string, code opcode, f form, size uint8, signed bool) opInfo {
	return opInfo{name: name, code: code, form: f, width: size, signed: signed, jit: jitNative}
}

const (
	a64 = classALU64
	a32 = classALU
	j64 = classJMP
	j32 = classJMP32
)

// opTable is indexed by op.
var opTable = [numOps]opInfo{
	opAdd64K:      alu("add64 K", a64|srcK|aluAdd, formALUK, 64, "+=", immSext, false),
	opAdd64X:      alu("add64 X", a64|srcX|aluAdd, formALUX, 64, "+=", immSext, false),
	opSub64K:      alu("sub64 K", a64|srcK|aluSub, formALUK, 64, "-=", immSext, false),
	opSub64X:      alu("sub64 X", a64|srcX|aluSub, formALUX, 64, "-=", immSext, false),
	opMul64K:      alu("mul64 K", a64|srcK|aluMul, formALUK, 64, "*=", immSext, false),
	opMul64X:      alu("mul64 X", a64|srcX|aluMul, formALUX, 64, "*=", immSext, false),
	opDiv64K:      alu("div64 K", a64|srcK|aluDiv, formDivK, 64, "/=", immSext, true),
	opDiv64X:      alu("div64 X", a64|srcX|aluDiv, formDivX, 64, "/=", immSext, true),
	opSDiv64K:     signedDiv(alu("sdiv64 K", a64|srcK|aluDiv, formDivK, 64, "s/=", immSext, true)),
	opSDiv64X:     signedDiv(alu("sdiv64 X", a64|srcX|aluDiv, formDivX, 64, "s/=", immSext, true)),
	opMod64K:      alu("mod64 K", a64|srcK|aluMod, formDivK, 64, "%=", immSext, true),
	opMod64X:      alu("mod64 X", a64|srcX|aluMod, formDivX, 64, "%=", immSext, true),
	opSMod64K:     signedDiv(alu("smod64 K", a64|srcK|aluMod, formDivK, 64, "s%=", immSext, true)),
	opSMod64X:     signedDiv(alu("smod64 X", a64|srcX|aluMod, formDivX, 64, "s%=", immSext, true)),
	opOr64K:       alu("or64 K", a64|srcK|aluOr, formALUK, 64, "|=", immSext, false),
	opOr64X:       alu("or64 X", a64|srcX|aluOr, formALUX, 64, "|=", immSext, false),
	opAnd64K:      alu("and64 K", a64|srcK|aluAnd, formALUK, 64, "&=", immSext, false),
	opAnd64X:      alu("and64 X", a64|srcX|aluAnd, formALUX, 64, "&=", immSext, false),
	opLsh64K:      alu("lsh64 K", a64|srcK|aluLsh, formALUK, 64, "<<=", immShift, false),
	opLsh64X:      alu("lsh64 X", a64|srcX|aluLsh, formALUX, 64, "<<=", immSext, true),
	opRsh64K:      alu("rsh64 K", a64|srcK|aluRsh, formALUK, 64, ">>=", immShift, false),
	opRsh64X:      alu("rsh64 X", a64|srcX|aluRsh, formALUX, 64, ">>=", immSext, true),
	opArsh64K:     alu("arsh64 K", a64|srcK|aluArsh, formALUK, 64, "s>>=", immShift, false),
	opArsh64X:     alu("arsh64 X", a64|srcX|aluArsh, formALUX, 64, "s>>=", immSext, true),
	opXor64K:      alu("xor64 K", a64|srcK|aluXor, formALUK, 64, "^=", immSext, false),
	opXor64X:      alu("xor64 X", a64|srcX|aluXor, formALUX, 64, "^=", immSext, false),
	opMov64K:      alu("mov64 K", a64|srcK|aluMov, formALUK, 64, "=", immSext, false),
	opMov64X:      alu("mov64 X", a64|srcX|aluMov, formMovSX, 64, "=", immSext, false),
	opNeg64:       alu("neg64", a64|srcK|aluNeg, formNeg, 64, "-", immSext, false),
	opMovSX8to64:  withKey(alu("movsx8 64", a64|srcX|aluMov, formMovSX, 64, "=", immSext, false), 8),
	opMovSX16to64: withKey(alu("movsx16 64", a64|srcX|aluMov, formMovSX, 64, "=", immSext, false), 16),
	opMovSX32to64: withKey(alu("movsx32 64", a64|srcX|aluMov, formMovSX, 64, "=", immSext, false), 32),

	opAdd32K:      alu("add32 K", a32|srcK|aluAdd, formALUK, 32, "+=", immZext, false),
	opAdd32X:      alu("add32 X", a32|srcX|aluAdd, formALUX, 32, "+=", immSext, false),
	opSub32K:      alu("sub32 K", a32|srcK|aluSub, formALUK, 32, "-=", immZext, false),
	opSub32X:      alu("sub32 X", a32|srcX|aluSub, formALUX, 32, "-=", immSext, false),
	opMul32K:      alu("mul32 K", a32|srcK|aluMul, formALUK, 32, "*=", immZext, false),
	opMul32X:      alu("mul32 X", a32|srcX|aluMul, formALUX, 32, "*=", immSext, false),
	opDiv32K:      alu("div32 K", a32|srcK|aluDiv, formDivK, 32, "/=", immZext, true),
	opDiv32X:      alu("div32 X", a32|srcX|aluDiv, formDivX, 32, "/=", immSext, true),
	opSDiv32K:     signedDiv(alu("sdiv32 K", a32|srcK|aluDiv, formDivK, 32, "s/=", immSext, true)),
	opSDiv32X:     signedDiv(alu("sdiv32 X", a32|srcX|aluDiv, formDivX, 32, "s/=", immSext, true)),
	opMod32K:      alu("mod32 K", a32|srcK|aluMod, formDivK, 32, "%=", immZext, true),
	opMod32X:      alu("mod32 X", a32|srcX|aluMod, formDivX, 32, "%=", immSext, true),
	opSMod32K:     signedDiv(alu("smod32 K", a32|srcK|aluMod, formDivK, 32, "s%=", immSext, true)),
	opSMod32X:     signedDiv(alu("smod32 X", a32|srcX|aluMod, formDivX, 32, "s%=", immSext, true)),
	opOr32K:       alu("or32 K", a32|srcK|aluOr, formALUK, 32, "|=", immZext, false),
	opOr32X:       alu("or32 X", a32|srcX|aluOr, formALUX, 32, "|=", immSext, false),
	opAnd32K:      alu("and32 K", a32|srcK|aluAnd, formALUK, 32, "&=", immZext, false),
	opAnd32X:      alu("and32 X", a32|srcX|aluAnd, formALUX, 32, "&=", immSext, false),
	opLsh32K:      alu("lsh32 K", a32|srcK|aluLsh, formALUK, 32, "<<=", immShift, false),
	opLsh32X:      alu("lsh32 X", a32|srcX|aluLsh, formALUX, 32, "<<=", immSext, true),
	opRsh32K:      alu("rsh32 K", a32|srcK|aluRsh, formALUK, 32, ">>=", immShift, false),
	opRsh32X:      alu("rsh32 X", a32|srcX|aluRsh, formALUX, 32, ">>=", immSext, true),
	opArsh32K:     alu("arsh32 K", a32|srcK|aluArsh, formALUK, 32, "s>>=", immShift, false),
	opArsh32X:     alu("arsh32 X", a32|srcX|aluArsh, formALUX, 32, "s>>=", immSext, true),
	opXor32K:      alu("xor32 K", a32|srcK|aluXor, formALUK, 32, "^=", immZext, false),
	opXor32X:      alu("xor32 X", a32|srcX|aluXor, formALUX, 32, "^=", immSext, false),
	opMov32K:      alu("mov32 K", a32|srcK|aluMov, formALUK, 32, "=", immZext, false),
	opMov32X:      alu("mov32 X", a32|srcX|aluMov, formMovSX, 32, "=", immSext, false),
	opNeg32:       alu("neg32", a32|srcK|aluNeg, formNeg, 32, "-", immSext, false),
	opMovSX8to32:  withKey(alu("movsx8 32", a32|srcX|aluMov, formMovSX, 32, "=", immSext, false), 8),
	opMovSX16to32: withKey(alu("movsx16 32", a32|srcX|aluMov, formMovSX, 32, "=", immSext, false), 16),

	// Byte order (RFC 9669 section 4.2): imm is the width. ALU "le" (src
	// bit 0) and "be" (src bit 1) convert from host order, which is
	// little-endian here; ALU64 with src bit 0 is the unconditional bswap.
	opTrunc16: withKey(alu("le16", a32|srcK|aluEnd, formEnd, 16, "le", immSext, false), 16),
	opTrunc32: withKey(alu("le32", a32|srcK|aluEnd, formEnd, 32, "le", immSext, false), 32),
	opNop:     withKey(alu("le64", a32|srcK|aluEnd, formEnd, 64, "le", immSext, false), 64),
	opSwap16:  withKey(alu("be16", a32|srcX|aluEnd, formEnd, 16, "be", immSext, false), 16),
	opSwap32:  withKey(alu("be32", a32|srcX|aluEnd, formEnd, 32, "be", immSext, false), 32),
	opSwap64:  withKey(alu("be64", a32|srcX|aluEnd, formEnd, 64, "be", immSext, false), 64),

	opLdCtxData:     {name: "ctx data", code: classLDX | modeMEM | sizeW, form: formCtx, width: 4, jit: jitNative},
	opLdCtxDataEnd:  {name: "ctx data_end", code: classLDX | modeMEM | sizeW, form: formCtx, width: 4, jit: jitNative},
	opLdCtxDataMeta: {name: "ctx data_meta", code: classLDX | modeMEM | sizeW, form: formCtx, width: 4, jit: jitNative},

	opJA:      {name: "ja", code: j64 | jmpJA, form: formJA, jit: jitNative},
	opJEQ64K:  jmp("jeq64 K", j64|srcK|jmpJEQ, formJmpK, 64, false, "=="),
	opJEQ64X:  jmp("jeq64 X", j64|srcX|jmpJEQ, formJmpX, 64, false, "=="),
	opJGT64K:  jmp("jgt64 K", j64|srcK|jmpJGT, formJmpK, 64, false, ">"),
	opJGT64X:  jmp("jgt64 X", j64|srcX|jmpJGT, formJmpX, 64, false, ">"),
	opJGE64K:  jmp("jge64 K", j64|srcK|jmpJGE, formJmpK, 64, false, ">="),
	opJGE64X:  jmp("jge64 X", j64|srcX|jmpJGE, formJmpX, 64, false, ">="),
	opJSET64K: jmp("jset64 K", j64|srcK|jmpJSET, formJmpK, 64, false, "&"),
	opJSET64X: jmp("jset64 X", j64|srcX|jmpJSET, formJmpX, 64, false, "&"),
	opJNE64K:  jmp("jne64 K", j64|srcK|jmpJNE, formJmpK, 64, false, "!="),
	opJNE64X:  jmp("jne64 X", j64|srcX|jmpJNE, formJmpX, 64, false, "!="),
	opJSGT64K: jmp("jsgt64 K", j64|srcK|jmpJSGT, formJmpK, 64, true, "s>"),
	opJSGT64X: jmp("jsgt64 X", j64|srcX|jmpJSGT, formJmpX, 64, true, "s>"),
	opJSGE64K: jmp("jsge64 K", j64|srcK|jmpJSGE, formJmpK, 64, true, "s>="),
	opJSGE64X: jmp("jsge64 X", j64|srcX|jmpJSGE, formJmpX, 64, true, "s>="),
	opJLT64K:  jmp("jlt64 K", j64|srcK|jmpJLT, formJmpK, 64, false, "<"),
	opJLT64X:  jmp("jlt64 X", j64|srcX|jmpJLT, formJmpX, 64, false, "<"),
	opJLE64K:  jmp("jle64 K", j64|srcK|jmpJLE, formJmpK, 64, false, "<="),
	opJLE64X:  jmp("jle64 X", j64|srcX|jmpJLE, formJmpX, 64, false, "<="),
	opJSLT64K: jmp("jslt64 K", j64|srcK|jmpJSLT, formJmpK, 64, true, "s<"),
	opJSLT64X: jmp("jslt64 X", j64|srcX|jmpJSLT, formJmpX, 64, true, "s<"),
	opJSLE64K: jmp("jsle64 K", j64|srcK|jmpJSLE, formJmpK, 64, true, "s<="),
	opJSLE64X: jmp("jsle64 X", j64|srcX|jmpJSLE, formJmpX, 64, true, "s<="),
	opJEQ32K:  jmp("jeq32 K", j32|srcK|jmpJEQ, formJmpK, 32, false, "=="),
	opJEQ32X:  jmp("jeq32 X", j32|srcX|jmpJEQ, formJmpX, 32, false, "=="),
	opJGT32K:  jmp("jgt32 K", j32|srcK|jmpJGT, formJmpK, 32, false, ">"),
	opJGT32X:  jmp("jgt32 X", j32|srcX|jmpJGT, formJmpX, 32, false, ">"),
	opJGE32K:  jmp("jge32 K", j32|srcK|jmpJGE, formJmpK, 32, false, ">="),
	opJGE32X:  jmp("jge32 X", j32|srcX|jmpJGE, formJmpX, 32, false, ">="),
	opJSET32K: jmp("jset32 K", j32|srcK|jmpJSET, formJmpK, 32, false, "&"),
	opJSET32X: jmp("jset32 X", j32|srcX|jmpJSET, formJmpX, 32, false, "&"),
	opJNE32K:  jmp("jne32 K", j32|srcK|jmpJNE, formJmpK, 32, false, "!="),
	opJNE32X:  jmp("jne32 X", j32|srcX|jmpJNE, formJmpX, 32, false, "!="),
	opJSGT32K: jmp("jsgt32 K", j32|srcK|jmpJSGT, formJmpK, 32, true, "s>"),
	opJSGT32X: jmp("jsgt32 X", j32|srcX|jmpJSGT, formJmpX, 32, true, "s>"),
	opJSGE32K: jmp("jsge32 K", j32|srcK|jmpJSGE, formJmpK, 32, true, "s>="),
	opJSGE32X: jmp("jsge32 X", j32|srcX|jmpJSGE, formJmpX, 32, true, "s>="),
	opJLT32K:  jmp("jlt32 K", j32|srcK|jmpJLT, formJmpK, 32, false, "<"),
	opJLT32X:  jmp("jlt32 X", j32|srcX|jmpJLT, formJmpX, 32, false, "<"),
	opJLE32K:  jmp("jle32 K", j32|srcK|jmpJLE, formJmpK, 32, false, "<="),
	opJLE32X:  jmp("jle32 X", j32|srcX|jmpJLE, formJmpX, 32, false, "<="),
	opJSLT32K: jmp("jslt32 K", j32|srcK|jmpJSLT, formJmpK, 32, true, "s<"),
	opJSLT32X: jmp("jslt32 X", j32|srcX|jmpJSLT, formJmpX, 32, true, "s<"),
	opJSLE32K: jmp("jsle32 K", j32|srcK|jmpJSLE, formJmpK, 32, true, "s<="),
	opJSLE32X: jmp("jsle32 X", j32|srcX|jmpJSLE, formJmpX, 32, true, "s<="),

	opLdxB:     mem("ldxb", classLDX|modeMEM|sizeB, formLdx, 1, false),
	opLdxH:     mem("ldxh", classLDX|modeMEM|sizeH, formLdx, 2, false),
	opLdxW:     mem("ldxw", classLDX|modeMEM|sizeW, formLdx, 4, false),
	opLdxDW:    mem("ldxdw", classLDX|modeMEM|sizeDW, formLdx, 8, false),
	opLdxSB:    mem("ldxsb", classLDX|modeMEMSX|sizeB, formLdx, 1, true),
	opLdxSH:    mem("ldxsh", classLDX|modeMEMSX|sizeH, formLdx, 2, true),
	opLdxSW:    mem("ldxsw", classLDX|modeMEMSX|sizeW, formLdx, 4, true),
	opStB:      mem("stb", classST|modeMEM|sizeB, formSt, 1, false),
	opStH:      mem("sth", classST|modeMEM|sizeH, formSt, 2, false),
	opStW:      mem("stw", classST|modeMEM|sizeW, formSt, 4, false),
	opStDW:     mem("stdw", classST|modeMEM|sizeDW, formSt, 8, false),
	opStxB:     mem("stxb", classSTX|modeMEM|sizeB, formStx, 1, false),
	opStxH:     mem("stxh", classSTX|modeMEM|sizeH, formStx, 2, false),
	opStxW:     mem("stxw", classSTX|modeMEM|sizeW, formStx, 4, false),
	opStxDW:    mem("stxdw", classSTX|modeMEM|sizeDW, formStx, 8, false),
	opAtomic32: slowOp(mem("atomic32", classSTX|modeATOMIC|sizeW, formAtomic, 4, false), jitNative),
	opAtomic64: slowOp(mem("atomic64", classSTX|modeATOMIC|sizeDW, formAtomic, 8, false), jitNative),

	// lddw (RFC 9669 section 5.4); src 1 and 5 name a map, 2 and 6 a map
	// value, 4 a subprogram; 3 (a kernel variable) has no meaning here.
	opLdImm64:    {name: "lddw", code: classLD | modeIMM | sizeDW, form: formLddw, key: 0, width: 64, jit: jitNative},
	opLdMap:      {name: "lddw map", code: classLD | modeIMM | sizeDW, form: formLddw, key: pseudoMapFD, width: 64, jit: jitNative},
	opLdMapValue: {name: "lddw map value", code: classLD | modeIMM | sizeDW, form: formLddw, key: pseudoMapValue, width: 64, jit: jitNative},
	opLdFunc:     {name: "lddw func", code: classLD | modeIMM | sizeDW, form: formLddw, key: pseudoFunc, width: 64, jit: jitNative},

	// A local call (opCallLocal) is native unless its program makes tail calls
	// (nativeCalls), whose frames would span programs: then slow.
	opCall:      {name: "call", code: j64 | jmpCall, form: formCall, key: 0, slow: true, jit: jitSlow},
	opTailCall:  {name: "tail call", code: j64 | jmpCall, form: formCall, key: 0, slow: true, jit: jitSlow},
	opCallLocal: {name: "call local", code: j64 | jmpCall, form: formCall, key: pseudoCall, slow: true, jit: jitNative},
	opCallX:     {name: "callx", code: j64 | srcX | jmpCall, form: formCallX, slow: true, jit: jitSlow},
	opExit:      {name: "exit", code: j64 | jmpExit, form: formExit, jit: jitNative},

	opLdAbsW: {name: "ldabsw", code: classLD | modeABS | sizeW, form: formLegacy, width: 4},
	opLdAbsH: {name: "ldabsh", code: classLD | modeABS | sizeH, form: formLegacy, width: 2},
	opLdAbsB: {name: "ldabsb", code: classLD | modeABS | sizeB, form: formLegacy, width: 1},
	opLdIndW: {name: "ldindw", code: classLD | modeIND | sizeW, form: formLegacy, width: 4},
	opLdIndH: {name: "ldindh", code: classLD | modeIND | sizeH, form: formLegacy, width: 2},
	opLdIndB: {name: "ldindb", code: classLD | modeIND | sizeB, form: formLegacy, width: 1},
}

// Variants the table also decodes to an operation of another row: the
// second map and map-value encodings of lddw (BPF_PSEUDO_MAP_IDX and
// BPF_PSEUDO_MAP_IDX_VALUE, resolved as the first ones), and ja32.
var aliasInfo = []struct {
	info opInfo
	op   op
}{
	{opInfo{name: "lddw map idx", code: classLD | modeIMM | sizeDW, form: formLddw, key: pseudoMapIdx, width: 64}, opLdMap},
	{opInfo{name: "lddw map idx value", code: classLD | modeIMM | sizeDW, form: formLddw, key: pseudoMapIdxValue, width: 64}, opLdMapValue},
	// ja in the JMP32 class ("gotol", RFC 9669 section 4.3) takes its
	// offset from imm; decoded, the target is absolute as for ja.
	{opInfo{name: "ja32", code: j32 | jmpJA, form: formJA32}, opJA},
	// ALU64 with the END operation and src bit 0: the unconditional
	// byte swap (RFC 9669 section 4.2).
	{withKey(opInfo{name: "bswap16", code: a64 | srcK | aluEnd, form: formEnd, width: 16, sym: "bswap"}, 16), opSwap16},
	{withKey(opInfo{name: "bswap32", code: a64 | srcK | aluEnd, form: formEnd, width: 32, sym: "bswap"}, 32), opSwap32},
	{withKey(opInfo{name: "bswap64", code: a64 | srcK | aluEnd, form: formEnd, width: 64, sym: "bswap"}, 64), opSwap64},
	// A kfunc call (src 2) decodes to a helper call once kfunc.go has
	// resolved it; unresolved ones fail with ErrKfunc.
	{opInfo{name: "call kfunc", code: j64 | jmpCall, form: formCall, key: pseudoKfuncCall}, opCall},
}

func withKey(o opInfo, k int32) opInfo { o.key = k; return o }

// signedDiv marks sdiv and smod: off 1 (RFC 9669 section 4.1).
func signedDiv(o opInfo) opInfo { o.key, o.signed = 1, true; return o }

func slowOp(o opInfo, j jitPath) opInfo { o.slow, o.jit = true, j; return o }

// atomicOps are the operations STX|ATOMIC accepts in imm (RFC 9669
// section 5.3), with the names llvm-objdump prints.
var atomicOps = []struct {
	imm   int32
	name  string // atomic_fetch_<name>, or the function for xchg/cmpxchg
	sym   string // the operator of the non-fetching form
	fetch bool
}{
	{atomicAdd, "add", "+=", false},
	{atomicOr, "or", "|=", false},
	{atomicAnd, "and", "&=", false},
	{atomicXor, "xor", "^=", false},
	{atomicAdd | atomicFetch, "add", "", true},
	{atomicOr | atomicFetch, "or", "", true},
	{atomicAnd | atomicFetch, "and", "", true},
	{atomicXor | atomicFetch, "xor", "", true},
	{atomicXchg, "xchg", "", true},
	{atomicCmpXchg, "cmpxchg", "", true},
}

// decodable is one row the decoder matches: the op it yields and its info.
type decodable struct {
	op   op
	info *opInfo
}

// byCode lists, for each opcode byte, the operations encoded with it (more
// than one where a field selects among them).
var byCode = func() (t [256][]decodable) {
	for o := range opTable {
		in := &opTable[o]
		switch in.form {
		case formNone, formCtx:
			continue // derived, never decoded
		}
		if op(o) == opTailCall {
			continue // a call of helper 12, picked after the helper check
		}
		t[in.code] = append(t[in.code], decodable{op(o), in})
	}
	for i := range aliasInfo {
		a := &aliasInfo[i]
		// An alias runs as the operation it decodes to.
		a.info.slow, a.info.jit = opTable[a.op].slow, opTable[a.op].jit
		t[a.info.code] = append(t[a.info.code], decodable{a.op, &a.info})
	}
	return t
}()

// fieldValue is the value of one field of r.
func fieldValue(r rawInsn, f field) int32 {
	switch f {
	case fDst:
		return int32(r.dst)
	case fSrc:
		return int32(r.src)
	case fOff:
		return int32(r.off)
	case fImm:
		return r.imm
	}
	return 0
}

// lookupOp finds the operation r encodes, ignoring the reserved fields (the
// disassembler prints what the decoder refuses), or nil.
func lookupOp(r rawInsn) (op, *opInfo) {
	for _, d := range byCode[r.op] {
		sel := forms[d.info.form].sel
		if sel == 0 || fieldValue(r, sel) == d.info.key {
			return d.op, d.info
		}
	}
	return opInvalid, nil
}

// checkFields returns the first field of r that its operation requires to
// be zero and is not, or 0.
func checkFields(r rawInsn, in *opInfo) field {
	zero := forms[in.form].zero
	for f := fDst; f <= fImm; f <<= 1 {
		if zero&f != 0 && fieldValue(r, f) != 0 {
			return f
		}
	}
	return 0
}

// atomicOK reports whether imm is an atomic operation RFC 9669 defines.
func atomicOK(imm int32) bool {
	for _, a := range atomicOps {
		if a.imm == imm {
			return true
		}
	}
	return false
}

// String is the operation's name in opTable ("add64 K", "ldxw"), or the
// fused operation's (interp_fuse.go), or op(N) for a value with no row.
func (o op) String() string {
	if o < numOps && opTable[o].name != "" {
		return opTable[o].name
	}
	if f := fusedOf(o); f != nil {
		return f.name
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}
