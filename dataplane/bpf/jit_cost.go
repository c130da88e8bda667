//go:build linux && (amd64 || arm64)

package bpf

// Per-frame cost of the native array lookup (issue 21): what the backends
// may leave out of bpf_map_lookup_elem on an array known at compile time
// because an analysis of the instructions before the call proves it.

// stackKeyOff reports the offset from r10 that register reg holds at the
// call at pc when, going back in a straight line (no jump target in
// between, so no other path joins; conditional jumps write no register and
// may be passed), reg was last set by a copy of r10 (mov64 reg, r10)
// followed only by additions of constants (add64 reg, K), and nothing else
// wrote it. r10 is never written and points into the stack region (see
// stackProven), so an n-byte access at reg+0 then is the access at
// r10+off, which needs no region check when stackProven(10, off, n). The
// interpreter keeps the BPF registers across an exit to Go, so a re-entry
// in between does not change what reg holds.
func stackKeyOff(plain []insn, targets []bool, pc int, reg uint8) (off int32, ok bool) {
	var sum int64
	for q := pc - 1; q >= 0 && !targets[q+1]; q-- {
		in := plain[q]
		switch {
		case in.op >= opJEQ64K && in.op <= opJSLE32X:
			continue
		case !straightLine(in.op) || opTable[in.op].form == formLegacy:
			return 0, false
		case !writesDst(in) || in.dst != reg:
			continue
		case in.op == opAdd64K:
			sum += in.imm
			if sum < -stackSize || sum > stackSize {
				return 0, false
			}
		case in.op == opMov64X && in.src == 10:
			return int32(sum), true
		default:
			return 0, false
		}
	}
	return 0, false
}

// lookupFeeds reports whether the native array lookup at call feeds the
// value access after it: going forward in a straight line (no jump target,
// so no other path joins) over instructions that keep the scratch
// registers (keepsScratch), the first load or store goes through the
// call's result (valueOrigin). Such an access may then use the region
// table entry and buffer the lookup leaves in the scratch registers
// (lookupFresh) instead of finding them from the pointer.
func lookupFeeds(plain []insn, targets []bool, call int) bool {
	_, ok := lookupFeedsAt(plain, targets, call)
	return ok
}

// lookupFeedsAt is lookupFeeds with the access it finds.
func lookupFeedsAt(plain []insn, targets []bool, call int) (at int, ok bool) {
	for p := call + 1; p < len(plain) && !targets[p]; p++ {
		in := plain[p]
		switch {
		case isLoad(in.op):
			q, ok := valueOrigin(plain, targets, p, in.src)
			return p, ok && q == call
		case isStore(in.op):
			q, ok := valueOrigin(plain, targets, p, in.dst)
			return p, ok && q == call
		case !keepsScratch(in, opTable[in.op].form):
			return 0, false
		}
	}
	return 0, false
}

// lookupFresh reports the call whose native lookup left the scratch
// registers as the access at pc may use them: going back from pc in a
// straight line over instructions that keep them, the first instruction
// that does not is a call for which left says the lookup left them. The
// access must go through that call's result (valueOrigin finds the same
// call: it walks the same straight line back to the nearest call).
func lookupFresh(plain []insn, targets []bool, pc int, left func(call int) bool) bool {
	for q := pc - 1; q >= 0 && !targets[q+1]; q-- {
		in := plain[q]
		if in.op == opCall {
			return left(q)
		}
		if !keepsScratch(in, opTable[in.op].form) {
			return false
		}
	}
	return false
}

// ctxAfterCtx reports whether the context load at pc comes right after
// another (data, data_end or data_meta: the backends' emitCtx) with no
// jump target at pc, so that the frame and the packet region's tag that
// load left in the scratch registers are the same at pc: native code
// reaches pc from it only, or from Go after it left for the slow path (the
// backend then re-enters pc through a stub that loads them again).
func ctxAfterCtx(plain []insn, targets []bool, pc int) bool {
	return pc > 0 && !targets[pc] && opTable[plain[pc-1].op].form == formCtx
}
