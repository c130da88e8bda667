package bpf

import "github.com/cilium/ebpf/asm"

// What the range analysis (jit_range.go) tells the backends of each load,
// store and atomic besides its proof: the region its base register points
// into when the analysis knows it, and, for a pointer into global data
// whose value it knows exactly (a lddw of .data, .bss or .rodata plus
// constants), that value.
//
// The region is a guess for the inline check of an access not proven
// (jit_amd64_guess.go, jit_arm64_guess.go): the check still compares the
// pointer's region number and goes to the full check out of line when it
// differs, so a wrong guess costs time, never safety. The exact value is
// a proof: the analysis's state at an instruction holds on every path
// that reaches it, so the register holds that very value and a proven
// access through it addresses the buffer at a constant.

// hintTable is the region of an access guessed in a map value: one of
// the table's entries at or past regionStatic, which one known only at run
// time.
const hintTable = -1

// helperResult is what r0 holds after a call of helper id: a map value
// (or NULL) after a lookup, else nothing known.
func helperResult(id int64) rangeReg {
	if id == int64(asm.FnMapLookupElem) || id == int64(asm.FnMapLookupPercpuElem) {
		return rangeReg{kind: rkValue}
	}
	return rangeReg{}
}

// accessHint is what the analysis knows of the base register of the
// access at an instruction.
type accessHint struct {
	region int32  // regionStack, regionPacket, regionStatic+i, hintTable; 0 when not known
	exact  bool   // the base is region<<32 | off, exactly (global data)
	off    uint32 // the base's offset in the region when exact
}

// rangeIn returns provenIn's proofs and the hint of every access.
func rangeIn(plain []insn, env jitEnv) ([]int32, []accessHint) {
	r := ranger{proven: make([]int32, len(plain)), hints: make([]accessHint, len(plain))}
	if env.coll != nil {
		r.statics = env.coll.statics
	}
	if !r.run(plain, env.funcs) {
		clear(r.proven)
		clear(r.hints)
	}
	return r.proven, r.hints
}

// hint records at pc what s knows of the region register base points
// into.
func (rg *ranger) hint(s *rangeState, pc int, base uint8) {
	if rg.hints == nil || base > 10 {
		return
	}
	r := s.regs[base]
	var h accessHint
	switch r.kind {
	case rkStack:
		h.region = regionStack
	case rkPkt:
		h.region = regionPacket
	case rkValue:
		h.region = hintTable
	case rkStatic:
		idx := uint64(r.v) >> 32
		if idx < regionStatic || idx-regionStatic >= uint64(len(rg.statics)) {
			return
		}
		h = accessHint{region: int32(idx)}
		if r.w == 0 {
			h.exact, h.off = true, uint32(r.v)
		}
	}
	rg.hints[pc] = h
}

// hintAt is the hint of the access at pc (none when the analysis gave
// none).
func (env jitEnv) hintAt(pc int) accessHint {
	if pc < 0 || pc >= len(env.hints) {
		return accessHint{}
	}
	return env.hints[pc]
}

// staticGuess returns the global data region of env's collection that the
// access at pc is guessed in, with the region's buffer and the limit an
// access must end below (hi, or whi for a store): the inline check of
// such an access compares with constants (the region's entry in the
// Runner's table is this one while the code runs: jitBoundColl).
func (env jitEnv) staticGuess(pc int, write bool) (rg int32, limit uint64, ok bool) {
	h := env.hintAt(pc)
	if env.coll == nil || h.region < regionStatic || int(h.region-regionStatic) >= len(env.coll.statics) {
		return 0, 0, false
	}
	reg := env.coll.statics[h.region-regionStatic]
	limit = reg.hi
	if write {
		limit = reg.whi
	}
	if reg.lo != 0 || limit > uint64(len(reg.buf)) || limit > 1<<30 {
		return 0, 0, false
	}
	return h.region, limit, true
}

// exactStatic returns the offset in region rg of the base register of the
// proven access at pc when the analysis knows its value exactly.
func (env jitEnv) exactStatic(pc int, rg int32) (uint32, bool) {
	h := env.hintAt(pc)
	if !h.exact || h.region != rg || rg < regionStatic {
		return 0, false
	}
	return h.off, true
}

// exactLeft is the address of global data the last exact access a backend
// emitted (at pc) left in the scratch register that holds the buffer.
type exactLeft struct {
	pc   int
	addr uint64
	ok   bool
}

// exactReuse returns the address the scratch register still holds at the
// access at pc from the exact access last: it does when, going back from
// pc in a straight line (no jump target in between), the instructions are
// ones that keep the scratch registers and do not leave for Go
// (keepsScratch, jit_scratch.go) up to the load or store at last.pc.
func exactReuse(plain []insn, targets []bool, pc int, last exactLeft) (uint64, bool) {
	if !last.ok {
		return 0, false
	}
	for q := pc - 1; q >= 0; q-- {
		if targets[q+1] {
			return 0, false
		}
		in := plain[q]
		if isLoad(in.op) || isStore(in.op) {
			return last.addr, q == last.pc
		}
		if !keepsScratch(in, opTable[in.op].form) {
			return 0, false
		}
	}
	return 0, false
}
