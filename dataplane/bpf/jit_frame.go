//go:build linux && (amd64 || arm64)

package bpf

// What the backends may leave out of context loads (issue 21).

// frameSure reports whether the native code of plain only ever runs with
// a frame, so that a context load needs no check for a bare run: some
// load or store has a proof (provenIn), which the backend counts
// (jitProg.proven: emitLoad and emitStore address every proven access
// through access, which counts it), and Runner.code interprets a bare run
// of a program with any. Every other entry into native code has a frame
// too: the burst loop runs frames, and a native tail call into the
// program goes to Go in a run without one.
func frameSure(plain []insn, proven []int32) bool {
	for pc, rg := range proven {
		if rg == 0 || pc >= len(plain) {
			continue
		}
		switch opTable[plain[pc].op].form {
		case formLdx, formSt, formStx:
			return true
		}
	}
	return false
}

// ctxScalarLoads returns, for each instruction of plain, the xdp_md offset
// of the field ingress_ifindex or rx_queue_index when the instruction is a
// 4-byte load of it through a register that holds the context on every
// path (ctxRegsIn, the analysis that specialises the loads of data and
// data_end), else 0. With a frame, the interpreter's load of such a field
// (slowLoad) reads the Frame's field, zero-extended: the register holds
// exactly regionCtx<<32 there, as the entry and every tail call (which
// requires r1 = ctx) set it and only copies carry it. The backends read
// the Frame's field the same way; without a frame they leave for the slow
// path, which loads as the interpreter does.
func ctxScalarLoads(plain []insn, funcs []bool) []int32 {
	var in []uint16
	var seen []bool
	var at []int32
	for pc, c := range plain {
		if c.op != opLdxW || (c.off != xdpMdIngressIfindex && c.off != xdpMdRxQueueIndex) {
			continue
		}
		if at == nil {
			in, seen = ctxRegsIn(plain, funcs)
			at = make([]int32, len(plain))
		}
		if seen[pc] && c.src < 11 && in[pc]&(1<<c.src) != 0 {
			at[pc] = c.off
		}
	}
	return at
}

// ctxArgs returns, for each instruction of plain, whether r1 holds the
// context on entry to it on every path (ctxRegsIn): there r1 is exactly
// regionCtx<<32, as ctxScalarLoads says, so a helper call at such an
// instruction needs no check that its r1 is the context.
func ctxArgs(plain []insn, funcs []bool) []bool {
	if len(funcs) < len(plain) { // a bare stream has no subprogram table
		f := make([]bool, len(plain))
		copy(f, funcs)
		funcs = f
	}
	in, seen := ctxRegsIn(plain, funcs)
	at := make([]bool, len(plain))
	for pc := range plain {
		at[pc] = seen[pc] && in[pc]&(1<<1) != 0
	}
	return at
}

// ctxArgAt is ctxArgs' answer at pc (false past the end).
func ctxArgAt(at []bool, pc int) bool { return pc < len(at) && at[pc] }

// ctxScalarAt is the xdp_md offset ctxScalarLoads found at pc, or 0.
func ctxScalarAt(at []int32, pc int) int32 {
	if pc >= len(at) {
		return 0
	}
	return at[pc]
}
