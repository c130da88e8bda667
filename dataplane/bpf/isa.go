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

// Instruction classes (RFC 9669 section 3.3).
const (
	classLD    = 0x00
	classLDX   = 0x01
	classST    = 0x02
	classSTX   = 0x03
	classALU   = 0x04
	classJMP   = 0x05
	classJMP32 = 0x06
	classALU64 = 0x07
)

// Source bit of ALU and JMP opcodes.
const (
	srcK = 0x00 // use the 32-bit immediate
	srcX = 0x08 // use the src register
)

// ALU operations (bits 7:4).
const (
	aluAdd  = 0x00
	aluSub  = 0x10
	aluMul  = 0x20
	aluDiv  = 0x30 // off 1: sdiv
	aluOr   = 0x40
	aluAnd  = 0x50
	aluLsh  = 0x60
	aluRsh  = 0x70
	aluNeg  = 0x80
	aluMod  = 0x90 // off 1: smod
	aluXor  = 0xa0
	aluMov  = 0xb0 // off 8/16/32: movsx
	aluArsh = 0xc0
	aluEnd  = 0xd0 // ALU: le (src bit 0) / be (src bit 1); ALU64: bswap
)

// Jump operations (bits 7:4).
const (
	jmpJA   = 0x00
	jmpJEQ  = 0x10
	jmpJGT  = 0x20
	jmpJGE  = 0x30
	jmpJSET = 0x40
	jmpJNE  = 0x50
	jmpJSGT = 0x60
	jmpJSGE = 0x70
	jmpCall = 0x80
	jmpExit = 0x90
	jmpJLT  = 0xa0
	jmpJLE  = 0xb0
	jmpJSLT = 0xc0
	jmpJSLE = 0xd0
)

// Load/store sizes (bits 4:3) and modes (bits 7:5).
const (
	sizeW  = 0x00
	sizeH  = 0x08
	sizeB  = 0x10
	sizeDW = 0x18

	modeIMM    = 0x00
	modeABS    = 0x20
	modeIND    = 0x40
	modeMEM    = 0x60
	modeMEMSX  = 0x80
	modeATOMIC = 0xc0
)

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
	op  uint8
	dst uint8
	src uint8
	off int16
	imm int32
}

func decodeRaw(b []byte) rawInsn {
	return rawInsn{
		op:  b[0],
		dst: b[1] & 0x0f,
		src: b[1] >> 4,
		off: int16(binary.LittleEndian.Uint16(b[2:4])),
		imm: int32(binary.LittleEndian.Uint32(b[4:8])),
	}
}

// op is an internal operation: one per opcode variant the interpreter
// distinguishes, so the run loop needs one switch per instruction.
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

	// Loads of xdp_md.data, data_end and data_meta through r1 while r1 is
	// still the context (see specialiseCtx).
	opLdCtxData
	opLdCtxDataEnd
	opLdCtxDataMeta

	// Fused "A = *(u8 *)(P + K+1); A <<= 8; B = *(u8 *)(P + K); A |= B":
	// clang's byte-wise load of an unaligned little-endian u16. dst = A,
	// src = P, off = K+1 (the first load, which the slow path runs alone),
	// pdst = B.
	opLdxB16

	// The same group in the order clang also emits:
	// "B = *(u8 *)(P + K); A = *(u8 *)(P + K+1); A <<= 8; A |= B". dst = B
	// and off = K (the first load, which the slow path runs alone), pdst = A.
	opLdxB16L

	// Fused pair "dst = src; dst += imm" (the second slot is kept, for a
	// jump that would land on it, but never a target: see fuse).
	opMovAdd64

	// Fused packet bounds check "dst = src; dst += imm; if dst > x goto off"
	// (opMovAdd64 followed by a forward JGT64X on dst), and the same with
	// the move of pimm into pdst that clang puts before the jump
	// ("dst = src; dst += imm; pdst = pimm; if dst > x goto off"). The
	// slots after the first stay as they were.
	opBound
	opPBound

	// Fused "dst = *(u8 or u16 *)(src + off); if dst == / != imm goto t"
	// and the same with a move of pimm into pdst before the jump (the P
	// forms). Only forward jumps; the slots after the load stay as they
	// were, and the slow path runs the load alone. imm is the jump's
	// constant as a 64-bit value (the loaded value is zero-extended, so the
	// 32-bit and 64-bit jumps compare alike).
	opLdBJEQ
	opLdBJNE
	opLdHJEQ
	opLdHJNE
	opLdBPJEQ
	opLdBPJNE
	opLdHPJEQ
	opLdHPJNE

	// Fused "dst = *(size *)(src + off); dst += imm; *(size *)(src + off) =
	// dst": a counter update. DW with a 64-bit add, W with a 32-bit add
	// (opLdAddStW) or a 64-bit add (opLdAddStW64). The slow path runs the
	// load alone; a region the load may read but the store may not write
	// goes there too, so the fault names the store.
	opLdAddStDW
	opLdAddStW
	opLdAddStW64

	// Fused "dst = ctx->data_end; pdst = ctx->data" (opLdCtxEndData) and
	// "dst = ctx->data; pdst = ctx->data_end" (opLdCtxDataEnd2), both
	// already specialised (specialiseCtx); src and off are the first
	// load's, which the slow path runs alone.
	opLdCtxEndData
	opLdCtxDataEnd2

	// opLdxB16L followed by a forward "if A ==/!= imm goto t" on the u16
	// it loaded (A = pdst), and the P forms with a move of pimm into x
	// before the jump.
	opB16LJEQ
	opB16LJNE
	opB16LPJEQ
	opB16LPJNE

	// Fused map lookup, clang's "r2 = r10; r2 += imm; r1 = map pimm; call
	// bpf_map_lookup_elem; if r0 == 0 goto t" (six slots). It runs on the
	// slow path, as the call does; a fault names the call.
	opLookup

	// Fused "dst &= K; if dst ==/!= imm goto t" (the flag tests of
	// parsers), forward jumps only. K is in off: zero-extended for the
	// 32-bit and (the And32 forms, any jump width: the result fits 32 bits),
	// sign-extended for the 64-bit and (the And64 forms, 64-bit jumps
	// only). The P forms move pimm into pdst before the jump.
	opAnd32JEQ
	opAnd32JNE
	opAnd64JEQ
	opAnd64JNE
	opAnd32PJEQ
	opAnd32PJNE
	opAnd64PJEQ
	opAnd64PJNE
	// The same with "dst = src" in front: the and reads src (in the same
	// order as above).
	opMovAnd32JEQ
	opMovAnd32JNE
	opMovAnd64JEQ
	opMovAnd64JNE
	opMovAnd32PJEQ
	opMovAnd32PJNE
	opMovAnd64PJEQ
	opMovAnd64PJNE

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

	// Fused "dst' = imm; conditional jump": the same jumps in the same
	// order, with a move of insn.pimm into insn.pdst first.
	opPJEQ64K
	opPJEQ64X
	opPJGT64K
	opPJGT64X
	opPJGE64K
	opPJGE64X
	opPJSET64K
	opPJSET64X
	opPJNE64K
	opPJNE64X
	opPJSGT64K
	opPJSGT64X
	opPJSGE64K
	opPJSGE64X
	opPJLT64K
	opPJLT64X
	opPJLE64K
	opPJLE64X
	opPJSLT64K
	opPJSLT64X
	opPJSLE64K
	opPJSLE64X
	opPJEQ32K
	opPJEQ32X
	opPJGT32K
	opPJGT32X
	opPJGE32K
	opPJGE32X
	opPJSET32K
	opPJSET32X
	opPJNE32K
	opPJNE32X
	opPJSGT32K
	opPJSGT32X
	opPJSGE32K
	opPJSGE32X
	opPJLT32K
	opPJLT32X
	opPJLE32K
	opPJLE32X
	opPJSLT32K
	opPJSLT32X
	opPJSLE32K
	opPJSLE32X

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

	// Fused "dst = *(u16 *)(src + off); dst = be16 dst": a big-endian u16
	// field (the slow path runs the load alone; the swap keeps its slot).
	opLdxHBE
	// Fused "dst = imm; exit" (dst is r0; imm already extended as the move
	// did): the exit keeps its slot, which jumps may target.
	opMovExit

	// Two loads (or two stores) of the same size through the same pointer
	// register P with no other instruction between, checked as one span:
	// "A = *(P + off); B = *(P + off2)" (dst = A, src = P) and
	// "*(P + off) = A; *(P + off2) = B" (dst = P, src = A). dst, src and off
	// are the first instruction's (the slow path runs it alone); pdst = B,
	// imm = min(off, off2), x and pimm the two offsets past imm, t the
	// span's length. Loads need A != P.
	// Fused "dst <<= imm; dst |= src" (64-bit, dst != src): the joining
	// of byte-wise loads into wider values.
	opLshOr64
	// Fused "dst = src; dst >>= imm" (64-bit, dst != src): a part of a
	// value to store byte-wise.
	opMovRsh64

	opLdxHH
	opLdxWW
	opStxHH
	opStxWW

	// opLast is the largest value an op can hold; no operation has it.
	opLast op = 255
)

// insn is the pre-decoded form the interpreter runs: 32 bytes.
type insn struct {
	op  op
	dst uint8
	src uint8
	// back is set on jumps and calls whose target is at or before the
	// instruction: they charge the instruction budget.
	back uint8
	off  int32 // memory offset, or absolute jump target
	imm  int64
	// pimm and pdst: the move fused in front of an opP* jump.
	pimm uint32
	pdst uint8
	// x is the register a fused bounds check compares with (opBound).
	x uint8
	// t is the jump target of a fused load and jump (opLdBJEQ...).
	t int32
}
