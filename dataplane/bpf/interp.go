package bpf

import (
	"math/bits"
)

// exec runs p from pc, with r1, r2 and the frame pointer r10 given, until the
// frame it started in exits, and returns r0. On a fault it records it in r
// and returns 0; callers check r.faulted.
//
// Pointers are tagged: region number in the high 32 bits, offset in the low
// 32. A load or store resolves its address through the region table and
// checks the bounds of that one region, so no address can reach memory
// outside the regions whatever the program computes.
//
// The loop has two levels. The inner loop runs the common instructions (ALU,
// jumps, loads and stores that hit their region, wide loads, returns) and
// calls no function, so the compiler keeps its state in registers. Anything
// else (helpers, local calls, tail calls, atomics, context loads, faults,
// the end of the budget) leaves it for the outer switch, which redoes that
// one instruction on the slow path.
func (r *Runner) exec(p *Program, pc int, r1, r2, fp uint64) uint64 {
	base := r.depth
	if uint(base) >= uint(len(r.regs)) {
		r.setFault(p, pc, faultCallDepth, 0, 0)
		return 0
	}
	// The register file: one per nesting level of exec (a callback runs
	// in a deeper one), 256 entries so that an instruction's register
	// fields (uint8) index it with no mask or bounds check; decode allows
	// r0-r10 only. Helpers see its first 16 as an array.
	reg := &r.regs[base]
	clear(reg[:16])
	reg[1], reg[2], reg[10] = r1, r2, fp
	pc, p, done := r.step(p, pc, base, reg)
	if done {
		return reg[0]
	}
	return r.slow(p, pc, base, reg)
}

// slow runs the instruction at pc that fast left (see exec), then goes on
// with fast, in turn, until the frame exec started in exits.
func (r *Runner) slow(p *Program, pc, base int, reg *[256]uint64) uint64 {
	h := (*[16]uint64)(reg[:16])
	for first := true; ; first = false {
		if !first {
			var done bool
			pc, p, done = r.step(p, pc, base, reg)
			if done {
				return reg[0]
			}
		}
		code := p.code
		// Slow path: the instruction at pc.
		if uint(pc) >= uint(len(code)) {
			r.setFault(p, pc, faultNoPC, 0, 0)
			return 0
		}
		in := &code[pc]
		switch in.op {
		case opLdxB, opLdxH, opLdxW, opLdxDW, opLdxSB, opLdxSH, opLdxSW,
			opLdCtxData, opLdCtxDataEnd, opLdCtxDataMeta, opLdxB16, opLdxB16L,
			opLdBJEQ, opLdBJNE, opLdHJEQ, opLdHJNE, opLdBPJEQ, opLdBPJNE, opLdHPJEQ, opLdHPJNE,
			opLdAddStDW, opLdAddStW, opLdAddStW64, opLdCtxEndData, opLdCtxDataEnd2,
			opB16LJEQ, opB16LJNE, opB16LPJEQ, opB16LPJNE, opLdxHBE, opLdxHH, opLdxWW:
			// opLdxB16 and opLdxB16L run as their first load alone, the
			// fused loads and jumps as their load; the three other
			// instructions of the group follow unchanged.
			n, signed := loadSize(in.op)
			a := reg[in.src] + uint64(int64(in.off))
			if b := loadSlice(r.regions, a, n); b != nil {
				// The fast path refused it; cannot happen, but be exact.
				reg[in.dst] = loadValue(b, signed)
				break
			}
			v, ok := r.slowLoad(p, pc, a, n, signed)
			if !ok {
				return 0
			}
			reg[in.dst] = v
		// Division and shifts by a register, kept off the fast path: on amd64
		// they need fixed registers (DX:AX, CL), which would make the
		// compiler spill the fast loop's state on every instruction.
		case opDiv64K:
			reg[in.dst] = udiv64(reg[in.dst], uint64(in.imm))
		case opDiv64X:
			reg[in.dst] = udiv64(reg[in.dst], reg[in.src])
		case opMod64K:
			reg[in.dst] = umod64(reg[in.dst], uint64(in.imm))
		case opMod64X:
			reg[in.dst] = umod64(reg[in.dst], reg[in.src])
		case opSDiv64K:
			reg[in.dst] = sdiv64(reg[in.dst], uint64(in.imm))
		case opSDiv64X:
			reg[in.dst] = sdiv64(reg[in.dst], reg[in.src])
		case opSMod64K:
			reg[in.dst] = smod64(reg[in.dst], uint64(in.imm))
		case opSMod64X:
			reg[in.dst] = smod64(reg[in.dst], reg[in.src])
		case opLsh64X:
			reg[in.dst] <<= reg[in.src] & 63
		case opRsh64X:
			reg[in.dst] >>= reg[in.src] & 63
		case opArsh64X:
			reg[in.dst] = uint64(int64(reg[in.dst]) >> (reg[in.src] & 63))
		case opDiv32K:
			reg[in.dst] = uint64(udiv32(uint32(reg[in.dst]), uint32(in.imm)))
		case opDiv32X:
			reg[in.dst] = uint64(udiv32(uint32(reg[in.dst]), uint32(reg[in.src])))
		case opMod32K:
			reg[in.dst] = uint64(umod32(uint32(reg[in.dst]), uint32(in.imm)))
		case opMod32X:
			reg[in.dst] = uint64(umod32(uint32(reg[in.dst]), uint32(reg[in.src])))
		case opSDiv32K:
			reg[in.dst] = uint64(sdiv32(uint32(reg[in.dst]), uint32(in.imm)))
		case opSDiv32X:
			reg[in.dst] = uint64(sdiv32(uint32(reg[in.dst]), uint32(reg[in.src])))
		case opSMod32K:
			reg[in.dst] = uint64(smod32(uint32(reg[in.dst]), uint32(in.imm)))
		case opSMod32X:
			reg[in.dst] = uint64(smod32(uint32(reg[in.dst]), uint32(reg[in.src])))
		case opLsh32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) << (uint32(reg[in.src]) & 31))
		case opRsh32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) >> (uint32(reg[in.src]) & 31))
		case opArsh32X:
			reg[in.dst] = uint64(uint32(int32(reg[in.dst]) >> (uint32(reg[in.src]) & 31)))
		case opStxHH, opStxWW:
			// The first store alone; the second keeps its slot.
			n := uint64(2)
			if in.op == opStxWW {
				n = 4
			}
			a := reg[in.dst] + uint64(int64(in.off))
			b := storeSlice(r.regions, a, n)
			if b == nil {
				r.storeFault(p, pc, a, n)
				return 0
			}
			if n == 2 {
				wr16(&b[0], reg[in.src])
			} else {
				wr32(&b[0], reg[in.src])
			}
		case opStB, opStH, opStW, opStDW, opStxB, opStxH, opStxW, opStxDW:
			n := storeSize(in.op)
			r.storeFault(p, pc, reg[in.dst]+uint64(int64(in.off)), n)
			return 0
		case opJA, opJEQ64K, opJEQ64X, opJGT64K, opJGT64X, opJGE64K, opJGE64X, opJSET64K, opJSET64X,
			opJNE64K, opJNE64X, opJSGT64K, opJSGT64X, opJSGE64K, opJSGE64X, opJLT64K, opJLT64X,
			opJLE64K, opJLE64X, opJSLT64K, opJSLT64X, opJSLE64K, opJSLE64X,
			opJEQ32K, opJEQ32X, opJGT32K, opJGT32X, opJGE32K, opJGE32X, opJSET32K, opJSET32X,
			opJNE32K, opJNE32X, opJSGT32K, opJSGT32X, opJSGE32K, opJSGE32X, opJLT32K, opJLT32X,
			opJLE32K, opJLE32X, opJSLT32K, opJSLT32X, opJSLE32K, opJSLE32X:
			// Only a backward jump past the budget comes here.
			r.setFault(p, pc, faultBudget, 0, 0)
			return 0
		case opAtomic32:
			a := reg[in.dst] + uint64(int64(in.off))
			b := storeSlice(r.regions, a, 4)
			if b == nil {
				r.storeFault(p, pc, a, 4)
				return 0
			}
			if !atomic32(b, in.imm, h, in.src&15) {
				r.setFault(p, pc, faultMisaligned, a, 4)
				return 0
			}
		case opAtomic64:
			a := reg[in.dst] + uint64(int64(in.off))
			b := storeSlice(r.regions, a, 8)
			if b == nil {
				r.storeFault(p, pc, a, 8)
				return 0
			}
			if !atomic64(b, in.imm, h, in.src&15) {
				r.setFault(p, pc, faultMisaligned, a, 8)
				return 0
			}
		case opCall:
			reg[0] = r.callHelper(p, pc, int32(in.imm), h)
			if r.faulted {
				return 0
			}
		case opLookup:
			reg[2] = reg[10] + uint64(in.imm)
			reg[1] = regionMap<<32 | uint64(in.pimm)
			reg[0] = r.callHelper(p, pc+4, helperMapLookupElem, h)
			if r.faulted {
				return 0
			}
			if reg[0] == 0 {
				pc = int(in.t)
				continue
			}
			pc += 6
			continue
		case opTailCall:
			r.hreg = h
			np, ok := r.tailCall(p, pc, reg[2], reg[3])
			if r.faulted {
				return 0
			}
			if ok {
				// The new program replaces the current one in this frame.
				p = np
				pc = 0
				continue
			}
		case opCallLocal:
			if !r.pushFrame(p, pc, h) {
				return 0
			}
			if in.back != 0 && !r.charge(p, pc, int(in.imm)) {
				return 0
			}
			pc = int(in.imm)
			continue
		case opCallX:
			t := reg[in.dst]
			if t>>32 == regionFunc {
				target := int(uint32(t))
				if target >= len(code) || !p.funcs[target] {
					r.setFault(p, pc, faultCallX, t, 0)
					return 0
				}
				if !r.pushFrame(p, pc, h) {
					return 0
				}
				if target <= pc && !r.charge(p, pc, target) {
					return 0
				}
				pc = target
				continue
			}
			if t == 0 || t > maxKnownHelper || !helperImplemented(int32(t)) || int32(t) == helperTailCall {
				r.setFault(p, pc, faultCallX, t, 0)
				return 0
			}
			reg[0] = r.callHelper(p, pc, int32(t), h)
			if r.faulted {
				return 0
			}
		default:
			if in.op >= opPJEQ64K && in.op <= opPJSLE32X {
				// A fused move and backward jump past the budget.
				r.setFault(p, pc, faultBudget, 0, 0)
				return 0
			}
			r.setFault(p, pc, faultInternal, 0, 0)
			return 0
		}
		pc++
	}
}

func loadSize(o op) (uint64, bool) {
	switch o {
	case opLdxB, opLdxB16, opLdxB16L, opLdBJEQ, opLdBJNE, opLdBPJEQ, opLdBPJNE,
		opB16LJEQ, opB16LJNE, opB16LPJEQ, opB16LPJNE:
		return 1, false
	case opLdxH, opLdHJEQ, opLdHJNE, opLdHPJEQ, opLdHPJNE, opLdxHBE, opLdxHH:
		return 2, false
	case opLdxDW, opLdAddStDW:
		return 8, false
	case opLdxW, opLdxWW, opLdCtxData, opLdCtxDataEnd, opLdCtxDataMeta, opLdAddStW, opLdAddStW64,
		opLdCtxEndData, opLdCtxDataEnd2:
		return 4, false
	case opLdxSB:
		return 1, true
	case opLdxSH:
		return 2, true
	}
	return 4, true
}

func loadValue(b []byte, signed bool) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	if signed {
		v = signExtend(v, uint64(len(b)))
	}
	return v
}

func storeSize(o op) uint64 {
	switch o {
	case opStB, opStxB:
		return 1
	case opStH, opStxH:
		return 2
	case opStW, opStxW:
		return 4
	}
	return 8
}

// fast runs the common instructions from pc until one needs the slow path
// (or the frame exec started in exits: done). It calls no function, so the
// compiler keeps its state in registers. It returns where to go on and the
// program running there.
//
// Keep every case cheap in registers: one case that needs many values at
// once (two region lookups, say) makes the compiler spill loop state on
// every instruction. After a change, check that the dispatch sequence
// (go tool objdump -s 'Runner..fast$') has no stack stores and that the
// function has no frame (no SUBQ ..., SP).
func (r *Runner) fast(p *Program, pc, base int, reg *[256]uint64) (int, *Program, bool) {
	code := p.code
	// One nil check of reg here spares one in every case below.
	_ = reg[0]
fast:
	for uint(pc) < uint(len(code)) {
		in := &code[pc]
		switch in.op {
		case opInvalid:
			// Never decoded; listed so the jump table starts at 0.
			break fast
		case opLast:
			// Never decoded either; listed so the jump table covers every
			// value of the uint8 op and needs no range check.
			break fast
		case opAdd64K:
			reg[in.dst] += uint64(in.imm)
		case opAdd64X:
			reg[in.dst] += reg[in.src]
		case opSub64K:
			reg[in.dst] -= uint64(in.imm)
		case opSub64X:
			reg[in.dst] -= reg[in.src]
		case opMul64K:
			reg[in.dst] *= uint64(in.imm)
		case opMul64X:
			reg[in.dst] *= reg[in.src]
		case opOr64K:
			reg[in.dst] |= uint64(in.imm)
		case opOr64X:
			reg[in.dst] |= reg[in.src]
		case opAnd64K:
			reg[in.dst] &= uint64(in.imm)
		case opAnd64X:
			reg[in.dst] &= reg[in.src]
		case opXor64K:
			reg[in.dst] ^= uint64(in.imm)
		case opXor64X:
			reg[in.dst] ^= reg[in.src]
		case opLsh64K:
			reg[in.dst] <<= uint64(in.imm)
		case opRsh64K:
			reg[in.dst] >>= uint64(in.imm)
		case opArsh64K:
			reg[in.dst] = uint64(int64(reg[in.dst]) >> uint64(in.imm))
		case opMov64K:
			reg[in.dst] = uint64(in.imm)
		case opMov64X:
			reg[in.dst] = reg[in.src]
		case opNeg64:
			reg[in.dst] = -reg[in.dst]
		case opMovSX8to64:
			reg[in.dst] = uint64(int64(int8(reg[in.src])))
		case opMovSX16to64:
			reg[in.dst] = uint64(int64(int16(reg[in.src])))
		case opMovSX32to64:
			reg[in.dst] = uint64(int64(int32(reg[in.src])))
		case opAdd32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) + uint32(in.imm))
		case opAdd32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) + uint32(reg[in.src]))
		case opSub32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) - uint32(in.imm))
		case opSub32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) - uint32(reg[in.src]))
		case opMul32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) * uint32(in.imm))
		case opMul32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) * uint32(reg[in.src]))
		case opOr32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) | uint32(in.imm))
		case opOr32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) | uint32(reg[in.src]))
		case opAnd32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) & uint32(in.imm))
		case opAnd32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) & uint32(reg[in.src]))
		case opXor32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) ^ uint32(in.imm))
		case opXor32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) ^ uint32(reg[in.src]))
		case opLsh32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) << uint32(in.imm))
		case opRsh32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) >> uint32(in.imm))
		case opArsh32K:
			reg[in.dst] = uint64(uint32(int32(reg[in.dst]) >> uint32(in.imm)))
		case opMov32K:
			reg[in.dst] = uint64(uint32(in.imm))
		case opMov32X:
			reg[in.dst] = uint64(uint32(reg[in.src]))
		case opNeg32:
			reg[in.dst] = uint64(-uint32(reg[in.dst]))
		case opMovSX8to32:
			reg[in.dst] = uint64(uint32(int32(int8(reg[in.src]))))
		case opMovSX16to32:
			reg[in.dst] = uint64(uint32(int32(int16(reg[in.src]))))

		case opTrunc16:
			reg[in.dst] = uint64(uint16(reg[in.dst]))
		case opTrunc32:
			reg[in.dst] = uint64(uint32(reg[in.dst]))
		case opNop:
		case opSwap16:
			reg[in.dst] = uint64(bits.ReverseBytes16(uint16(reg[in.dst])))
		case opSwap32:
			reg[in.dst] = uint64(bits.ReverseBytes32(uint32(reg[in.dst])))
		case opSwap64:
			reg[in.dst] = bits.ReverseBytes64(reg[in.dst])
		case opMovAdd64:
			// Fused "dst = src; dst += imm" (clang's bounds-check idiom).
			reg[in.dst] = reg[in.src] + uint64(in.imm)
			pc += 2
			continue
		case opBound:
			// Fused "dst = src; dst += imm; if dst > x goto off", forward.
			// (Testing the computed value instead of reading dst back
			// measured slower here, unlike the fused loads and jumps, whose
			// tests use the loaded value; decode leaves groups whose
			// registers alias unfused either way.)
			reg[in.dst] = reg[in.src] + uint64(in.imm)
			if reg[in.dst] > reg[in.x] {
				pc = int(in.off)
				continue
			}
			pc += 3
			continue
		case opPBound:
			// The same with "pdst = pimm" before the jump.
			reg[in.dst] = reg[in.src] + uint64(in.imm)
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] > reg[in.x] {
				pc = int(in.off)
				continue
			}
			pc += 4
			continue

		case opJA:
			if in.back != 0 {
				r.budget -= int64(pc-int(in.off)) + 1
				if r.budget < 0 {
					break fast
				}
			}
			pc = int(in.off)
			continue
		case opJEQ64K:
			if reg[in.dst] == uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJEQ64X:
			if reg[in.dst] == reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJEQ32K:
			if uint32(reg[in.dst]) == uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJEQ32X:
			if uint32(reg[in.dst]) == uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGT64K:
			if reg[in.dst] > uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGT64X:
			if reg[in.dst] > reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGT32K:
			if uint32(reg[in.dst]) > uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGT32X:
			if uint32(reg[in.dst]) > uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGE64K:
			if reg[in.dst] >= uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGE64X:
			if reg[in.dst] >= reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGE32K:
			if uint32(reg[in.dst]) >= uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJGE32X:
			if uint32(reg[in.dst]) >= uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJNE64K:
			if reg[in.dst] != uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJNE64X:
			if reg[in.dst] != reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJNE32K:
			if uint32(reg[in.dst]) != uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJNE32X:
			if uint32(reg[in.dst]) != uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLT64K:
			if reg[in.dst] < uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLT64X:
			if reg[in.dst] < reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLT32K:
			if uint32(reg[in.dst]) < uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLT32X:
			if uint32(reg[in.dst]) < uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLE64K:
			if reg[in.dst] <= uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLE64X:
			if reg[in.dst] <= reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLE32K:
			if uint32(reg[in.dst]) <= uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJLE32X:
			if uint32(reg[in.dst]) <= uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGT64K:
			if int64(reg[in.dst]) > in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGT64X:
			if int64(reg[in.dst]) > int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGT32K:
			if int32(reg[in.dst]) > int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGT32X:
			if int32(reg[in.dst]) > int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGE64K:
			if int64(reg[in.dst]) >= in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGE64X:
			if int64(reg[in.dst]) >= int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGE32K:
			if int32(reg[in.dst]) >= int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSGE32X:
			if int32(reg[in.dst]) >= int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLT64K:
			if int64(reg[in.dst]) < in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLT64X:
			if int64(reg[in.dst]) < int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLT32K:
			if int32(reg[in.dst]) < int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLT32X:
			if int32(reg[in.dst]) < int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLE64K:
			if int64(reg[in.dst]) <= in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLE64X:
			if int64(reg[in.dst]) <= int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLE32K:
			if int32(reg[in.dst]) <= int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSLE32X:
			if int32(reg[in.dst]) <= int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSET64K:
			if reg[in.dst]&uint64(in.imm) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSET64X:
			if reg[in.dst]&reg[in.src] != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSET32K:
			if uint32(reg[in.dst])&uint32(in.imm) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opJSET32X:
			if uint32(reg[in.dst]&reg[in.src]) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
		case opPJEQ64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] == uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJEQ64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] == reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGT64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] > uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGT64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] > reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGE64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] >= uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGE64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] >= reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSET64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst]&uint64(in.imm) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSET64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst]&reg[in.src] != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJNE64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] != uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJNE64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] != reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGT64K:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) > in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGT64X:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) > int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGE64K:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) >= in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGE64X:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) >= int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLT64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] < uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLT64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] < reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLE64K:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] <= uint64(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLE64X:
			reg[in.pdst] = uint64(in.pimm)
			if reg[in.dst] <= reg[in.src] {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLT64K:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) < in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLT64X:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) < int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLE64K:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) <= in.imm {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLE64X:
			reg[in.pdst] = uint64(in.pimm)
			if int64(reg[in.dst]) <= int64(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJEQ32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) == uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJEQ32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) == uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGT32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) > uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGT32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) > uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGE32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) >= uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJGE32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) >= uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSET32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst])&uint32(in.imm) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSET32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]&reg[in.src]) != 0 {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJNE32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) != uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJNE32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) != uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGT32K:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) > int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGT32X:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) > int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGE32K:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) >= int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSGE32X:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) >= int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLT32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) < uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLT32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) < uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLE32K:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) <= uint32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJLE32X:
			reg[in.pdst] = uint64(in.pimm)
			if uint32(reg[in.dst]) <= uint32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLT32K:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) < int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLT32X:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) < int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLE32K:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) <= int32(in.imm) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opPJSLE32X:
			reg[in.pdst] = uint64(in.pimm)
			if int32(reg[in.dst]) <= int32(reg[in.src]) {
				if in.back != 0 {
					r.budget -= int64(pc-int(in.off)) + 1
					if r.budget < 0 {
						break fast
					}
				}
				pc = int(in.off)
				continue
			}
			pc += 2
			continue
		case opLdxB:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = uint64(*ptr)
		case opLdxH:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = rd16(ptr)
		case opLdxW:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = rd32(ptr)
		case opLdxDW:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+8 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = rd64(ptr)
		case opLdxSB:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = uint64(int64(int8(*ptr)))
		case opLdxSH:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = uint64(int64(int16(rd16(ptr))))
		case opLdxSW:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.hi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			reg[in.dst] = uint64(int64(int32(rd32(ptr))))
		case opStB:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			*ptr = byte(uint64(in.imm))
		case opStxB:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			*ptr = byte(reg[in.src])
		case opStH:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr16(ptr, uint64(in.imm))
		case opStxH:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr16(ptr, reg[in.src])
		case opStW:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr32(ptr, uint64(in.imm))
		case opStxW:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr32(ptr, reg[in.src])
		case opStDW:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+8 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr64(ptr, uint64(in.imm))
		case opStxDW:
			a := reg[in.dst] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+8 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			wr64(ptr, reg[in.src])

		case opLdxB16:
			// The u16 at P+K; its low byte also goes to B.
			a := reg[in.src] + uint64(int64(in.off)) - 1
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v
			reg[in.pdst] = v & 0xff
			pc += 4
			continue
		case opLdBJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			v := uint64(*at(rg, a&0xffffffff))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opLdBJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			v := uint64(*at(rg, a&0xffffffff))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opLdBPJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			v := uint64(*at(rg, a&0xffffffff))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opLdBPJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+1 > rg.hi {
				break fast
			}
			v := uint64(*at(rg, a&0xffffffff))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opLdHJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opLdHJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opLdHPJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opLdHPJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opLdAddStDW:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+8 > rg.hi || a&0xffffffff+8 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			v := rd64(ptr) + uint64(in.imm)
			reg[in.dst] = v
			wr64(ptr, v)
			pc += 3
			continue
		case opLdAddStW:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.hi || a&0xffffffff+4 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			v := uint64(uint32(rd32(ptr)) + uint32(in.imm))
			reg[in.dst] = v
			wr32(ptr, v)
			pc += 3
			continue
		case opLdAddStW64:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+4 > rg.hi || a&0xffffffff+4 > rg.whi {
				break fast
			}
			ptr := at(rg, a&0xffffffff)
			v := rd32(ptr) + uint64(in.imm)
			reg[in.dst] = v
			wr32(ptr, v)
			pc += 3
			continue
		case opLdCtxEndData:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = regionPacket<<32 | uint64(r.frame.DataEnd)
			reg[in.pdst] = regionPacket<<32 | uint64(r.frame.Data)
			pc += 2
			continue
		case opLdCtxDataEnd2:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = regionPacket<<32 | uint64(r.frame.Data)
			reg[in.pdst] = regionPacket<<32 | uint64(r.frame.DataEnd)
			pc += 2
			continue
		case opB16LJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v & 0xff
			reg[in.pdst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 5
			continue
		case opB16LJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v & 0xff
			reg[in.pdst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 5
			continue
		case opB16LPJEQ:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v & 0xff
			reg[in.pdst] = v
			reg[in.x] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 6
			continue
		case opB16LPJNE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v & 0xff
			reg[in.pdst] = v
			reg[in.x] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 6
			continue
		case opAnd32JEQ:
			v := uint64(uint32(reg[in.dst]) & uint32(in.off))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opAnd32JNE:
			v := uint64(uint32(reg[in.dst]) & uint32(in.off))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opAnd32PJEQ:
			v := uint64(uint32(reg[in.dst]) & uint32(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opAnd32PJNE:
			v := uint64(uint32(reg[in.dst]) & uint32(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opAnd64JEQ:
			v := reg[in.dst] & uint64(int64(in.off))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opAnd64JNE:
			v := reg[in.dst] & uint64(int64(in.off))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 2
			continue
		case opAnd64PJEQ:
			v := reg[in.dst] & uint64(int64(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opAnd64PJNE:
			v := reg[in.dst] & uint64(int64(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opMovAnd32JEQ:
			v := uint64(uint32(reg[in.src]) & uint32(in.off))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opMovAnd32JNE:
			v := uint64(uint32(reg[in.src]) & uint32(in.off))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opMovAnd32PJEQ:
			v := uint64(uint32(reg[in.src]) & uint32(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 4
			continue
		case opMovAnd32PJNE:
			v := uint64(uint32(reg[in.src]) & uint32(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 4
			continue
		case opMovAnd64JEQ:
			v := reg[in.src] & uint64(int64(in.off))
			reg[in.dst] = v
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opMovAnd64JNE:
			v := reg[in.src] & uint64(int64(in.off))
			reg[in.dst] = v
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 3
			continue
		case opMovAnd64PJEQ:
			v := reg[in.src] & uint64(int64(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v == uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 4
			continue
		case opMovAnd64PJNE:
			v := reg[in.src] & uint64(int64(in.off))
			reg[in.dst] = v
			reg[in.pdst] = uint64(in.pimm)
			if v != uint64(in.imm) {
				pc = int(in.t)
				continue
			}
			pc += 4
			continue
		case opLdxB16L:
			// The u16 at P+K to A (pdst); its low byte to B (dst).
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			v := rd16(at(rg, a&0xffffffff))
			reg[in.dst] = v & 0xff
			reg[in.pdst] = v
			pc += 4
			continue
		case opLdCtxData:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = regionPacket<<32 | uint64(r.frame.Data)
		case opLdCtxDataEnd:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = regionPacket<<32 | uint64(r.frame.DataEnd)
		case opLdCtxDataMeta:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = regionPacket<<32 | uint64(r.frame.DataMeta)
		case opLdImm64, opLdMapValue:
			reg[in.dst] = uint64(in.imm)
			pc += 2
			continue
		case opLdMap:
			reg[in.dst] = regionMap<<32 | uint64(in.imm)
			pc += 2
			continue
		case opLdFunc:
			reg[in.dst] = regionFunc<<32 | uint64(in.imm)
			pc += 2
			continue

		case opLdxHBE:
			a := reg[in.src] + uint64(int64(in.off))
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+2 > rg.hi {
				break fast
			}
			reg[in.dst] = uint64(bits.ReverseBytes16(uint16(rd16(at(rg, a&0xffffffff)))))
			pc += 2
			continue
		case opMovRsh64:
			reg[in.dst] = reg[in.src] >> (uint64(in.imm) & 63)
			pc += 2
			continue
		case opLshOr64:
			reg[in.dst] = reg[in.dst]<<(uint64(in.imm)&63) | reg[in.src]
			pc += 2
			continue
		case opLdxHH:
			a := reg[in.src] + uint64(in.imm)
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+uint64(in.t) > rg.hi {
				break fast
			}
			o := a & 0xffffffff
			reg[in.dst] = rd16(at(rg, o+uint64(in.x)))
			reg[in.pdst] = rd16(at(rg, o+uint64(in.pimm)))
			pc += 2
			continue
		case opLdxWW:
			a := reg[in.src] + uint64(in.imm)
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+uint64(in.t) > rg.hi {
				break fast
			}
			o := a & 0xffffffff
			reg[in.dst] = rd32(at(rg, o+uint64(in.x)))
			reg[in.pdst] = rd32(at(rg, o+uint64(in.pimm)))
			pc += 2
			continue
		case opStxHH:
			a := reg[in.dst] + uint64(in.imm)
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+uint64(in.t) > rg.whi {
				break fast
			}
			o := a & 0xffffffff
			wr16(at(rg, o+uint64(in.x)), reg[in.src])
			wr16(at(rg, o+uint64(in.pimm)), reg[in.pdst])
			pc += 2
			continue
		case opStxWW:
			a := reg[in.dst] + uint64(in.imm)
			if a>>32 >= uint64(len(r.regions)) {
				break fast
			}
			rg := &r.regions[a>>32]
			if a&0xffffffff < rg.lo || a&0xffffffff+uint64(in.t) > rg.whi {
				break fast
			}
			o := a & 0xffffffff
			wr32(at(rg, o+uint64(in.x)), reg[in.src])
			wr32(at(rg, o+uint64(in.pimm)), reg[in.pdst])
			pc += 2
			continue
		case opMovExit:
			reg[in.dst] = uint64(in.imm)
			if r.depth == base {
				return pc + 1, p, true
			}
			// A local call's exit: the exit's own slot pops the frame.
		case opExit:
			if r.depth == base {
				return pc, p, true
			}
			r.depth--
			f := &r.frames[r.depth]
			reg[6], reg[7], reg[8], reg[9] = f.saved[0], f.saved[1], f.saved[2], f.saved[3]
			reg[10] = f.fp
			p = f.prog
			code = p.code
			pc = f.ret
			continue
		default:
			break fast
		}
		pc++
	}
	return pc, p, false
}
