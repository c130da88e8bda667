//go:build linux && arm64

package bpf

// Native bpf-to-bpf calls on arm64, as jit_amd64_calls.go describes them:
// r6-r9 (X19-X22) and r10 (X23) saved in jitState's frame stack, the
// return address taken with ADR and returned to with BR; no machine
// stack, and the link register is left alone.

// calleeSaved are the BPF registers a call saves: r6-r9, then r10.
var calleeSaved = [...]uint8{6, 7, 8, 9, 10}

// callFrameAddr leaves in S2 the address of jitState.calls[S3] less
// offJCalls (S3: a native depth).
func (c *arm64Compiler) callFrameAddr() {
	c.movImm(aS4, uint64(jitCallSize))
	c.rrr(a64Mul, aS2, aS3, aS4)
	c.rrr(a64Add, aS2, aS2, aCtx)
}

// frames leaves in S1 the number of frames in use (Go's and the native
// ones) and in S3 the native depth.
func (c *arm64Compiler) frames() {
	c.ldr(aS1, aCtx, offDepth)
	c.ldr(aS3, aCtx, offJDepth)
	c.rrr(a64Add, aS1, aS1, aS3)
}

// localCall emits the call at pc to the subprogram at in.imm; past the
// depth limit, or over the budget for a backward call, the slow path
// reports the fault.
func (c *arm64Compiler) localCall(pc int, in insn) {
	target := int(in.imm)
	c.frames()
	c.w(a64Imm12(a64SubsImm, aZR, aS1, maxFrames-1)) // cmp
	c.slowIf(aHS, pc)
	if target <= pc {
		c.charge(pc, target)
	}
	c.frames()
	c.callFrameAddr()
	for i, r := range calleeSaved {
		c.str(arm64Regs[r], aS2, offJCalls+offCallSaved+int32(8*i))
	}
	c.movImm(aS4, uint64(pc+1))
	c.str(aS4, aS2, offJCalls+offCallPC)
	c.adrs = append(c.adrs, a64Fixup{pos: len(c.b), target: pc + 1})
	c.w(a64ADR(aS4, 0)) // resolved to pc+1 by finish
	c.str(aS4, aS2, offJCalls+offCallRet)
	// r10 = the callee's stack slice: stackSize - frameSize*(frames+1).
	c.movImm(aS4, frameSize)
	c.rrr(a64Mul, aS1, aS1, aS4)
	c.movImm(aS4, stackSize-frameSize)
	c.rrr(a64Sub, aS1, aS4, aS1)
	r10 := arm64Regs[10]
	c.movImm(r10, regionStack<<32)
	c.rrr(a64Orr, r10, r10, aS1)
	c.w(a64Imm12(a64AddImm, aS3, aS3, 1))
	c.str(aS3, aCtx, offJDepth)
	c.jumpTo(aAL, target)
}

// callReturn emits, in front of an exit, the return from the native call
// in progress, if any; without one the exit goes on to Go.
func (c *arm64Compiler) callReturn() {
	c.ldr(aS3, aCtx, offJDepth)
	c.w(a64Imm12(a64SubsImm, aZR, aS3, 0)) // cmp
	none := c.branchShort(aEQ)
	c.w(a64Imm12(a64SubImm, aS3, aS3, 1))
	c.str(aS3, aCtx, offJDepth)
	c.callFrameAddr()
	for i, r := range calleeSaved {
		c.ldr(arm64Regs[r], aS2, offJCalls+offCallSaved+int32(8*i))
	}
	c.ldr(aS1, aS2, offJCalls+offCallRet)
	c.w(a64RR(a64Br, 0, aS1))
	c.patch(none, len(c.b))
}
