//go:build linux && amd64

package bpf

// stackAccess addresses an n-byte access at r10+off for the amd64 backend
// without a region check, when off lies in the 512-byte frame below r10
// (the loader refuses any other, checkStackOff): r10 is never written and
// holds the stack region's offset of the running frame, frameSize to
// stackSize (calls and bpf_loop callbacks stop at maxFrames), and the stack
// region is [0, stackSize) for loads and stores in every Runner, so the
// interpreter's check of such an access always passes. It reports false
// for any other access, which the caller checks.
//
// The operand is [stackBase + r10 + off]: jitState.stackBase is the
// stack's address minus regionStack<<32, which r10's tag adds back, so
// only S2 is loaded (and S1 is left as it was).
func (c *amd64Compiler) stackAccess(bpfBase uint8, off, n int32) (xmem, bool) {
	if !stackProven(bpfBase, off, n) {
		return xmem{}, false
	}
	c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offStackBase), false)
	return xmem{base: xS2, index: int8(reg(10)), disp: off}, true
}

// stackAccessAt is stackAccess for the load or store at pc, which records
// that it left stackBase in S2; when the access before it in a straight
// line did (scratchReuse: nothing in between writes the scratch
// registers or enters from elsewhere), S2 is used as it is.
func (c *amd64Compiler) stackAccessAt(pc int, bpfBase uint8, off, n int32) (xmem, bool) {
	if !stackProven(bpfBase, off, n) {
		return xmem{}, false
	}
	c.stackLeft[pc] = true
	if c.stackHeld(pc) {
		return xmem{base: xS2, index: int8(reg(10)), disp: off}, true
	}
	return c.stackAccess(bpfBase, off, n)
}

// stackHeld reports whether S2 holds stackBase at pc: going back in a
// straight line (no jump target in between) over instructions that keep
// the scratch registers (keepsScratch) and proven packet accesses (a
// single instruction through RBP, which never leaves for Go), the first
// other instruction is a stack access that left it (stackLeft). r10, its
// base, is never written.
func (c *amd64Compiler) stackHeld(pc int) bool {
	for q := pc - 1; q >= 0 && !c.targets[q+1]; q-- {
		in := c.plain[q]
		switch {
		case c.stackLeft[q]:
			return true
		case (isLoad(in.op) || isStore(in.op)) && c.proven[q] == regionPacket:
			continue
		case !keepsScratch(in, opTable[in.op].form):
			return false
		}
	}
	return false
}

// stackKeyAccess is stackAccess for an access at reg(base)+off at pc
// where base holds r10 plus a constant (stackKeyOff: the key of a helper
// call, say, or a copy of r10 the program addresses through).
func (c *amd64Compiler) stackKeyAccess(pc int, base uint8, off, n int32) (xmem, bool) {
	o := int32(0)
	if base != 10 {
		var ok bool
		if o, ok = stackKeyOff(c.plain, c.targets, pc, base); !ok {
			return xmem{}, false
		}
	}
	at := int64(o) + int64(off)
	if at != int64(int32(at)) {
		return xmem{}, false
	}
	return c.stackAccess(10, int32(at), n)
}

// stackCheck is checkIn for an access guessed on the stack. The stack's
// table entry never changes (NewRunner: the Runner's stack, lo 0, hi and
// whi stackSize), so the check compares the offset with a constant and
// reads only the buffer's address, where the table's check reads four
// words: an n-byte access at offset o is in bounds when o+n <= stackSize
// (o, the low 32 bits, is never below lo). Through r10, which no
// instruction writes and whose region is always the stack (the entries
// and native calls set it), the region number is not even compared: the
// low 32 bits of r10 + off are the offset itself when it is in bounds, and
// anything else (a frame pointer plus a negative offset below the stack's
// start wraps) compares above the limit. What fails goes to the slow path,
// which faults as the interpreter does.
func (c *amd64Compiler) stackCheck(pc int, bpfBase uint8, off, n, hi int32) xmem {
	if n > stackSize {
		c.slows = append(c.slows, jitFixup{c.jmp(), pc})
		return xmem{base: xS2, index: xS1, disp: 0}
	}
	if bpfBase == 10 {
		// 32-bit lea: the offset plus off, wrapped to 32 bits (below the
		// stack's start: far above the limit).
		c.rm(false, false, []byte{0x8d}, xS1, xmem{base: reg(10), index: -1, disp: off}, false)
		c.aluRI(true, 7, xS1, stackSize-n)
		c.slowIf(ccA, pc)
		c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offStackBuf), false)
		return xmem{base: xS2, index: xS1, disp: 0}
	}
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: reg(bpfBase), index: -1, disp: off}, false) // lea
	c.aluRR(true, 0x89, xS2, xS1)
	c.shiftI(true, 5, xS2, 32)
	c.aluRI(false, 7, xS2, regionStack)
	other := c.jcc(ccNE)
	c.aluRR(false, 0x89, xS1, xS1) // the offset: low 32 bits
	c.aluRI(true, 0, xS1, n)
	c.aluRI(true, 7, xS1, stackSize)
	c.slowIf(ccA, pc)
	c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offStackBuf), false)
	c.generic = append(c.generic, jitGeneric{from: other, resume: len(c.b), pc: pc, n: n, hi: hi})
	return xmem{base: xS2, index: xS1, disp: -n}
}
