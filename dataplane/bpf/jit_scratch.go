package bpf

// scratchReuse is the walk of valueReuse (an access reusing the buffer and
// offset the one before it left in the scratch registers): back from pc in
// a straight line (no instruction in between is a jump target, so nothing
// enters the run from elsewhere) over instructions that keep the scratch
// registers, leave not for Go and do not write base, to a load or store
// through base for which left says it left them (a load into base itself
// does not count).
func scratchReuse(plain []insn, targets []bool, pc int, base uint8, left func(q int) bool) bool {
	for q := pc - 1; q >= 0; q-- {
		if targets[q+1] {
			return false
		}
		in := plain[q]
		f := opTable[in.op].form
		if (isLoad(in.op) || isStore(in.op)) && left(q) {
			if isLoad(in.op) {
				return in.src == base && in.dst != base
			}
			return in.dst == base
		}
		if !keepsScratch(in, f) || writesDst(in) && in.dst == base {
			return false
		}
	}
	return false
}

// keepsScratch reports whether the backends emit in without a scratch
// register and without an exit to Go: ALU operations other than shifts by
// a register (amd64 saves RCX in a scratch) and divisions, moves, byte
// swaps, wide loads of constants, and forward conditional jumps (a
// backward one charges the budget and may leave for Go).
func keepsScratch(in insn, f form) bool {
	switch f {
	case formALUK, formNeg, formMovSX, formEnd, formLddw:
		return true
	case formALUX:
		switch opTable[in.op].code.operation() {
		case aluLsh, aluRsh, aluArsh:
			return false
		}
		return true
	case formJmpK, formJmpX:
		return in.back == 0
	}
	return false
}

// writesDst reports whether in writes its dst register. opNop, the
// second slot of an lddw (and le64, which changes no bit), writes none
// although its table row (le64's, dst r0) has a form that writes: the
// walks back from an access that ask whether a register still holds
// what it held (valueOrigin, scratchReuse, stackKeyOff) would otherwise
// lose r0 at every lddw, such as the load of a global that clang puts
// between a lookup and the counter it bumps (xdp-bench's nr_cpus).
func writesDst(in insn) bool { return in.op != opNop && forms[opTable[in.op].form].writes }
