package bpf

// pktReuse reports whether the proven packet access at pc through register
// base may address the packet with the buffer (and, on amd64, the offset)
// that the proven packet access before it left in the scratch registers,
// instead of loading them again. It may when, going back from pc in a
// straight line (no instruction in between is a jump target, so nothing
// enters the run from elsewhere), the instructions are ones that neither
// leave for Go (native code is re-entered only after an instruction that
// did, or at a target) nor use a scratch register (keepsScratch), nor
// write base, up to a proven packet load or store through base, which left
// them. Such an access has no exit to Go either, so native code is never
// re-entered between the two. A proven access to global data (which has no
// exit to Go: jitBoundColl) ends the walk too, having left its own buffer
// and offset in the scratch registers.
func pktReuse(plain []insn, targets []bool, proven []int32, pc int, base uint8) bool {
	return scratchReuse(plain, targets, pc, base, func(q int) bool { return proven[q] == regionPacket })
}

// scratchReuse is the walk of pktReuse and valueReuse: back from pc in a
// straight line over instructions that keep the scratch registers and do
// not write base, to a load or store through base for which left says it
// left them (a load into base itself does not count).
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
		if !keepsScratch(in, f) || opWrites(f) && in.dst == base {
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

// opWrites reports whether an instruction of form f writes its dst register.
func opWrites(f form) bool { return forms[f].writes }
