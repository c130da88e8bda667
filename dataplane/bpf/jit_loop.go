package bpf

// Native bpf_loop (jit_amd64_loop.go, jit_arm64_loop.go). The interpreter's
// loop (helpers.go) checks the flags (-EINVAL), nr_loops against
// BPF_MAX_LOOPS (-E2BIG) and the callback, then per iteration the call
// depth and the budget (the callback's length to the end of the program,
// plus one) and runs the callback with r1 = the index, r2 = ctx, r10 one
// frame below the caller's and every other register zero; a return of 1
// stops it, any other value goes on; r0 is the number of calls.
//
// Native code does the same around a native bpf-to-bpf call. The loop
// keeps its index, nr_loops and ctx in r6-r8 (the caller's r6-r9 and r5
// wait in its jitLoop, indexed by the frame index of the callback: Go's
// frames plus the native ones); each iteration pushes a jitCall that saves
// them (the pc field -1 for "a loop's callback") and returns into the
// loop's own code, which goes on with them restored. When the callback
// returns to Go instead (a slow path, a helper that is not native), Go
// adopts the frame as any other (adoptCalls: ret -1) and, when the
// callback's exit pops it, restores r6-r10 from it and re-enters native
// code at the loop's resume address (jitAfter): the loop goes on natively
// from where it was, so a callback may leave for Go at any instruction.
// What the native code does not run (a callback not loaded into r2 in a
// straight line, a program with tail calls, whose native frames would
// span programs, a depth at the limit) goes to Go before the first
// iteration; a budget exhausted between iterations goes to Go with r1-r9
// as the call had them, where the loop charges again and reports the
// interpreter's fault at the call. r1-r5 are left as they were: the
// interpreter runs callbacks in a register file of their own.

// jitLoop is the state of a native bpf_loop in progress that lives
// outside registers.
type jitLoop struct {
	resume uint64    // native address the callback's frame returns to
	r5     uint64    // the caller's r5
	saved  [4]uint64 // the caller's r6-r9
}

// loopCallback is the subprogram a bpf_loop call at pc calls when r2 is
// loaded with its address in a straight line before the call (the code
// checks r2 at run time and leaves another value to Go).
func loopCallback(plain []insn, targets []bool, funcs []bool, pc int) (int, bool) {
	t, ok := loadedIn(plain, targets, pc, 2, opLdFunc)
	return int(t), ok && t >= 0 && t < int64(len(plain)) && t < int64(len(funcs)) && funcs[t]
}

// loopCharge is what one iteration of a loop calling target charges the
// budget (helpers.go loop).
func loopCharge(plain []insn, target int) int64 { return int64(len(plain)-target) + 1 }
