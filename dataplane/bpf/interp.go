package bpf

import (
	"encoding/binary"
	"math/bits"
)

// exec runs p from pc with the registers in reg until the frame it started in
// exits, and returns r0. On a fault it records it in r and returns 0; callers
// check r.faulted.
//
// Pointers are tagged: region number in the high 32 bits, offset in the low
// 32. A load or store resolves its address through regs (the region table)
// and checks the bounds of that one region, so no address can reach memory
// outside the regions whatever the program computes.
func (r *Runner) exec(p *Program, pc int, reg *[16]uint64) uint64 {
	base := r.depth
	code := p.code
	regs := r.regions
	for {
		if uint(pc) >= uint(len(code)) {
			r.setFault(p, pc, faultNoPC, 0, 0)
			return 0
		}
		in := &code[pc]
		switch in.op {
		case opAdd64K:
			reg[in.dst&15] += uint64(in.imm)
		case opAdd64X:
			reg[in.dst&15] += reg[in.src&15]
		case opSub64K:
			reg[in.dst&15] -= uint64(in.imm)
		case opSub64X:
			reg[in.dst&15] -= reg[in.src&15]
		case opMul64K:
			reg[in.dst&15] *= uint64(in.imm)
		case opMul64X:
			reg[in.dst&15] *= reg[in.src&15]
		case opOr64K:
			reg[in.dst&15] |= uint64(in.imm)
		case opOr64X:
			reg[in.dst&15] |= reg[in.src&15]
		case opAnd64K:
			reg[in.dst&15] &= uint64(in.imm)
		case opAnd64X:
			reg[in.dst&15] &= reg[in.src&15]
		case opXor64K:
			reg[in.dst&15] ^= uint64(in.imm)
		case opXor64X:
			reg[in.dst&15] ^= reg[in.src&15]
		case opLsh64K:
			reg[in.dst&15] <<= uint64(in.imm)
		case opLsh64X:
			reg[in.dst&15] <<= reg[in.src&15] & 63
		case opRsh64K:
			reg[in.dst&15] >>= uint64(in.imm)
		case opRsh64X:
			reg[in.dst&15] >>= reg[in.src&15] & 63
		case opArsh64K:
			reg[in.dst&15] = uint64(int64(reg[in.dst&15]) >> uint64(in.imm))
		case opArsh64X:
			reg[in.dst&15] = uint64(int64(reg[in.dst&15]) >> (reg[in.src&15] & 63))
		case opMov64K:
			reg[in.dst&15] = uint64(in.imm)
		case opMov64X:
			reg[in.dst&15] = reg[in.src&15]
		case opNeg64:
			reg[in.dst&15] = -reg[in.dst&15]
		case opMovSX8to64:
			reg[in.dst&15] = uint64(int64(int8(reg[in.src&15])))
		case opMovSX16to64:
			reg[in.dst&15] = uint64(int64(int16(reg[in.src&15])))
		case opMovSX32to64:
			reg[in.dst&15] = uint64(int64(int32(reg[in.src&15])))
		case opDiv64K:
			reg[in.dst&15] = udiv64(reg[in.dst&15], uint64(in.imm))
		case opDiv64X:
			reg[in.dst&15] = udiv64(reg[in.dst&15], reg[in.src&15])
		case opMod64K:
			reg[in.dst&15] = umod64(reg[in.dst&15], uint64(in.imm))
		case opMod64X:
			reg[in.dst&15] = umod64(reg[in.dst&15], reg[in.src&15])
		case opSDiv64K:
			reg[in.dst&15] = sdiv64(reg[in.dst&15], uint64(in.imm))
		case opSDiv64X:
			reg[in.dst&15] = sdiv64(reg[in.dst&15], reg[in.src&15])
		case opSMod64K:
			reg[in.dst&15] = smod64(reg[in.dst&15], uint64(in.imm))
		case opSMod64X:
			reg[in.dst&15] = smod64(reg[in.dst&15], reg[in.src&15])
		case opAdd32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) + uint32(in.imm))
		case opAdd32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) + uint32(reg[in.src&15]))
		case opSub32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) - uint32(in.imm))
		case opSub32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) - uint32(reg[in.src&15]))
		case opMul32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) * uint32(in.imm))
		case opMul32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) * uint32(reg[in.src&15]))
		case opOr32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) | uint32(in.imm))
		case opOr32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) | uint32(reg[in.src&15]))
		case opAnd32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) & uint32(in.imm))
		case opAnd32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) & uint32(reg[in.src&15]))
		case opXor32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) ^ uint32(in.imm))
		case opXor32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) ^ uint32(reg[in.src&15]))
		case opLsh32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) << uint32(in.imm))
		case opLsh32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) << (uint32(reg[in.src&15]) & 31))
		case opRsh32K:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) >> uint32(in.imm))
		case opRsh32X:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]) >> (uint32(reg[in.src&15]) & 31))
		case opArsh32K:
			reg[in.dst&15] = uint64(uint32(int32(reg[in.dst&15]) >> uint32(in.imm)))
		case opArsh32X:
			reg[in.dst&15] = uint64(uint32(int32(reg[in.dst&15]) >> (uint32(reg[in.src&15]) & 31)))
		case opMov32K:
			reg[in.dst&15] = uint64(uint32(in.imm))
		case opMov32X:
			reg[in.dst&15] = uint64(uint32(reg[in.src&15]))
		case opNeg32:
			reg[in.dst&15] = uint64(-uint32(reg[in.dst&15]))
		case opMovSX8to32:
			reg[in.dst&15] = uint64(uint32(int32(int8(reg[in.src&15]))))
		case opMovSX16to32:
			reg[in.dst&15] = uint64(uint32(int32(int16(reg[in.src&15]))))
		case opDiv32K:
			reg[in.dst&15] = uint64(udiv32(uint32(reg[in.dst&15]), uint32(in.imm)))
		case opDiv32X:
			reg[in.dst&15] = uint64(udiv32(uint32(reg[in.dst&15]), uint32(reg[in.src&15])))
		case opMod32K:
			reg[in.dst&15] = uint64(umod32(uint32(reg[in.dst&15]), uint32(in.imm)))
		case opMod32X:
			reg[in.dst&15] = uint64(umod32(uint32(reg[in.dst&15]), uint32(reg[in.src&15])))
		case opSDiv32K:
			reg[in.dst&15] = uint64(sdiv32(uint32(reg[in.dst&15]), uint32(in.imm)))
		case opSDiv32X:
			reg[in.dst&15] = uint64(sdiv32(uint32(reg[in.dst&15]), uint32(reg[in.src&15])))
		case opSMod32K:
			reg[in.dst&15] = uint64(smod32(uint32(reg[in.dst&15]), uint32(in.imm)))
		case opSMod32X:
			reg[in.dst&15] = uint64(smod32(uint32(reg[in.dst&15]), uint32(reg[in.src&15])))

		case opTrunc16:
			reg[in.dst&15] = uint64(uint16(reg[in.dst&15]))
		case opTrunc32:
			reg[in.dst&15] = uint64(uint32(reg[in.dst&15]))
		case opNop:
		case opSwap16:
			reg[in.dst&15] = uint64(bits.ReverseBytes16(uint16(reg[in.dst&15])))
		case opSwap32:
			reg[in.dst&15] = uint64(bits.ReverseBytes32(uint32(reg[in.dst&15])))
		case opSwap64:
			reg[in.dst&15] = bits.ReverseBytes64(reg[in.dst&15])

		case opJA:
			if in.back != 0 && !r.charge(p, pc, int(in.off)) {
				return 0
			}
			pc = int(in.off)
			continue
		case opJEQ64K:
			if reg[in.dst&15] == uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJEQ64X:
			if reg[in.dst&15] == reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJEQ32K:
			if uint32(reg[in.dst&15]) == uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJEQ32X:
			if uint32(reg[in.dst&15]) == uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGT64K:
			if reg[in.dst&15] > uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGT64X:
			if reg[in.dst&15] > reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGT32K:
			if uint32(reg[in.dst&15]) > uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGT32X:
			if uint32(reg[in.dst&15]) > uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGE64K:
			if reg[in.dst&15] >= uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGE64X:
			if reg[in.dst&15] >= reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGE32K:
			if uint32(reg[in.dst&15]) >= uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJGE32X:
			if uint32(reg[in.dst&15]) >= uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJNE64K:
			if reg[in.dst&15] != uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJNE64X:
			if reg[in.dst&15] != reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJNE32K:
			if uint32(reg[in.dst&15]) != uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJNE32X:
			if uint32(reg[in.dst&15]) != uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLT64K:
			if reg[in.dst&15] < uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLT64X:
			if reg[in.dst&15] < reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLT32K:
			if uint32(reg[in.dst&15]) < uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLT32X:
			if uint32(reg[in.dst&15]) < uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLE64K:
			if reg[in.dst&15] <= uint64(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLE64X:
			if reg[in.dst&15] <= reg[in.src&15] {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLE32K:
			if uint32(reg[in.dst&15]) <= uint32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJLE32X:
			if uint32(reg[in.dst&15]) <= uint32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGT64K:
			if int64(reg[in.dst&15]) > in.imm {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGT64X:
			if int64(reg[in.dst&15]) > int64(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGT32K:
			if int32(reg[in.dst&15]) > int32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGT32X:
			if int32(reg[in.dst&15]) > int32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGE64K:
			if int64(reg[in.dst&15]) >= in.imm {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGE64X:
			if int64(reg[in.dst&15]) >= int64(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGE32K:
			if int32(reg[in.dst&15]) >= int32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSGE32X:
			if int32(reg[in.dst&15]) >= int32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLT64K:
			if int64(reg[in.dst&15]) < in.imm {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLT64X:
			if int64(reg[in.dst&15]) < int64(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLT32K:
			if int32(reg[in.dst&15]) < int32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLT32X:
			if int32(reg[in.dst&15]) < int32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLE64K:
			if int64(reg[in.dst&15]) <= in.imm {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLE64X:
			if int64(reg[in.dst&15]) <= int64(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLE32K:
			if int32(reg[in.dst&15]) <= int32(in.imm) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSLE32X:
			if int32(reg[in.dst&15]) <= int32(reg[in.src&15]) {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSET64K:
			if reg[in.dst&15]&uint64(in.imm) != 0 {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSET64X:
			if reg[in.dst&15]&reg[in.src&15] != 0 {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSET32K:
			if uint32(reg[in.dst&15])&uint32(in.imm) != 0 {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opJSET32X:
			if uint32(reg[in.dst&15]&reg[in.src&15]) != 0 {
				if in.back != 0 && !r.charge(p, pc, int(in.off)) {
					return 0
				}
				pc = int(in.off)
				continue
			}
		case opLdxB:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 1); b != nil {
				reg[in.dst&15] = uint64(b[0])
			} else {
				v, ok := r.slowLoad(p, pc, a, 1, false)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxH:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 2); b != nil {
				reg[in.dst&15] = uint64(binary.LittleEndian.Uint16(b))
			} else {
				v, ok := r.slowLoad(p, pc, a, 2, false)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxW:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 4); b != nil {
				reg[in.dst&15] = uint64(binary.LittleEndian.Uint32(b))
			} else {
				v, ok := r.slowLoad(p, pc, a, 4, false)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxDW:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 8); b != nil {
				reg[in.dst&15] = binary.LittleEndian.Uint64(b)
			} else {
				v, ok := r.slowLoad(p, pc, a, 8, false)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxSB:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 1); b != nil {
				reg[in.dst&15] = uint64(int64(int8(b[0])))
			} else {
				v, ok := r.slowLoad(p, pc, a, 1, true)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxSH:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 2); b != nil {
				reg[in.dst&15] = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
			} else {
				v, ok := r.slowLoad(p, pc, a, 2, true)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opLdxSW:
			a := reg[in.src&15] + uint64(int64(in.off))
			if b := loadSlice(regs, a, 4); b != nil {
				reg[in.dst&15] = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
			} else {
				v, ok := r.slowLoad(p, pc, a, 4, true)
				if !ok {
					return 0
				}
				reg[in.dst&15] = v
			}
		case opStB:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 1); b != nil {
				b[0] = byte(uint64(in.imm))
			} else {
				r.storeFault(p, pc, a, 1)
				return 0
			}
		case opStxB:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 1); b != nil {
				b[0] = byte(reg[in.src&15])
			} else {
				r.storeFault(p, pc, a, 1)
				return 0
			}
		case opStH:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 2); b != nil {
				binary.LittleEndian.PutUint16(b, uint16(uint64(in.imm)))
			} else {
				r.storeFault(p, pc, a, 2)
				return 0
			}
		case opStxH:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 2); b != nil {
				binary.LittleEndian.PutUint16(b, uint16(reg[in.src&15]))
			} else {
				r.storeFault(p, pc, a, 2)
				return 0
			}
		case opStW:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 4); b != nil {
				binary.LittleEndian.PutUint32(b, uint32(uint64(in.imm)))
			} else {
				r.storeFault(p, pc, a, 4)
				return 0
			}
		case opStxW:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 4); b != nil {
				binary.LittleEndian.PutUint32(b, uint32(reg[in.src&15]))
			} else {
				r.storeFault(p, pc, a, 4)
				return 0
			}
		case opStDW:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 8); b != nil {
				binary.LittleEndian.PutUint64(b, uint64(in.imm))
			} else {
				r.storeFault(p, pc, a, 8)
				return 0
			}
		case opStxDW:
			a := reg[in.dst&15] + uint64(int64(in.off))
			if b := storeSlice(regs, a, 8); b != nil {
				binary.LittleEndian.PutUint64(b, reg[in.src&15])
			} else {
				r.storeFault(p, pc, a, 8)
				return 0
			}
		case opAtomic32:
			a := reg[in.dst&15] + uint64(int64(in.off))
			b := storeSlice(regs, a, 4)
			if b == nil {
				r.storeFault(p, pc, a, 4)
				return 0
			}
			if !atomic32(b, in.imm, reg, in.src&15) {
				r.setFault(p, pc, faultMisaligned, a, 4)
				return 0
			}
		case opAtomic64:
			a := reg[in.dst&15] + uint64(int64(in.off))
			b := storeSlice(regs, a, 8)
			if b == nil {
				r.storeFault(p, pc, a, 8)
				return 0
			}
			if !atomic64(b, in.imm, reg, in.src&15) {
				r.setFault(p, pc, faultMisaligned, a, 8)
				return 0
			}

		case opLdImm64:
			reg[in.dst&15] = uint64(in.imm)
			pc += 2
			continue
		case opLdMap:
			reg[in.dst&15] = regionMap<<32 | uint64(in.imm)
			pc += 2
			continue
		case opLdMapValue:
			reg[in.dst&15] = uint64(in.imm)
			pc += 2
			continue
		case opLdFunc:
			reg[in.dst&15] = regionFunc<<32 | uint64(in.imm)
			pc += 2
			continue

		case opCall:
			reg[0] = r.callHelper(p, pc, int32(in.imm), reg)
			if r.faulted {
				return 0
			}
			regs = r.regions
		case opTailCall:
			np, ok := r.tailCall(p, pc, reg[2], reg[3])
			if r.faulted {
				return 0
			}
			if ok {
				// The new program replaces the current one in this frame.
				p = np
				code = p.code
				pc = 0
				continue
			}
		case opCallLocal:
			if !r.pushFrame(p, pc, reg) {
				return 0
			}
			if in.back != 0 && !r.charge(p, pc, int(in.imm)) {
				return 0
			}
			pc = int(in.imm)
			continue
		case opCallX:
			t := reg[in.dst&15]
			if t>>32 == regionFunc {
				target := int(uint32(t))
				if target >= len(code) || !p.funcs[target] {
					r.setFault(p, pc, faultCallX, t, 0)
					return 0
				}
				if !r.pushFrame(p, pc, reg) {
					return 0
				}
				if !r.charge(p, pc, target) {
					return 0
				}
				pc = target
				continue
			}
			if t == 0 || t > maxKnownHelper || !helperImplemented(int32(t)) || int32(t) == helperTailCall {
				r.setFault(p, pc, faultCallX, t, 0)
				return 0
			}
			reg[0] = r.callHelper(p, pc, int32(t), reg)
			if r.faulted {
				return 0
			}
			regs = r.regions
		case opExit:
			if r.depth == base {
				return reg[0]
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
			r.setFault(p, pc, faultInternal, 0, 0)
			return 0
		}
		pc++
	}
}
