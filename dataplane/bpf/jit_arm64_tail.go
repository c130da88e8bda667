//go:build linux && arm64

package bpf

// Native bpf_tail_call for the arm64 backend: the steps of the amd64 one
// (tailCall in jit_amd64_helpers.go, with its contract) in the scratch
// registers X9-X14, every BPF register left as it was until the jump.
// The slot's entry, which Go replaces at any time (ProgArray.SetProg
// stores it atomically), is read once with LDAR: a load-acquire, as
// atomic.Pointer's Load is on arm64, so the entry's fields read after it
// are those of the program Go stored. The code of the target is entered
// with BR: the link register still holds jitEnter's return address, so
// the target's exit returns to Go as the caller's would have.

// tailCall is bpf_tail_call through s's array in amd64's steps, which it
// checks in the same order, leaving out those s proves (the slow path for
// what Go must run or fault on, the instruction after the call for a call
// that fails); X12 keeps the collection's address for both of its
// compares and X14 the count.
func (c *arm64Compiler) tailCall(pc int, s tailSite) {
	if !s.r2Sure {
		c.movImm(aS1, s.handle)
		c.cmp(2, aS1)
		c.slowIf(aNE, pc)
	}
	c.movImm(aS4, uint64(s.coll)) // kept in X12 for the target's check
	c.cmpField(aCtx, offColl, aS4)
	c.slowIf(aNE, pc)
	var next []a64Fixup
	c.ldr(aS6, aCtx, offTails)
	c.cmpImm(aS6, maxTailCalls)
	next = append(next, c.branch(aGE))
	if !s.ctxSure {
		c.movImm(aS1, regionCtx<<32)
		c.cmp(1, aS1)
		c.slowIf(aNE, pc)
	}
	if !s.frameSure {
		c.ldr(aS1, aCtx, offJFrame)
		c.slowIfZero(aS1, pc)
	}
	if s.idxSure && !s.inRange() {
		next = append(next, c.branch(aAL))
	} else {
		next = append(next, c.tailSlot(s)...)
		c.tailJump(pc)
	}
	for _, f := range next {
		c.patch(f, len(c.b))
	}
}

// tailSlot loads into X10 the *Program in slot r3 of s's array (a constant
// index's slot read at its address) and returns the branches taken when
// there is none of this collection. The slot's entry, which Go replaces at
// any time, is read once with LDAR.
func (c *arm64Compiler) tailSlot(s tailSite) []a64Fixup {
	var next []a64Fixup
	if s.idxSure {
		c.movImm(aS2, uint64(s.slots.Base+8*uintptr(s.idx))) // &slots[index]
	} else {
		c.mov32(aS1, 3) // index = uint32(r3)
		c.cmpImm(aS1, uint64(s.slots.N))
		next = append(next, c.branch(aHS))
		c.movImm(aS2, uint64(s.slots.Base))
		c.w(a64RRRShift(a64Add, aS2, aS2, aS1, 3)) // &slots[index]
	}
	c.w(a64Excl(a64Ldar, 0, aS2, aS2)) // the slot's entry
	next = append(next, c.cbz(aS2))
	// The entry's interface must hold a *Program (its type word), not nil.
	c.movImm(aS1, uint64(progType))
	c.cmpField(aS2, int32(s.slots.ValueOff), aS1)
	next = append(next, c.branch(aNE))
	c.ldr(aS2, aS2, int32(s.slots.ValueOff)+8) // the *Program
	next = append(next, c.cbz(aS2))
	c.cmpField(aS2, offProgColl, aS4)
	return append(next, c.branch(aNE))
}

// tailJump enters the *Program in X10: its native code (none goes to the
// slow path), the count in X14 up, its id left in jitState.tail.
func (c *arm64Compiler) tailJump(pc int) {
	c.ldr(aS1, aS2, offProgJIT)
	c.slowIfZero(aS1, pc)
	c.w(a64Imm12(a64AddImm, aS6, aS6, 1))
	c.str(aS6, aCtx, offTails) // the count
	c.ldrWOff(aS2, aS2, offProgID)
	c.str(aS2, aCtx, offTail)
	c.ldr(aS1, aS1, offJITProgPC0)
	c.w(a64RR(a64Br, 0, aS1))
}

// ldrWOff is LDR Wt, [Xn, #off]: a 32-bit load, zero-extended (X13 is
// scratch for an offset the scaled immediate does not reach).
func (c *arm64Compiler) ldrWOff(t, n uint32, off int32) {
	if off >= 0 && off%4 == 0 && off/4 < 4096 {
		c.w(a64Imm12(a64LdrWImm, t, n, uint32(off/4)))
		return
	}
	c.movImm(aS5, uint64(int64(off)))
	c.ldrW(t, n, aS5)
}

// cbz emits a branch to be patched, taken when X n is 0: CBZ, or in the
// long form a compare and branch's long form.
func (c *arm64Compiler) cbz(n uint32) a64Fixup {
	if c.long {
		c.cmp(n, aZR)
		return c.branch(aEQ)
	}
	c.w(a64Branch(a64Cbz, 0, n))
	return a64Fixup{pos: len(c.b) - 4, cond: true} // imm19 where B.cond has it
}

// slowIfZero sends the instruction at pc to the slow path when X n is 0.
func (c *arm64Compiler) slowIfZero(n uint32, pc int) {
	f := c.cbz(n)
	f.target = pc
	c.slows = append(c.slows, f)
}

// cmpImm compares X n with v: CMP (immediate) when v fits in 12 bits,
// else through X11.
func (c *arm64Compiler) cmpImm(n uint32, v uint64) {
	if v < 4096 {
		c.w(a64Imm12(a64SubsImm, aZR, n, uint32(v)))
		return
	}
	c.movImm(aS3, v)
	c.cmp(n, aS3)
}
