package bpf

import (
	"math/bits"
)

// The ALU, jump, load and store cases of fast and slowALU are generated
// from opTable (interp_gen_test.go): edit the table, not the cases, and run
// go generate.
//go:generate go test -count=1 -run TestInterpGenerated -update-interp .

// runInterp is Run for a program without native code (runJIT's case for
// it). As in runJIT, the first round of the fast level, where most runs
// end, runs without the recover of runGuarded: fast cannot panic (its
// indexes are checked or are uint8 into the 256-entry register file, and in
// the top frame an exit ends the round), and the deferred recover would
// cost more than a short program. A frame, Runner or collection that needs
// more than this goes to runGuarded; a round that leaves for the slow level
// goes on under the recover (finishInterp).
func (r *Runner) runInterp(p *Program, f *Frame) Action {
	if f == nil || r.coll != p.coll || f.DataMeta < 0 || f.DataMeta > f.Data || f.Data > f.DataEnd ||
		f.DataEnd > len(f.Buf) || int64(len(f.Buf)) > maxFrameBuf {
		return r.runGuarded(p, f)
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
	if r.redirect.Kind != RedirectNone {
		r.redirect = Redirect{}
	}
	r.frame = f
	rg := &regions[regionPacket] // as setPacket
	rg.buf = f.Buf
	rg.lo = uint64(f.DataMeta)
	rg.hi = uint64(f.DataEnd)
	rg.whi = uint64(f.DataEnd)
	r.budget = p.budget
	r.depth = 0
	r.tails = 0
	r.records = r.records[:0]
	reg := &r.regs[0]
	clear(reg[:16])
	reg[1], reg[10] = regionCtx<<32, regionStack<<32|stackSize
	pc, q, done := r.fast(p, 0, 0, reg)
	if !done {
		return r.finishInterp(p, q, pc)
	}
	// Done in one round of fast: no helper ran, so no fault and no ring
	// buffer record (endRun's cases) can be pending.
	r.frame = nil
	if v := uint32(reg[0]); Action(v) > ActionRedirect {
		return r.verdict(p, v, true) // the fault of an unknown action
	}
	return Action(uint32(reg[0]))
}

// burstInterp is burst's loop for a program without native code: it runs
// frames[*next:] as runInterp does, *next the frame running (for burst's
// recover).
func (r *Runner) burstInterp(p *Program, frames []Frame, verdicts []Action, redirects []Redirect, next, firstFault *int) {
	n := min(len(frames), len(verdicts))
	i := *next
	for ; i < n; i++ {
		*next = i
		a := r.runInterp(p, &frames[i])
		verdicts[i] = a
		if a == ActionRedirect && i < len(redirects) {
			redirects[i] = r.redirect
		}
		if r.faulted && *firstFault < 0 {
			*firstFault = i
			r.saveFault()
		}
	}
	*next = i
}

// maxFrameBuf is the largest frame buffer a run accepts (packet offsets are
// the low 32 bits of a pointer, and must stay below 2^31).
const maxFrameBuf = 1<<31 - 1

// finishInterp goes on with a run of p whose first round of fast (runInterp)
// left at pc of q, under the recover of runGuarded.
func (r *Runner) finishInterp(p, q *Program, pc int) (a Action) {
	defer func() {
		if e := recover(); e != nil {
			r.internalFault(p)
			a = ActionAborted
		}
	}()
	ret, ok := r.endRun(r.slow(q, pc, 0, &r.regs[0]))
	return r.verdict(p, ret, ok)
}

// exec runs p from pc, with r1, r2 and the frame pointer r10 given, until the
// frame it started in exits, and returns r0. On a fault it records it in r
// and returns 0; callers check r.faulted.
//
// Pointers are tagged: region number in the high 32 bits, offset in the low
// 32. A load or store resolves its address through the region table and
// checks the bounds of that one region, so no address can reach memory
// outside the regions whatever the program computes.
//
// The loop has two levels, split as opTable's slow flag says. The inner
// loop (fast) runs the common instructions (ALU, jumps, loads and stores
// that hit their region, wide loads, returns) and calls no function, so the
// compiler keeps its state in registers. Anything else (helpers, local
// calls, tail calls, atomics, division, shifts by a register) and whatever
// fast refuses (faults, context loads without a frame, the end of the
// budget) goes to the outer loop (slow), which runs that one instruction
// and returns to fast.
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
		if uint(pc) >= uint(len(p.code)) {
			r.setFault(p, pc, faultNoPC, 0, 0)
			return 0
		}
		in := &p.code[pc]
		switch opTable[in.op].form {
		case formLdx, formCtx:
			if !r.slowLdx(p, pc, in, reg) {
				return 0
			}
		case formSt, formStx:
			// The fast level refused it: a fault.
			r.storeFault(p, pc, reg[in.dst]+uint64(int64(in.off)), storeSize(in.op))
			return 0
		case formAtomic:
			if !r.slowAtomic(p, pc, in, h) {
				return 0
			}
		case formJA, formJmpK, formJmpX:
			// Only a backward jump past the budget comes here.
			r.setFault(p, pc, faultBudget, 0, 0)
			return 0
		case formCall, formCallX:
			var ok bool
			if pc, p, ok = r.slowCall(p, pc, in, h); !ok {
				return 0
			}
			continue
		default:
			if !slowALU(in, reg) {
				r.setFault(p, pc, faultInternal, 0, 0)
				return 0
			}
		}
		pc++
	}
}

// slowLdx runs a load the fast level left: the context, or a fault.
func (r *Runner) slowLdx(p *Program, pc int, in *insn, reg *[256]uint64) bool {
	n, signed := loadSize(in.op)
	a := reg[in.src] + uint64(int64(in.off))
	if b := loadSlice(r.regions, a, n); b != nil {
		// The fast level refused it; cannot happen, but be exact.
		reg[in.dst] = loadValue(b, signed)
		return true
	}
	v, ok := r.slowLoad(p, pc, a, n, signed)
	if ok {
		reg[in.dst] = v
	}
	return ok
}

// slowAtomic runs an atomic read-modify-write; a fault names pc.
func (r *Runner) slowAtomic(p *Program, pc int, in *insn, h *[16]uint64) bool {
	n, _ := loadSize(in.op)
	a := h[in.dst&15] + uint64(int64(in.off))
	b := storeSlice(r.regions, a, n)
	if b == nil {
		r.storeFault(p, pc, a, n)
		return false
	}
	var ok bool
	if n == 4 {
		ok = atomic32(b, in.imm, h, in.src&15)
	} else {
		ok = atomic64(b, in.imm, h, in.src&15)
	}
	if !ok {
		r.setFault(p, pc, faultMisaligned, a, n)
	}
	return ok
}

// slowCall runs a call at pc (helper, tail call, local call, callx) and
// returns where to go on; false: a fault (recorded).
func (r *Runner) slowCall(p *Program, pc int, in *insn, h *[16]uint64) (int, *Program, bool) {
	switch in.op {
	case opCall:
		h[0] = r.callHelper(p, pc, int32(in.imm), h)
	case opTailCall:
		r.hreg = h
		np, ok := r.tailCall(p, pc, h[2], h[3])
		if ok && !r.faulted {
			// The new program replaces the current one in this frame.
			return 0, np, true
		}
	case opCallLocal:
		return r.callLocal(p, pc, int(in.imm), h)
	case opCallX:
		t := h[in.dst&15]
		if t>>32 == regionFunc {
			if uint64(uint32(t)) >= uint64(len(p.code)) || !p.funcs[uint32(t)] { // int(uint32) is negative on 32-bit
				r.setFault(p, pc, faultCallX, t, 0)
				return pc, p, false
			}
			return r.callLocal(p, pc, int(uint32(t)), h)
		}
		if t == 0 || t > maxKnownHelper || !helperImplemented(int32(t)) || int32(t) == helperTailCall {
			r.setFault(p, pc, faultCallX, t, 0)
			return pc, p, false
		}
		h[0] = r.callHelper(p, pc, int32(t), h)
	}
	return pc + 1, p, !r.faulted
}

// callLocal enters the subprogram at target from a call at pc; a backward
// call charges the budget, as a backward jump does.
func (r *Runner) callLocal(p *Program, pc, target int, h *[16]uint64) (int, *Program, bool) {
	if !r.pushFrame(p, pc, h) {
		return pc, p, false
	}
	if target <= pc && !r.charge(p, pc, target) {
		return pc, p, false
	}
	return target, p, true
}

// slowALU runs the ALU operations kept off the fast level: division and
// shifts by a register. On amd64 they need fixed registers (DX:AX, CL),
// which would make the compiler spill the fast loop's state on every
// instruction. It reports false for an operation it does not know.
func slowALU(in *insn, reg *[256]uint64) bool {
	switch in.op {
	// Code generated by interp_gen_test.go from opTable: the slow level's ALU cases. DO NOT EDIT.
	case opDiv64K:
		reg[in.dst] = udiv64(reg[in.dst], uint64(in.imm))
	case opDiv64X:
		reg[in.dst] = udiv64(reg[in.dst], reg[in.src])
	case opSDiv64K:
		reg[in.dst] = sdiv64(reg[in.dst], uint64(in.imm))
	case opSDiv64X:
		reg[in.dst] = sdiv64(reg[in.dst], reg[in.src])
	case opMod64K:
		reg[in.dst] = umod64(reg[in.dst], uint64(in.imm))
	case opMod64X:
		reg[in.dst] = umod64(reg[in.dst], reg[in.src])
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
	case opSDiv32K:
		reg[in.dst] = uint64(sdiv32(uint32(reg[in.dst]), uint32(in.imm)))
	case opSDiv32X:
		reg[in.dst] = uint64(sdiv32(uint32(reg[in.dst]), uint32(reg[in.src])))
	case opMod32K:
		reg[in.dst] = uint64(umod32(uint32(reg[in.dst]), uint32(in.imm)))
	case opMod32X:
		reg[in.dst] = uint64(umod32(uint32(reg[in.dst]), uint32(reg[in.src])))
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
	// End of generated code: the slow level's ALU cases.
	default:
		return false
	}
	return true
}

// loadSize is the access size of a load (or atomic) and whether it sign-extends.
func loadSize(o op) (uint64, bool) {
	return uint64(opTable[o].width), opTable[o].signed
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

// storeSize is the access size of a store.
func storeSize(o op) uint64 { return uint64(opTable[o].width) }

// ldPtr is the address of the n bytes at tagged pointer a when they lie
// inside the region a names (lo <= offset, offset+n <= hi), else nil; stPtr
// checks against whi, for stores. Both inline into fast.
func ldPtr(regs []region, a, n uint64) *byte {
	if a>>32 >= uint64(len(regs)) {
		return nil
	}
	rg := &regs[a>>32]
	if o := a & 0xffffffff; o >= rg.lo && o+n <= rg.hi {
		return at(rg, o)
	}
	return nil
}

func stPtr(regs []region, a, n uint64) *byte {
	if a>>32 >= uint64(len(regs)) {
		return nil
	}
	rg := &regs[a>>32]
	if o := a & 0xffffffff; o >= rg.lo && o+n <= rg.whi {
		return at(rg, o)
	}
	return nil
}

// fast runs the operations opTable marks fast from pc until one needs the
// slow level (or the frame exec started in exits: done). It calls no
// function (its helpers inline), so the compiler keeps its state in
// registers. It returns where to go on and the program running there.
//
// Keep every case cheap in registers: one case that needs many values at
// once makes the compiler spill loop state on every instruction. After a
// change, check that the dispatch sequence (go tool objdump -s
// 'Runner..fast$') has no stack stores.
func (r *Runner) fast(p *Program, pc, base int, reg *[256]uint64) (int, *Program, bool) {
	code := r.stream(p)
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
		// The ALU and jump rows opTable marks fast; a taken jump goes to
		// jump, below.
		// Code generated by interp_gen_test.go from opTable: the fast level's ALU and jump cases. DO NOT EDIT.
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
		case opLsh64K:
			reg[in.dst] <<= uint64(in.imm)
		case opRsh64K:
			reg[in.dst] >>= uint64(in.imm)
		case opArsh64K:
			reg[in.dst] = uint64(int64(reg[in.dst]) >> uint64(in.imm))
		case opXor64K:
			reg[in.dst] ^= uint64(in.imm)
		case opXor64X:
			reg[in.dst] ^= reg[in.src]
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
		case opLsh32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) << uint32(in.imm))
		case opRsh32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) >> uint32(in.imm))
		case opArsh32K:
			reg[in.dst] = uint64(uint32(int32(reg[in.dst]) >> uint32(in.imm)))
		case opXor32K:
			reg[in.dst] = uint64(uint32(reg[in.dst]) ^ uint32(in.imm))
		case opXor32X:
			reg[in.dst] = uint64(uint32(reg[in.dst]) ^ uint32(reg[in.src]))
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
		case opJA:
			goto jump
		case opJEQ64K:
			if reg[in.dst] == uint64(in.imm) {
				goto jump
			}
		case opJEQ64X:
			if reg[in.dst] == reg[in.src] {
				goto jump
			}
		case opJGT64K:
			if reg[in.dst] > uint64(in.imm) {
				goto jump
			}
		case opJGT64X:
			if reg[in.dst] > reg[in.src] {
				goto jump
			}
		case opJGE64K:
			if reg[in.dst] >= uint64(in.imm) {
				goto jump
			}
		case opJGE64X:
			if reg[in.dst] >= reg[in.src] {
				goto jump
			}
		case opJSET64K:
			if reg[in.dst]&uint64(in.imm) != 0 {
				goto jump
			}
		case opJSET64X:
			if reg[in.dst]&reg[in.src] != 0 {
				goto jump
			}
		case opJNE64K:
			if reg[in.dst] != uint64(in.imm) {
				goto jump
			}
		case opJNE64X:
			if reg[in.dst] != reg[in.src] {
				goto jump
			}
		case opJSGT64K:
			if int64(reg[in.dst]) > in.imm {
				goto jump
			}
		case opJSGT64X:
			if int64(reg[in.dst]) > int64(reg[in.src]) {
				goto jump
			}
		case opJSGE64K:
			if int64(reg[in.dst]) >= in.imm {
				goto jump
			}
		case opJSGE64X:
			if int64(reg[in.dst]) >= int64(reg[in.src]) {
				goto jump
			}
		case opJLT64K:
			if reg[in.dst] < uint64(in.imm) {
				goto jump
			}
		case opJLT64X:
			if reg[in.dst] < reg[in.src] {
				goto jump
			}
		case opJLE64K:
			if reg[in.dst] <= uint64(in.imm) {
				goto jump
			}
		case opJLE64X:
			if reg[in.dst] <= reg[in.src] {
				goto jump
			}
		case opJSLT64K:
			if int64(reg[in.dst]) < in.imm {
				goto jump
			}
		case opJSLT64X:
			if int64(reg[in.dst]) < int64(reg[in.src]) {
				goto jump
			}
		case opJSLE64K:
			if int64(reg[in.dst]) <= in.imm {
				goto jump
			}
		case opJSLE64X:
			if int64(reg[in.dst]) <= int64(reg[in.src]) {
				goto jump
			}
		case opJEQ32K:
			if uint32(reg[in.dst]) == uint32(in.imm) {
				goto jump
			}
		case opJEQ32X:
			if uint32(reg[in.dst]) == uint32(reg[in.src]) {
				goto jump
			}
		case opJGT32K:
			if uint32(reg[in.dst]) > uint32(in.imm) {
				goto jump
			}
		case opJGT32X:
			if uint32(reg[in.dst]) > uint32(reg[in.src]) {
				goto jump
			}
		case opJGE32K:
			if uint32(reg[in.dst]) >= uint32(in.imm) {
				goto jump
			}
		case opJGE32X:
			if uint32(reg[in.dst]) >= uint32(reg[in.src]) {
				goto jump
			}
		case opJSET32K:
			if uint32(reg[in.dst])&uint32(in.imm) != 0 {
				goto jump
			}
		case opJSET32X:
			if uint32(reg[in.dst])&uint32(reg[in.src]) != 0 {
				goto jump
			}
		case opJNE32K:
			if uint32(reg[in.dst]) != uint32(in.imm) {
				goto jump
			}
		case opJNE32X:
			if uint32(reg[in.dst]) != uint32(reg[in.src]) {
				goto jump
			}
		case opJSGT32K:
			if int32(reg[in.dst]) > int32(in.imm) {
				goto jump
			}
		case opJSGT32X:
			if int32(reg[in.dst]) > int32(reg[in.src]) {
				goto jump
			}
		case opJSGE32K:
			if int32(reg[in.dst]) >= int32(in.imm) {
				goto jump
			}
		case opJSGE32X:
			if int32(reg[in.dst]) >= int32(reg[in.src]) {
				goto jump
			}
		case opJLT32K:
			if uint32(reg[in.dst]) < uint32(in.imm) {
				goto jump
			}
		case opJLT32X:
			if uint32(reg[in.dst]) < uint32(reg[in.src]) {
				goto jump
			}
		case opJLE32K:
			if uint32(reg[in.dst]) <= uint32(in.imm) {
				goto jump
			}
		case opJLE32X:
			if uint32(reg[in.dst]) <= uint32(reg[in.src]) {
				goto jump
			}
		case opJSLT32K:
			if int32(reg[in.dst]) < int32(in.imm) {
				goto jump
			}
		case opJSLT32X:
			if int32(reg[in.dst]) < int32(reg[in.src]) {
				goto jump
			}
		case opJSLE32K:
			if int32(reg[in.dst]) <= int32(in.imm) {
				goto jump
			}
		case opJSLE32X:
			if int32(reg[in.dst]) <= int32(reg[in.src]) {
				goto jump
			}
		// End of generated code: the fast level's ALU and jump cases.

		// Loads and stores that hit their region; the others leave for
		// the slow level, which reports the fault.
		// Code generated by interp_gen_test.go from opTable: the fast level's load and store cases. DO NOT EDIT.
		case opLdxB:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 1)
			if m == nil {
				break fast
			}
			reg[in.dst] = uint64(*m)
		case opLdxH:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			reg[in.dst] = rd16(m)
		case opLdxW:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 4)
			if m == nil {
				break fast
			}
			reg[in.dst] = rd32(m)
		case opLdxDW:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 8)
			if m == nil {
				break fast
			}
			reg[in.dst] = rd64(m)
		case opLdxSB:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 1)
			if m == nil {
				break fast
			}
			reg[in.dst] = uint64(int64(int8(*m)))
		case opLdxSH:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			reg[in.dst] = uint64(int64(int16(rd16(m))))
		case opLdxSW:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 4)
			if m == nil {
				break fast
			}
			reg[in.dst] = uint64(int64(int32(rd32(m))))
		case opStB:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 1)
			if m == nil {
				break fast
			}
			*m = byte(in.imm)
		case opStH:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			wr16(m, uint64(in.imm))
		case opStW:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 4)
			if m == nil {
				break fast
			}
			wr32(m, uint64(in.imm))
		case opStDW:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 8)
			if m == nil {
				break fast
			}
			wr64(m, uint64(in.imm))
		case opStxB:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 1)
			if m == nil {
				break fast
			}
			*m = byte(reg[in.src])
		case opStxH:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			wr16(m, reg[in.src])
		case opStxW:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 4)
			if m == nil {
				break fast
			}
			wr32(m, reg[in.src])
		case opStxDW:
			m := stPtr(r.regions, reg[in.dst]+uint64(int64(in.off)), 8)
			if m == nil {
				break fast
			}
			wr64(m, reg[in.src])
		// End of generated code: the fast level's load and store cases.

		// Context loads specialised at load: the frame's fields as packet
		// pointers, tagged with imm (regionPacket<<32, set by
		// specialiseCtx: a constant here would make the compiler keep it
		// in a register and reload it at the end of every case). A bare
		// run has no frame: the slow level loads.
		case opLdCtxData:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.Data)
		case opLdCtxDataEnd:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataEnd)
		case opLdCtxDataMeta:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataMeta)

		// Wide loads take two slots.
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

		// Fused operations (interp_fuse.go). One that leaves for the
		// slow level sets pc to the instruction that needs it first; one
		// that jumps sets pc to its jump instruction, which the budget
		// charge counts from.
		case opFMovAdd64:
			reg[in.dst] = reg[in.src] + uint64(in.imm)
			pc += 2
			continue
		case opFMovAnd64:
			reg[in.dst] = reg[in.src] & uint64(in.imm)
			pc += 2
			continue
		case opFMovRsh64:
			reg[in.dst] = reg[in.src] >> uint64(in.imm)
			pc += 2
			continue
		case opFMovLsh64:
			reg[in.dst] = reg[in.src] << uint64(in.imm)
			pc += 2
			continue
		case opFBound:
			v := reg[in.src] + uint64(in.imm)
			reg[in.dst] = v
			if v > reg[in.x] {
				pc += 2
				goto jump
			}
			pc += 3
			continue
		case opFAddJgt:
			reg[in.dst] += uint64(in.imm)
			pc++
			if reg[in.dst] > reg[in.src] {
				goto jump
			}
		case opFAndJeq:
			reg[in.dst] &= uint64(in.imm)
			pc++
			if reg[in.dst] == uint64(in.imm2) {
				goto jump
			}
		case opFAndJne:
			reg[in.dst] &= uint64(in.imm)
			pc++
			if reg[in.dst] != uint64(in.imm2) {
				goto jump
			}
		case opFLdxBJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m)
			reg[in.dst] = v
			pc++
			if v == uint64(in.imm) {
				goto jump
			}
		case opFLdxBJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m)
			reg[in.dst] = v
			pc++
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLdxHJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v
			pc++
			if v == uint64(in.imm) {
				goto jump
			}
		case opFLdxHJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v
			pc++
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLdxWJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 4)
			if m == nil {
				break fast
			}
			v := rd32(m)
			reg[in.dst] = v
			pc++
			if v == uint64(in.imm) {
				goto jump
			}
		case opFLdxWJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 4)
			if m == nil {
				break fast
			}
			v := rd32(m)
			reg[in.dst] = v
			pc++
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLshOr64:
			reg[in.dst] <<= uint64(in.imm)
			reg[in.dst] |= reg[in.x]
			pc += 2
			continue
		case opFLshOr32:
			reg[in.dst] = uint64(uint32(reg[in.dst])<<uint32(in.imm) | uint32(reg[in.x]))
			pc += 2
			continue
		case opFMovJeq64:
			reg[in.x] = uint64(in.imm)
			pc++
			if reg[in.dst] == uint64(in.imm2) {
				goto jump
			}
		case opFMovJne64:
			reg[in.x] = uint64(in.imm)
			pc++
			if reg[in.dst] != uint64(in.imm2) {
				goto jump
			}
		case opFMovJeq32:
			reg[in.x] = uint64(in.imm)
			pc++
			if uint32(reg[in.dst]) == uint32(in.imm2) {
				goto jump
			}
		case opFMovJne32:
			reg[in.x] = uint64(in.imm)
			pc++
			if uint32(reg[in.dst]) != uint32(in.imm2) {
				goto jump
			}
		case opFMovJgtX:
			reg[in.x] = uint64(in.imm)
			pc++
			if reg[in.dst] > reg[in.src] {
				goto jump
			}
		case opFMovAndJeq:
			reg[in.dst] = reg[in.src] & uint64(in.imm)
			pc += 2
			if reg[in.dst] == uint64(in.imm2) {
				goto jump
			}
		case opFMovAndJne:
			reg[in.dst] = reg[in.src] & uint64(in.imm)
			pc += 2
			if reg[in.dst] != uint64(in.imm2) {
				goto jump
			}
		case opFLshAddX:
			v := reg[in.dst] << uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] += v
			pc += 2
			continue
		case opFAddLdxB:
			a := reg[in.src] + uint64(in.imm)
			reg[in.src] = a
			pc++
			m := ldPtr(r.regions, a+uint64(in.imm2), 1)
			if m == nil {
				break fast
			}
			reg[in.dst] = uint64(*m)
		case opFAddLdxH:
			a := reg[in.src] + uint64(in.imm)
			reg[in.src] = a
			pc++
			m := ldPtr(r.regions, a+uint64(in.imm2), 2)
			if m == nil {
				break fast
			}
			reg[in.dst] = rd16(m)
		case opFAddLdxW:
			a := reg[in.src] + uint64(in.imm)
			reg[in.src] = a
			pc++
			m := ldPtr(r.regions, a+uint64(in.imm2), 4)
			if m == nil {
				break fast
			}
			reg[in.dst] = rd32(m)
		case opFBytes16LE:
			// One check for both bytes; if it fails the first load
			// leaves for the slow level, which runs it alone.
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			continue
		case opFBytes16BE:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off)), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v >> 8
			reg[in.x] = uint64(bits.ReverseBytes16(uint16(v)))
			pc += 4
			continue
		case opFBytes16Jeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			if v == uint64(in.imm) {
				goto jump
			}
		case opFBytes16Jne:
			m := ldPtr(r.regions, reg[in.src]+uint64(in.imm2), 2)
			if m == nil {
				break fast
			}
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLdxBAndJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v == uint64(in.imm2) {
				goto jump
			}
		case opFLdxBAndJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v != uint64(in.imm2) {
				goto jump
			}
		case opFLdxHAndJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 2)
			if m == nil {
				break fast
			}
			v := rd16(m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v == uint64(in.imm2) {
				goto jump
			}
		case opFLdxHAndJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 2)
			if m == nil {
				break fast
			}
			v := rd16(m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v != uint64(in.imm2) {
				goto jump
			}
		case opFLdxBMovAndJeq:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m)
			f := v & uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] = f
			pc += 3
			if f == uint64(in.imm2) {
				goto jump
			}
		case opFLdxBMovAndJne:
			m := ldPtr(r.regions, reg[in.src]+uint64(int64(in.off2)), 1)
			if m == nil {
				break fast
			}
			v := uint64(*m)
			f := v & uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] = f
			pc += 3
			if f != uint64(in.imm2) {
				goto jump
			}
		case opFMovCtxEndData:
			// The move first: the slow level runs loads, not moves.
			reg[in.x] = uint64(int64(in.off2))
			pc++
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataEnd)
			reg[in.src] = uint64(in.imm) | uint64(r.frame.Data)
			pc += 2
			continue
		case opFAndMovJgt:
			v, k := reg[in.dst]&uint64(in.imm), uint64(in.imm2)
			reg[in.dst] = v
			reg[in.x] = k
			pc += 2
			if k > v {
				goto jump
			}
		case opFCtxDataEnd:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.Data)
			reg[in.x] = uint64(in.imm) | uint64(r.frame.DataEnd)
			pc += 2
			continue
		case opFCtxEndData:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataEnd)
			reg[in.x] = uint64(in.imm) | uint64(r.frame.Data)
			pc += 2
			continue

		// Packet loads provenIn proved in bounds (interp_fuse.go): as
		// above, without the check.
		case opLdxBPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off)))
			reg[in.dst] = uint64(*m)
		case opLdxHPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off)))
			reg[in.dst] = rd16(m)
		case opLdxWPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off)))
			reg[in.dst] = rd32(m)
		case opLdxDWPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off)))
			reg[in.dst] = rd64(m)
		case opFLdxBJeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := uint64(*m)
			reg[in.dst] = v
			pc++
			if v == uint64(in.imm) {
				goto jump
			}
		case opFLdxBJnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := uint64(*m)
			reg[in.dst] = v
			pc++
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLdxHJeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := rd16(m)
			reg[in.dst] = v
			pc++
			if v == uint64(in.imm) {
				goto jump
			}
		case opFLdxHJnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := rd16(m)
			reg[in.dst] = v
			pc++
			if v != uint64(in.imm) {
				goto jump
			}
		case opFAddLdxBPk:
			a := reg[in.src] + uint64(in.imm)
			reg[in.src] = a
			pc++
			m := pktAt(r.regions, a+uint64(in.imm2))
			reg[in.dst] = uint64(*m)
		case opFAddLdxHPk:
			a := reg[in.src] + uint64(in.imm)
			reg[in.src] = a
			pc++
			m := pktAt(r.regions, a+uint64(in.imm2))
			reg[in.dst] = rd16(m)
		case opFBytes16LEPk:
			// One check for both bytes; if it fails the first load
			// leaves for the slow level, which runs it alone.
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off)))
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			continue
		case opFBytes16JeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			if v == uint64(in.imm) {
				goto jump
			}
		case opFBytes16JnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(in.imm2))
			v := rd16(m)
			reg[in.dst] = v & 0xff
			reg[in.x] = v
			pc += 4
			if v != uint64(in.imm) {
				goto jump
			}
		case opFLdxBAndJeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := uint64(*m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v == uint64(in.imm2) {
				goto jump
			}
		case opFLdxBAndJnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := uint64(*m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v != uint64(in.imm2) {
				goto jump
			}
		case opFLdxHAndJeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := rd16(m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v == uint64(in.imm2) {
				goto jump
			}
		case opFLdxHAndJnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := rd16(m) & uint64(in.imm)
			reg[in.dst] = v
			pc += 2
			if v != uint64(in.imm2) {
				goto jump
			}
		case opFLdxBMovAndJeqPk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := uint64(*m)
			f := v & uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] = f
			pc += 3
			if f == uint64(in.imm2) {
				goto jump
			}
		case opFLdxBMovAndJnePk:
			m := pktAt(r.regions, reg[in.src]+uint64(int64(in.off2)))
			v := uint64(*m)
			f := v & uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] = f
			pc += 3
			if f != uint64(in.imm2) {
				goto jump
			}

		// A first operation, then a bounds check (bound, below).
		case opFMovCtxBound:
			reg[in.x] = uint64(int64(in.off2))
			pc++
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataEnd)
			reg[in.src] = uint64(in.imm) | uint64(r.frame.Data)
			pc += 2
			goto bound
		case opFCtxDataBound:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.Data)
			reg[in.x] = uint64(in.imm) | uint64(r.frame.DataEnd)
			pc += 2
			goto bound
		case opFCtxEndBound:
			if r.frame == nil {
				break fast
			}
			reg[in.dst] = uint64(in.imm) | uint64(r.frame.DataEnd)
			reg[in.x] = uint64(in.imm) | uint64(r.frame.Data)
			pc += 2
			goto bound
		case opFLshAddBound:
			v := reg[in.dst] << uint64(in.imm)
			reg[in.dst] = v
			reg[in.x] += v
			pc += 2
			goto bound
		case opFAddXBound:
			reg[in.dst] += reg[in.src]
			pc++
			goto bound

		case opExit:
			if r.depth == base {
				return pc, p, true
			}
			r.depth--
			f := &r.frames[r.depth]
			reg[6], reg[7], reg[8], reg[9] = f.saved[0], f.saved[1], f.saved[2], f.saved[3]
			reg[10] = f.fp
			p = f.prog
			code = r.stream(p)
			pc = f.ret
			continue
		default:
			break fast
		}
		pc++
		continue
	bound:
		// The bounds check of a fused operation, at pc: y = z + imm2; if
		// y > w goto off.
		reg[in.y] = reg[in.z] + uint64(in.imm2)
		if reg[in.y] > reg[in.w] {
			pc += 2
			goto jump
		}
		pc += 3
		continue
	jump:
		// A taken jump; a backward one charges the instruction budget
		// the distance back plus one, and past the budget leaves for the
		// slow level, which reports the fault at pc.
		t := int(in.off) // read once: the budget store may alias code
		if t <= pc {
			r.budget -= int64(pc-t) + 1
			if r.budget < 0 {
				break fast
			}
		}
		pc = t
		// A jump to an exit of the frame exec started in (clang's shared
		// return block) ends the round here instead of dispatching it.
		if uint(t) < uint(len(code)) && code[t].op == opExit && r.depth == base {
			return t, p, true
		}
	}
	return pc, p, false
}
