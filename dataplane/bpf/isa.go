package bpf

import "encoding/binary"

// Raw instruction encoding (RFC 9669, "BPF Instruction Set Architecture"):
//
//	byte 0      opcode: class (bits 2:0), then for ALU/JMP source (bit 3) and
//	            operation (bits 7:4), for loads/stores size (bits 4:3) and mode
//	            (bits 7:5)
//	byte 1      dst register (bits 3:0), src register (bits 7:4)
//	bytes 2-3   signed 16-bit offset, little-endian
//	bytes 4-7   signed 32-bit immediate, little-endian
//
// lddw (opcode 0x18) takes two slots; the second holds the upper 32 bits of the
// immediate in bytes 12-15 and must have zeros elsewhere.
const insnSize = 8

// opcode is an instruction's first byte (RFC 9669 section 3):
//
//	ALU, ALU64, JMP, JMP32:   7..4 operation | 3 source | 2..0 class
//	LD, LDX, ST, STX:         7..5 mode | 4..3 size | 2..0 class
//
// The constants below are its fields, each already in place, so that an
// opcode is their OR (classALU64 | srcX | aluAdd). String prints the fields
// by name (opcode_string.go); TestOpcodeNames holds its tables to these
// constants.
type opcode uint8

// Instruction classes (RFC 9669 section 3.3): bits 2:0.
const (
	classLD    opcode = 0x00
	classLDX   opcode = 0x01
	classST    opcode = 0x02
	classSTX   opcode = 0x03
	classALU   opcode = 0x04
	classJMP   opcode = 0x05
	classJMP32 opcode = 0x06
	classALU64 opcode = 0x07
)

// Source bit of ALU and JMP opcodes (RFC 9669 section 3.3.1): bit 3.
const (
	srcK opcode = 0x00 // use the 32-bit immediate
	srcX opcode = 0x08 // use the src register
)

// ALU operations (RFC 9669 section 4.1): bits 7:4.
const (
	aluAdd  opcode = 0x00
	aluSub  opcode = 0x10
	aluMul  opcode = 0x20
	aluDiv  opcode = 0x30 // off 1: sdiv
	aluOr   opcode = 0x40
	aluAnd  opcode = 0x50
	aluLsh  opcode = 0x60
	aluRsh  opcode = 0x70
	aluNeg  opcode = 0x80
	aluMod  opcode = 0x90 // off 1: smod
	aluXor  opcode = 0xa0
	aluMov  opcode = 0xb0 // off 8/16/32: movsx
	aluArsh opcode = 0xc0
	aluEnd  opcode = 0xd0 // ALU: le (src bit 0) / be (src bit 1); ALU64: bswap
)

// Jump operations (RFC 9669 section 4.3): bits 7:4.
const (
	jmpJA   opcode = 0x00
	jmpJEQ  opcode = 0x10
	jmpJGT  opcode = 0x20
	jmpJGE  opcode = 0x30
	jmpJSET opcode = 0x40
	jmpJNE  opcode = 0x50
	jmpJSGT opcode = 0x60
	jmpJSGE opcode = 0x70
	jmpCall opcode = 0x80
	jmpExit opcode = 0x90
	jmpJLT  opcode = 0xa0
	jmpJLE  opcode = 0xb0
	jmpJSLT opcode = 0xc0
	jmpJSLE opcode = 0xd0
)

// Load/store sizes (RFC 9669 section 5.1): bits 4:3.
const (
	sizeW  opcode = 0x00
	sizeH  opcode = 0x08
	sizeB  opcode = 0x10
	sizeDW opcode = 0x18
)

// Load/store modes (RFC 9669 section 5.1): bits 7:5.
const (
	modeIMM    opcode = 0x00
	modeABS    opcode = 0x20
	modeIND    opcode = 0x40
	modeMEM    opcode = 0x60
	modeMEMSX  opcode = 0x80
	modeATOMIC opcode = 0xc0
)

// The fields of an opcode, each left in place (comparable with the
// constants above).
func (c opcode) class() opcode     { return c & 0x07 }
func (c opcode) source() opcode    { return c & 0x08 }
func (c opcode) operation() opcode { return c & 0xf0 }
func (c opcode) size() opcode      { return c & 0x18 }
func (c opcode) mode() opcode      { return c & 0xe0 }

// arith reports whether the opcode is of an ALU or jump class, whose
// fields are source and operation rather than size and mode.
func (c opcode) arith() bool {
	switch c.class() {
	case classALU, classALU64, classJMP, classJMP32:
		return true
	}
	return false
}

// Atomic operations, in the immediate of STX|ATOMIC (RFC 9669 section 5.3).
const (
	atomicAdd     = 0x00
	atomicOr      = 0x40
	atomicAnd     = 0x50
	atomicXor     = 0xa0
	atomicFetch   = 0x01
	atomicXchg    = 0xe0 | atomicFetch
	atomicCmpXchg = 0xf0 | atomicFetch
)

// Source register values of lddw and call with special meaning (Linux uapi bpf.h).
const (
	pseudoMapFD       = 1 // BPF_PSEUDO_MAP_FD: imm names a map
	pseudoMapValue    = 2 // BPF_PSEUDO_MAP_VALUE: map value address + offset
	pseudoBTFID       = 3 // BPF_PSEUDO_BTF_ID: kernel variable
	pseudoFunc        = 4 // BPF_PSEUDO_FUNC: address of a subprogram
	pseudoMapIdx      = 5 // BPF_PSEUDO_MAP_IDX
	pseudoMapIdxValue = 6 // BPF_PSEUDO_MAP_IDX_VALUE
	pseudoCall        = 1 // call: BPF_PSEUDO_CALL, pc-relative local call
	pseudoKfuncCall   = 2 // call: BPF_PSEUDO_KFUNC_CALL
)

// rawInsn is one 8-byte slot, unpacked.
type rawInsn struct {
	op  opcode
	dst uint8
	src uint8
	off int16
	imm int32
}

func decodeRaw(b []byte) rawInsn {
	return rawInsn{
		op:  opcode(b[0]),
		dst: b[1] & 0x0f,
		src: b[1] >> 4,
		off: int16(binary.LittleEndian.Uint16(b[2:4])),
		imm: int32(binary.LittleEndian.Uint32(b[4:8])),
	}
}

// op is an internal operation: one per opcode variant the interpreter
// distinguishes, so the run loop needs one switch per instruction. Each has
// its entry in opTable (optable.go), which says what it is: its encoding,
// operands, the fields the decoder checks, how it prints, and where the
// interpreter and the JIT backends run it.
//
// The order matters to the JIT backends, which compute from it: every
// 64-bit ALU operation comes before opAdd32K, K and X forms alternate (K
// first) from opAdd64K on, and the conditional jumps are the eleven
// conditions in the order below, K then X, first 64-bit then 32-bit.
type op uint8

const (
	opInvalid op = iota

	// 64-bit ALU. K forms carry the sign-extended immediate in insn.imm.
	opAdd64K
	opAdd64X
	opSub64K
	opSub64X
	opMul64K
	opMul64X
	opDiv64K
	opDiv64X
	opSDiv64K
	opSDiv64X
	opMod64K
	opMod64X
	opSMod64K
	opSMod64X
	opOr64K
	opOr64X
	opAnd64K
	opAnd64X
	opLsh64K
	opLsh64X
	opRsh64K
	opRsh64X
	opArsh64K
	opArsh64X
	opXor64K
	opXor64X
	opMov64K
	opMov64X
	opNeg64
	opMovSX8to64
	opMovSX16to64
	opMovSX32to64

	// 32-bit ALU: result zero-extended to 64 bits.
	opAdd32K
	opAdd32X
	opSub32K
	opSub32X
	opMul32K
	opMul32X
	opDiv32K
	opDiv32X
	opSDiv32K
	opSDiv32X
	opMod32K
	opMod32X
	opSMod32K
	opSMod32X
	opOr32K
	opOr32X
	opAnd32K
	opAnd32X
	opLsh32K
	opLsh32X
	opRsh32K
	opRsh32X
	opArsh32K
	opArsh32X
	opXor32K
	opXor32X
	opMov32K
	opMov32X
	opNeg32
	opMovSX8to32
	opMovSX16to32

	// Byte order. This host order is little-endian (as BPF programs for x86
	// and arm64 are): le16/le32 truncate, le64 is a no-op, be* and bswap* swap.
	opTrunc16
	opTrunc32
	opNop
	opSwap16
	opSwap32
	opSwap64

	// Loads of xdp_md.data, data_end and data_meta through a register that
	// holds the context on every path (see specialiseCtx); never decoded
	// from an opcode of their own. imm holds the packet region's tag.
	opLdCtxData
	opLdCtxDataEnd
	opLdCtxDataMeta

	// Jumps; insn.off holds the absolute target index.
	opJA
	opJEQ64K
	opJEQ64X
	opJGT64K
	opJGT64X
	opJGE64K
	opJGE64X
	opJSET64K
	opJSET64X
	opJNE64K
	opJNE64X
	opJSGT64K
	opJSGT64X
	opJSGE64K
	opJSGE64X
	opJLT64K
	opJLT64X
	opJLE64K
	opJLE64X
	opJSLT64K
	opJSLT64X
	opJSLE64K
	opJSLE64X
	opJEQ32K
	opJEQ32X
	opJGT32K
	opJGT32X
	opJGE32K
	opJGE32X
	opJSET32K
	opJSET32X
	opJNE32K
	opJNE32X
	opJSGT32K
	opJSGT32X
	opJSGE32K
	opJSGE32X
	opJLT32K
	opJLT32X
	opJLE32K
	opJLE32X
	opJSLT32K
	opJSLT32X
	opJSLE32K
	opJSLE32X

	// Loads and stores: address = reg[src or dst] + insn.off.
	opLdxB
	opLdxH
	opLdxW
	opLdxDW
	opLdxSB
	opLdxSH
	opLdxSW
	opStB
	opStH
	opStW
	opStDW
	opStxB
	opStxH
	opStxW
	opStxDW
	opAtomic32 // insn.imm: atomic operation
	opAtomic64

	// Wide loads.
	opLdImm64    // dst = imm
	opLdMap      // dst = handle of map number imm
	opLdMapValue // dst = pointer to global data imm>>32 (region), offset uint32(imm)
	opLdFunc     // dst = pointer to the subprogram at index imm

	// Calls.
	opCall      // helper number imm
	opTailCall  // bpf_tail_call, handled by the loop itself
	opCallLocal // local call to index imm
	opCallX     // call through dst: subprogram pointer or helper number
	opExit

	// The legacy packet loads (LD_ABS, LD_IND), which the kernel refuses
	// in XDP programs and so does the decoder: in the table only so that
	// they print as llvm-objdump prints them.
	opLdAbsW
	opLdAbsH
	opLdAbsB
	opLdIndW
	opLdIndH
	opLdIndB

	// numOps is the number of operations; opTable has an entry for each.
	numOps

	// opLast is the largest value an op can hold; no operation has it.
	opLast op = 255
)

// insn is the pre-decoded form the interpreter runs and the JIT compiles.
type insn struct {
	op  op
	dst uint8
	src uint8
	// back is set on jumps and calls whose target is at or before the
	// instruction: they charge the instruction budget.
	back uint8
	off  int32 // memory offset, or absolute jump target
	imm  int64
}
