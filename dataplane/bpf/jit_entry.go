package bpf

// The start of a native run. The interpreter starts every run with r0-r9
// zero but r1 (the context) and r10 (the frame), and a program that reads
// a register before writing it reads that 0 (doc.go: xnic accepts such
// programs; the kernel's verifier refuses them). The entries from Go
// (jitEnterRun, jitEnterBurst) set r1 and r10 only: the code starts with a
// prologue that zeroes the registers the main function may read before it
// writes them (entryZero), usually none, since a compiled program writes
// each register before it reads it. The prologue sits before the first
// instruction's code: a native tail call jumps past it (jitProg.pc0), as
// the interpreter's tail call keeps the registers.

// regsAll is the set r0-r9.
const regsAll = uint16(1)<<10 - 1

// entryZero is the set of registers (bit i: ri, of r0-r9) that the main
// function of plain may read, on some path from its first instruction,
// before every path to that read has written it: what a run's start must
// zero. It is conservative: a call of anything that runs program code
// (bpf-to-bpf calls, callbacks, tail calls) or of something it does not
// know reads every register not written yet, and an operation counts as
// writing only the registers it always writes.
func entryZero(plain []insn) uint16 {
	const unknown = uint16(1) << 15 // "no path reaches here yet"
	written := make([]uint16, len(plain))
	for i := range written {
		written[i] = unknown
	}
	written[0] = 1 << 1 // r1, the context
	var zero uint16
	work := []int{0}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		in, w := plain[pc], written[pc]
		reads, writes := regUse(in)
		zero |= reads &^ w
		w |= writes
		for _, next := range successors(plain, pc) {
			if next < 0 || next >= len(plain) {
				continue
			}
			old := written[next]
			nw := w
			if old != unknown {
				nw &= old // written on every path
			}
			if nw != old {
				written[next] = nw
				work = append(work, next)
			}
		}
	}
	return zero & regsAll
}

// successors are the instructions control may go to after pc (none after
// an exit), within the function: a call returns to the next instruction.
func successors(plain []insn, pc int) []int {
	in := plain[pc]
	switch {
	case in.op == opExit:
		return nil
	case in.op == opJA:
		return []int{int(in.off)}
	case in.op >= opJEQ64K && in.op <= opJSLE32X:
		return []int{pc + 1, int(in.off)}
	}
	return []int{pc + 1}
}

// regUse is the set of registers in reads before it writes any, and the
// set it always writes.
func regUse(in insn) (reads, writes uint16) {
	if in.op == opNop {
		return 0, 0 // le64, and the second slot of a wide load
	}
	d, s := uint16(1)<<(in.dst&15), uint16(1)<<(in.src&15)
	switch opTable[in.op].form {
	case formNone:
		return 0, 0
	case formALUK:
		if in.op == opMov64K || in.op == opMov32K {
			return 0, d
		}
		return d, d
	case formALUX:
		if in.op == opMov64X || in.op == opMov32X {
			return s, d
		}
		return d | s, d
	case formDivK, formNeg, formEnd:
		return d, d
	case formDivX:
		return d | s, d
	case formMovSX, formLdx, formCtx:
		return s, d
	case formJA, formJA32:
		return 0, 0
	case formJmpK, formSt:
		return d, 0
	case formJmpX, formStx:
		return d | s, 0
	case formAtomic:
		return d | s | 1, 0 // cmpxchg reads r0; fetches write src or r0
	case formLddw:
		return 0, d
	case formExit:
		return 1, 0
	case formCall:
		if in.op == opCall {
			if h := helperOf(in.imm); h != nil && !h.runsCode() {
				return 0b111110, 1 // r1-r5 (any helper's arguments), r0
			}
		}
	}
	return regsAll, 0 // runs program code, or unknown: reads everything
}

// runsCode reports whether the helper runs program code (a callback
// argument): that code may read any register.
func (h *helperInfo) runsCode() bool {
	for _, a := range h.args {
		if a == argFunc {
			return true
		}
	}
	return h.inLoop
}
