//go:build linux && amd64

package bpf

import "syscall"

// loopAt emits the bpf_loop call at pc natively (jit_loop.go) when its
// program's local calls are native and r2 is loaded with the callback in a
// straight line before it; else the call goes to the slow path. In the
// loop, r6 is the index, r7 nr_loops and r8 ctx.
func (c *amd64Compiler) loopAt(pc int) bool {
	target, ok := loopCallback(c.plain, c.targets, c.env.funcs, pc)
	if !ok || !c.calls {
		return false
	}
	var done []int
	// The interpreter's order: flags, nr_loops, the callback, nr = 0.
	c.aluRR(true, 0x85, reg(4), reg(4))
	einval := c.jcc(ccNE)
	c.movRI(xS1, loopMax)
	c.aluRR(true, 0x39, reg(1), xS1)
	e2big := c.jcc(ccA)
	c.movRI(xS1, int64(regionFunc<<32|uint64(target)))
	c.aluRR(true, 0x39, reg(2), xS1)
	c.slowIf(ccNE, pc)
	c.aluRR(true, 0x85, reg(1), reg(1))
	zero := c.jcc(ccE)
	// The callback's frame index (S1): below the depth limit, else Go
	// reports the fault.
	c.loopIndex()
	c.aluRI(true, 7, xS1, maxFrames-1)
	c.slowIf(ccAE, pc)
	c.stq(reg(5), xS2, offJLoops+offLoopR5)
	for i, r := range [...]uint8{6, 7, 8, 9} {
		c.stq(reg(r), xS2, offJLoops+offLoopSave+int32(8*i))
	}
	c.aluRR(false, 0x31, reg(6), reg(6))
	c.aluRR(true, 0x89, reg(7), reg(1))
	c.aluRR(true, 0x89, reg(8), reg(3))
	resumes := []int{c.leaS1()}
	c.stq(xS1, xS2, offJLoops+offLoopRes)
	head := len(c.b)
	budget := c.loopIteration(target, &resumes)
	for _, l := range resumes {
		c.patch(l, len(c.b))
	}
	// Back from the callback: r0 its return, r6-r8 the loop's, r10 the
	// caller's.
	c.aluRI(true, 7, xAX, 1)
	stop := c.jcc(ccE)
	c.aluRI(true, 0, reg(6), 1)
	c.aluRR(true, 0x39, reg(6), reg(7))
	c.patch(c.jcc(ccB), head)
	c.aluRR(true, 0x89, xAX, reg(7)) // every iteration ran
	all := c.jmp()
	c.patch(stop, len(c.b))
	c.rm(false, true, []byte{0x8d}, xAX, xmem{base: reg(6), index: -1, disp: 1}, false) // lea rax, [r6+1]
	c.patch(all, len(c.b))
	c.loopArgs(target)
	done = append(done, c.jmp())
	// Over the budget: Go runs the call again, with the arguments, and
	// faults at it as the interpreter does.
	c.patch(budget, len(c.b))
	c.loopArgs(target)
	c.exit(pc, jitExitSlow)
	for _, f := range []struct {
		j int
		v int64
	}{{einval, -int64(syscall.EINVAL)}, {e2big, -int64(syscall.E2BIG)}, {zero, 0}} {
		c.patch(f.j, len(c.b))
		c.movRI(xAX, f.v)
		done = append(done, c.jmp())
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
	return true
}

// leaS1 emits LEA S1, [RIP + rel32] and returns the displacement's
// position, to be patched to the loop's resume address.
func (c *amd64Compiler) leaS1() int {
	c.rex(true, xS1, 0, 0, false)
	c.byte1(0x8d, (xS1&7)<<3|5)
	c.imm32(0)
	return len(c.b) - 4
}

// loopIndex leaves in S1 the frame index of the callback of the loop being
// called or run (Go's frames plus the native ones) and in S2 the address
// of its jitLoop less offJLoops.
func (c *amd64Compiler) loopIndex() {
	c.ldq(xS1, xCtx, offDepth)
	c.rm(false, true, []byte{0x03}, xS1, ctxMem(offJDepth), false) // add
	c.rr(false, true, []byte{0x69}, xS2, xS1, false)               // imul S2, S1, size
	c.imm32(jitLoopSize)
	c.aluRR(true, 0x01, xS2, xCtx)
}

// loopIteration emits one iteration's start: the budget charged (the
// returned jump is taken past it), the callback's frame pushed as
// localCall pushes one (r6-r10: the loop's registers), returning to the
// resume address (its LEA added to resumes), and the jump to the callback
// with the interpreter's registers.
func (c *amd64Compiler) loopIteration(target int, resumes *[]int) int {
	n := loopCharge(c.plain, target)
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	c.rm(false, true, []byte{0x81}, 5, ctxMem(offBudget), false) // sub qword [budget], n
	c.imm32(int32(n))
	budget := c.jcc(ccS)
	c.ldq(xS2, xCtx, offJDepth)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false) // imul S2, S2, size
	c.imm32(jitCallSize)
	c.aluRR(true, 0x01, xS2, xCtx)
	for i, r := range [...]uint8{6, 7, 8, 9, 10} {
		c.stq(reg(r), xS2, offJCalls+offCallSaved+int32(8*i))
	}
	c.movMemI(xmem{base: xS2, index: -1, disp: offJCalls + offCallPC}, -1)
	*resumes = append(*resumes, c.leaS1())
	c.stq(xS1, xS2, offJCalls+offCallRet)
	c.rm(false, true, []byte{0xff}, 0, ctxMem(offJDepth), false) // inc
	c.aluRR(true, 0x89, reg(1), reg(6))
	c.aluRR(true, 0x89, reg(2), reg(8))
	c.aluRI(true, 5, reg(10), frameSize)
	for _, r := range [...]uint8{0, 3, 4, 5, 6, 7, 8, 9} {
		c.aluRR(false, 0x31, reg(r), reg(r))
	}
	c.jumps = append(c.jumps, jitFixup{c.jmp(), target})
	return budget
}

// loopArgs gives r1-r9 back the values the call had, from the loop's
// registers and state.
func (c *amd64Compiler) loopArgs(target int) {
	c.aluRR(true, 0x89, reg(1), reg(7))
	c.movRI(reg(2), int64(regionFunc<<32|uint64(target)))
	c.aluRR(true, 0x89, reg(3), reg(8))
	c.aluRR(false, 0x31, reg(4), reg(4))
	c.loopIndex()
	c.ldq(reg(5), xS2, offJLoops+offLoopR5)
	for i, r := range [...]uint8{6, 7, 8, 9} {
		c.ldq(reg(r), xS2, offJLoops+offLoopSave+int32(8*i))
	}
}
