//go:build linux && amd64

package bpf

import "syscall"

// loopAt emits the bpf_loop call at pc natively (jit_loop.go) when its
// program's local calls are native and r2 is loaded with the callback in a
// straight line before it; else the call goes to the slow path.
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
	c.stq(reg(1), xS2, offJLoops+offLoopNr)
	c.stq(reg(3), xS2, offJLoops+offLoopCtx)
	c.stq(reg(5), xS2, offJLoops+offLoopR5)
	c.movMemI(xmem{base: xS2, index: -1, disp: offJLoops + offLoopI}, 0)
	c.rex(true, xS1, 0, 0, false) // LEA S1, [RIP + resume]
	c.byte1(0x8d, (xS1&7)<<3|5)
	c.imm32(0)
	lea := len(c.b) - 4
	c.stq(xS1, xS2, offJLoops+offLoopRes)
	head := len(c.b)
	budget := c.loopIteration(pc, target)
	resume := len(c.b)
	c.patch(lea, resume)
	// Back from the callback: r0 its return, r6-r10 the caller's.
	c.loopIndex()
	c.aluRI(true, 7, xAX, 1)
	stop := c.jcc(ccE)
	c.rm(false, true, []byte{0xff}, 0, xmem{base: xS2, index: -1, disp: offJLoops + offLoopI}, false) // inc i
	c.ldq(xS1, xS2, offJLoops+offLoopI)
	c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: offJLoops + offLoopNr}, false)
	c.patch(c.jcc(ccB), head)
	c.ldq(xAX, xS2, offJLoops+offLoopNr) // every iteration ran
	all := c.jmp()
	c.patch(stop, len(c.b))
	c.ldq(xAX, xS2, offJLoops+offLoopI)
	c.aluRI(true, 0, xAX, 1)
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

// loopIteration emits one iteration's start, S2 addressing the loop's
// state: the budget charged (the returned jump is taken past it), the
// callback's frame pushed as localCall pushes one, returning to the resume
// address, and the jump to the callback with the interpreter's registers.
func (c *amd64Compiler) loopIteration(pc, target int) int {
	n := loopCharge(c.plain, target)
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	c.rm(false, true, []byte{0x81}, 5, ctxMem(offBudget), false) // sub qword [budget], n
	c.imm32(int32(n))
	budget := c.jcc(ccS)
	c.ldq(xS1, xCtx, offJDepth)
	c.rr(false, true, []byte{0x69}, xS1, xS1, false) // imul S1, S1, size
	c.imm32(jitCallSize)
	c.aluRR(true, 0x01, xS1, xCtx)
	for i, r := range [...]uint8{6, 7, 8, 9, 10} {
		c.stq(reg(r), xS1, offJCalls+offCallSaved+int32(8*i))
	}
	c.movMemI(xmem{base: xS1, index: -1, disp: offJCalls + offCallPC}, -1)
	c.ldq(xAX, xS2, offJLoops+offLoopRes)
	c.stq(xAX, xS1, offJCalls+offCallRet)
	c.rm(false, true, []byte{0xff}, 0, ctxMem(offJDepth), false) // inc
	c.ldq(reg(1), xS2, offJLoops+offLoopI)
	c.ldq(reg(2), xS2, offJLoops+offLoopCtx)
	c.aluRI(true, 5, reg(10), frameSize)
	for _, r := range [...]uint8{0, 3, 4, 5, 6, 7, 8, 9} {
		c.aluRR(false, 0x31, reg(r), reg(r))
	}
	c.jumps = append(c.jumps, jitFixup{c.jmp(), target})
	return budget
}

// loopArgs gives r1-r5 back the values the call had (S2 addressing the
// loop's state).
func (c *amd64Compiler) loopArgs(target int) {
	c.ldq(reg(1), xS2, offJLoops+offLoopNr)
	c.movRI(reg(2), int64(regionFunc<<32|uint64(target)))
	c.ldq(reg(3), xS2, offJLoops+offLoopCtx)
	c.aluRR(false, 0x31, reg(4), reg(4))
	c.ldq(reg(5), xS2, offJLoops+offLoopR5)
}
