//go:build linux && arm64

package bpf

import "syscall"

// loopAt emits the bpf_loop call at pc natively (jit_loop.go, as
// jit_amd64_loop.go) when its program's local calls are native and r2 is
// loaded with the callback in a straight line before it; else the call
// goes to the slow path. In the loop, r6 is the index, r7 nr_loops and r8
// ctx.
func (c *arm64Compiler) loopAt(pc int) bool {
	target, ok := loopCallback(c.plain, c.targets, c.env.funcs, pc)
	if !ok || !c.calls {
		return false
	}
	// The interpreter's order: flags, nr_loops, the callback, nr = 0.
	c.w(a64Imm12(a64SubsImm, aZR, 4, 0))
	einval := c.branchShort(aNE)
	c.movImm(aS1, loopMax)
	c.cmp(1, aS1)
	e2big := c.branchShort(aHI)
	c.movImm(aS1, regionFunc<<32|uint64(target))
	c.cmp(2, aS1)
	c.slowIf(aNE, pc)
	c.w(a64Imm12(a64SubsImm, aZR, 1, 0))
	zero := c.branchShort(aEQ)
	c.loopIndex()
	c.w(a64Imm12(a64SubsImm, aZR, aS1, maxFrames-1))
	c.slowIf(aHS, pc)
	c.str(5, aS2, offJLoops+offLoopR5)
	for i, r := range [...]uint8{6, 7, 8, 9} {
		c.str(arm64Regs[r], aS2, offJLoops+offLoopSave+int32(8*i))
	}
	c.movImm(arm64Regs[6], 0)
	c.rrr(a64Orr, arm64Regs[7], aZR, 1) // mov
	c.rrr(a64Orr, arm64Regs[8], aZR, 3)
	resumes := []int{len(c.b)}
	c.w(a64ADR(aS4, 0)) // patched to the resume address
	c.str(aS4, aS2, offJLoops+offLoopRes)
	head := len(c.b)
	budget := c.loopIteration(target, &resumes)
	for _, at := range resumes {
		c.w32At(at, a64ADR(aS4, int32(len(c.b)-at)))
	}
	// Back from the callback: r0 its return, r6-r8 the loop's, r10 the
	// caller's.
	c.w(a64Imm12(a64SubsImm, aZR, 0, 1))
	stop := c.branchShort(aEQ)
	c.w(a64Imm12(a64AddImm, arm64Regs[6], arm64Regs[6], 1))
	c.cmp(arm64Regs[6], arm64Regs[7])
	c.patch(c.branchShort(aLO), head)
	c.rrr(a64Orr, 0, aZR, arm64Regs[7]) // every iteration ran
	all := c.branch(aAL)
	c.patch(stop, len(c.b))
	c.w(a64Imm12(a64AddImm, 0, arm64Regs[6], 1))
	c.patch(all, len(c.b))
	c.loopArgs(target)
	done := []a64Fixup{c.branch(aAL)}
	// Over the budget: Go runs the call again, with the arguments, and
	// faults at it as the interpreter does.
	c.patch(budget, len(c.b))
	c.loopArgs(target)
	c.exit(pc, jitExitSlow)
	for _, f := range []struct {
		j a64Fixup
		v int64
	}{{einval, -int64(syscall.EINVAL)}, {e2big, -int64(syscall.E2BIG)}, {zero, 0}} {
		c.patch(f.j, len(c.b))
		c.movImm(0, uint64(f.v))
		done = append(done, c.branch(aAL))
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
	return true
}

// w32At rewrites the instruction at byte offset pos.
func (c *arm64Compiler) w32At(pos int, i uint32) {
	c.b[pos], c.b[pos+1], c.b[pos+2], c.b[pos+3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
}

// loopIndex leaves in S1 the frame index of the callback of the loop being
// called or run (Go's frames plus the native ones) and in S2 the address
// of its jitLoop less offJLoops; S3 is clobbered.
func (c *arm64Compiler) loopIndex() {
	c.frames() // S1, with S3 the native depth
	c.movImm(aS3, uint64(jitLoopSize))
	c.rrr(a64Mul, aS2, aS1, aS3)
	c.rrr(a64Add, aS2, aS2, aCtx)
}

// loopIteration emits one iteration's start: the budget charged (the
// returned branch is taken past it), the callback's frame pushed as
// localCall pushes one (r6-r10: the loop's registers), returning to the
// resume address (its ADR added to resumes), and the jump to the callback
// with the interpreter's registers.
func (c *arm64Compiler) loopIteration(target int, resumes *[]int) a64Fixup {
	n := loopCharge(c.plain, target)
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	c.ldr(aS1, aCtx, offBudget)
	c.movImm(aS3, uint64(n))
	c.rrr(a64Subs, aS1, aS1, aS3)
	c.str(aS1, aCtx, offBudget)
	budget := c.branchShort(aMI)
	c.ldr(aS1, aCtx, offJDepth)
	c.movImm(aS3, uint64(jitCallSize))
	c.rrr(a64Mul, aS2, aS1, aS3)
	c.rrr(a64Add, aS2, aS2, aCtx)
	for i, r := range calleeSaved {
		c.str(arm64Regs[r], aS2, offJCalls+offCallSaved+int32(8*i))
	}
	c.movImm(aS3, ^uint64(0))
	c.str(aS3, aS2, offJCalls+offCallPC)
	*resumes = append(*resumes, len(c.b))
	c.w(a64ADR(aS4, 0))
	c.str(aS4, aS2, offJCalls+offCallRet)
	c.w(a64Imm12(a64AddImm, aS1, aS1, 1))
	c.str(aS1, aCtx, offJDepth)
	c.rrr(a64Orr, 1, aZR, arm64Regs[6])
	c.rrr(a64Orr, 2, aZR, arm64Regs[8])
	r10 := arm64Regs[10]
	c.w(a64Imm12(a64SubImm, r10, r10, frameSize))
	for _, r := range [...]uint8{0, 3, 4, 5, 6, 7, 8, 9} {
		c.movImm(arm64Regs[r], 0)
	}
	c.jumpTo(aAL, target)
	return budget
}

// loopArgs gives r1-r9 back the values the call had, from the loop's
// registers and state.
func (c *arm64Compiler) loopArgs(target int) {
	c.rrr(a64Orr, 1, aZR, arm64Regs[7])
	c.movImm(2, regionFunc<<32|uint64(target))
	c.rrr(a64Orr, 3, aZR, arm64Regs[8])
	c.movImm(4, 0)
	c.loopIndex()
	c.ldr(5, aS2, offJLoops+offLoopR5)
	for i, r := range [...]uint8{6, 7, 8, 9} {
		c.ldr(arm64Regs[r], aS2, offJLoops+offLoopSave+int32(8*i))
	}
}
