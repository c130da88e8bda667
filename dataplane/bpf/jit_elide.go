//go:build linux && (amd64 || arm64)

package bpf

// Elided value regions. clang's usual counter, cnt = lookup(&key); if
// (cnt) *cnt += 1, uses the lookup's result for a NULL check and accesses
// the value analysis proves in bounds, then drops it. When native code
// compiles those accesses with no check at all (jitUnchecked: they address
// the value's first byte the lookup leaves in a scratch register), nothing
// ever reads the region the lookup would make for the pointer, so the
// lookup may leave the region table alone and give r0 a non-NULL stand-in
// (regionNone's number, offset 1: any checked access through it faults).
// valueElided proves that nothing else can see r0 while it holds the
// stand-in:
//   - the call is followed at once by `if r0 == 0 goto T` (the NULL
//     check), then, in a straight line with no jump target (nothing joins
//     from elsewhere), only loads and stores through r0 in the value's
//     bounds (valueIn; a store of r0 itself is refused) and instructions
//     that neither touch r0 nor leave native code (keepsScratch's ALU
//     forms, no division): no exit to Go happens while r0 is live, so Go
//     never reads the stand-in;
//   - r0 is dead where that straight line ends: every path from there
//     writes r0 before reading it (regDead), so no compare, helper
//     argument, stack spill, copy or return sees it. T needs no such
//     check: the NULL check jumps there only with r0 = 0 (the real NULL,
//     no stand-in), and a path from the straight line's end that reaches
//     T is one regDead walks;
//   - the backend then checks that it did compile every one of those
//     accesses with no check (jitUnchecked.accs), else it refuses the
//     program (an access compiled otherwise would read the stand-in).
// A slow path at the call itself runs the helper in Go, which makes the
// region as the interpreter does, and re-enters through the lookup's stub.
// What differs from the interpreter is only the number the next region
// gets (one lower) and the table's length: a program sees those only by
// forging a pointer from an integer or leaking one as an integer, both of
// which the kernel's verifier refuses; a forged number still goes through
// the table's checks, so memory safety holds.

// elideMaxSteps bounds regDead's walk.
const elideMaxSteps = 64

// valueElided reports the accesses through r0 after the native lookup of
// a at call when the lookup's region may be left out (see above).
func valueElided(plain []insn, targets []bool, call int, a jitArray) (accs []int, ok bool) {
	if call+1 >= len(plain) || int32(plain[call].imm) != helperMapLookupElem || targets[call+1] {
		return nil, false
	}
	nc := plain[call+1]
	if nc.op != opJEQ64K || nc.dst != 0 || nc.imm != 0 || nc.back != 0 {
		return nil, false
	}
	p := call + 2
	for ; p < len(plain) && !targets[p]; p++ {
		in := plain[p]
		n := int32(opTable[in.op].width)
		switch {
		case isLoad(in.op) && in.src == 0 && in.dst != 0:
			if !valueIn(a, in.off, n, false) {
				return nil, false
			}
			accs = append(accs, p)
			continue
		case isStore(in.op) && in.dst == 0 && (opTable[in.op].form == formSt || in.src != 0):
			if !valueIn(a, in.off, n, true) {
				return nil, false
			}
			accs = append(accs, p)
			continue
		}
		if !elideKeeps(in) {
			break
		}
	}
	steps := elideMaxSteps
	if len(accs) == 0 || !regDead(plain, p, 0, &steps) {
		return nil, false
	}
	return accs, true
}

// elideKeeps reports whether in, inside valueElided's straight line,
// neither reads nor writes r0 nor can leave native code.
func elideKeeps(in insn) bool {
	f := opTable[in.op].form
	switch f {
	case formALUK, formALUX, formNeg, formMovSX, formEnd:
	default:
		return false
	}
	if !keepsScratch(in, f) || in.dst == 0 {
		return false
	}
	return (f != formALUX && f != formMovSX) || in.src != 0
}

// regDead reports whether every path from pc writes reg before reading
// it, walking at most *steps instructions (forward jumps followed, both
// ways of a conditional one); anything it does not know counts as a read.
func regDead(plain []insn, pc int, reg uint8, steps *int) bool {
	for ; pc >= 0 && pc < len(plain); pc++ {
		if *steps--; *steps < 0 {
			return false
		}
		in := plain[pc]
		f := opTable[in.op].form
		mov := opTable[in.op].code.operation() == aluMov
		switch f {
		case formExit:
			return reg != 0
		case formALUK, formNeg, formEnd, formDivK:
			if in.dst == reg {
				return mov && f == formALUK
			}
		case formALUX, formDivX, formMovSX:
			if in.src == reg {
				return false
			}
			if in.dst == reg {
				return f == formMovSX || (mov && f == formALUX)
			}
		case formLdx, formCtx:
			if in.src == reg {
				return false
			}
			if in.dst == reg {
				return true
			}
		case formSt, formStx:
			if in.dst == reg || (f == formStx && in.src == reg) {
				return false
			}
		case formJA:
			if in.back != 0 {
				return false
			}
			pc = int(in.off) - 1
		case formJmpK, formJmpX:
			if in.dst == reg || (f == formJmpX && in.src == reg) || in.back != 0 {
				return false
			}
			if !regDead(plain, int(in.off), reg, steps) {
				return false
			}
		case formCall:
			// A helper reads r1-r5 and writes r0-r5; a tail call
			// (opTailCall) starts its program with the registers it
			// finds, a local call or kfunc may read any: reads.
			if in.op != opCall || reg >= 1 && reg <= 5 {
				return false
			}
			if reg == 0 {
				return true
			}
		default:
			return false
		}
	}
	return false
}
