//go:build linux && amd64

package bpf

// Native bpf-to-bpf calls. The interpreter's callLocal pushes a frame
// (Runner.frames: the caller's r6-r9 and r10, the index to return to),
// gives the callee the next 512-byte slice of the stack and charges a
// backward call to the budget; its exit pops the frame. Native code does
// the same without Go, on a frame stack of its own in jitState (calls,
// depth), which holds no Go pointer: the callee's r6-r9 are callee-saved
// as the kernel's x86-64 JIT keeps them, the depth (Go's frames and the
// native ones together) is bounded by maxFrames as the verifier's
// MAX_CALL_FRAMES bounds it, and the return is an indirect jump to the
// address saved in the frame: the code never uses the machine stack (see
// doc.go). Whatever makes the code return to Go (a slow path, a helper)
// hands the native frames to Go first (adoptCalls), which then runs and
// pops them as the interpreter's.

// localCall emits the call at pc to the subprogram at in.imm. A call past
// the depth limit, or a backward one over the budget, goes to the slow
// path, which reports the fault as the interpreter does.
func (c *amd64Compiler) localCall(pc int, in insn) {
	target := int(in.imm)
	// S1 = frames in use: Go's and the native ones.
	c.ldq(xS1, xCtx, offDepth)
	c.rm(false, true, []byte{0x03}, xS1, ctxMem(offJDepth), false) // add
	c.aluRI(true, 7, xS1, maxFrames-1)                             // cmp
	c.slowIf(ccAE, pc)
	if target <= pc {
		c.charge(pc, target) // leaves S1 alone
	}
	// S2 = &jitState.calls[depth] - offJCalls.
	c.ldq(xS2, xCtx, offJDepth)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false) // imul S2, S2, size
	c.imm32(jitCallSize)
	c.aluRR(true, 0x01, xS2, xCtx)
	for i, r := range [...]uint8{6, 7, 8, 9, 10} {
		c.stq(reg(r), xS2, offJCalls+offCallSaved+int32(8*i)) // saved, then fp
	}
	c.movMemI(xmem{base: xS2, index: -1, disp: offJCalls + offCallPC}, int32(pc+1))
	// r10 = the callee's stack slice: stackSize - frameSize*(frames+1),
	// S1 still holding the frames.
	c.rr(false, true, []byte{0x69}, xS1, xS1, false) // imul S1, S1, -frameSize
	c.imm32(-frameSize)
	c.aluRI(true, 0, xS1, stackSize-frameSize)
	c.movRI(reg(10), int64(regionStack<<32))
	c.aluRR(true, 0x09, reg(10), xS1)
	// The return address: LEA S1, [RIP + rel32], resolved to pc+1.
	c.rex(true, xS1, 0, 0, false)
	c.byte1(0x8d, (xS1&7)<<3|5)
	c.imm32(0)
	c.jumps = append(c.jumps, jitFixup{len(c.b) - 4, pc + 1})
	c.stq(xS1, xS2, offJCalls+offCallRet)
	c.rm(false, true, []byte{0xff}, 0, ctxMem(offJDepth), false) // inc
	c.jumps = append(c.jumps, jitFixup{c.jmp(), target})
}

// callReturn emits, in front of an exit, the return from the native call
// in progress, if any: the caller's r6-r10 back and a jump to the
// instruction after its call. Without one the exit goes on to Go.
func (c *amd64Compiler) callReturn() {
	c.cmpMemI(ctxMem(offJDepth), 0)
	none := c.jcc(ccE)
	c.rm(false, true, []byte{0xff}, 1, ctxMem(offJDepth), false) // dec
	c.ldq(xS2, xCtx, offJDepth)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false)
	c.imm32(jitCallSize)
	c.aluRR(true, 0x01, xS2, xCtx)
	for i, r := range [...]uint8{6, 7, 8, 9, 10} {
		c.ldq(reg(r), xS2, offJCalls+offCallSaved+int32(8*i))
	}
	c.rm(false, false, []byte{0xff}, 4, xmem{base: xS2, index: -1, disp: offJCalls + offCallRet}, false) // jmp [ret]
	c.patch(none, len(c.b))
}
