//go:build linux && arm64

package bpf

// stackAccess leaves in X10 and X9 two numbers whose sum addresses an
// n-byte access at r10+off without a region check, when off lies in the
// 512-byte frame below r10 (see the amd64 version for why that always
// passes the interpreter's check); it reports false for any other access,
// which the caller checks. X10 is jitState.stackBase, the stack's address
// minus regionStack<<32, and X9 is r10+off, whose tag adds it back.
func (c *arm64Compiler) stackAccess(bpfBase uint8, off, n int32) bool {
	if !stackProven(bpfBase, off, n) {
		return false
	}
	c.ldr(aS2, aCtx, offStackBase)
	c.w(a64Imm12(a64SubImm, aS1, arm64Regs[10], uint32(-off))) // off < 0
	return true
}

// stackAccessAt is stackAccess for the load or store at pc, which records
// that it left stackBase in S2; when the access before it in a straight
// line did (stackHeld), S2 is used as it is and only S1 is set.
func (c *arm64Compiler) stackAccessAt(pc int, bpfBase uint8, off, n int32) bool {
	if !stackProven(bpfBase, off, n) {
		return false
	}
	c.stackLeft[pc] = true
	if !c.stackHeld(pc) {
		return c.stackAccess(bpfBase, off, n)
	}
	c.w(a64Imm12(a64SubImm, aS1, arm64Regs[10], uint32(-off))) // off < 0
	return true
}

// stackHeld reports whether S2 holds stackBase at pc, as the amd64
// stackHeld (jit_amd64_stack.go): going back in a straight line over
// instructions that keep the scratch registers (keepsScratch) and proven
// packet accesses (which set only S1, and S3 for a far offset, and never
// leave for Go) and lddw's second slots, the first other instruction is a stack access that left
// it (stackLeft). r10, its base, is never written.
func (c *arm64Compiler) stackHeld(pc int) bool {
	for q := pc - 1; q >= 0 && !c.targets[q+1]; q-- {
		in := c.plain[q]
		switch {
		case c.stackLeft[q]:
			return true
		case in.op == opNop: // an lddw's second slot: no code
			continue
		case (isLoad(in.op) || isStore(in.op)) && c.proven[q] == regionPacket:
			continue
		case !keepsScratch(in, opTable[in.op].form):
			return false
		}
	}
	return false
}

// a64Resume is a load at pc that uses what the load before it left in the
// scratch registers, its code ending at after: Go re-enters pc through a
// stub that emits the full load and goes on at after (ctxStubs).
type a64Resume struct{ pc, after int }

// ctxStubs emits the re-entry stub of each context load that used the
// frame the context load before it left in S1 (ctxAfterCtx: emitCtx, and
// emitLoad for a scalar field): the frame loaded (and checked) again, the
// load, then on to the code after it. Go enters pc only after running the
// instruction before it, so native code reaches the load with the frame
// in S1 only from that load. Called by finish once the jumps to
// instruction starts are resolved (none goes to pc: it is no jump target).
func (c *arm64Compiler) ctxStubs(entry []uint32) {
	for _, r := range c.ctxResumes {
		at := len(c.b)
		in := c.plain[r.pc]
		d, _ := a64Regs(in)
		c.frame(r.pc)
		if f := ctxScalarAt(c.ctxFields, r.pc); f != 0 {
			c.ldrWOff(d, aS1, frameFieldOff(f))
		} else {
			c.ldr(d, aS1, ctxFieldOff(in.op))
			c.tagPacket(d)
		}
		c.patch(c.branch(aAL), r.after)
		entry[r.pc] = uint32(at)
	}
}

// stackKeyAccess is stackAccess for an access at base+off at pc where
// base holds r10 plus a constant (stackKeyOff: the key of a helper call,
// say, or a copy of r10 the program addresses through).
func (c *arm64Compiler) stackKeyAccess(pc int, base uint8, off, n int32) bool {
	o := int32(0)
	if base != 10 {
		var ok bool
		if o, ok = stackKeyOff(c.plain, c.targets, pc, base); !ok {
			return false
		}
	}
	at := int64(o) + int64(off)
	return at == int64(int32(at)) && c.stackAccess(10, int32(at), n)
}

// stackCheck is checkIn for an access guessed on the stack, as the amd64
// backend's (jit_amd64_stack.go: a constant limit and one load instead of
// the table's four words; no region number compared through r10): it
// leaves the buffer in S2 and the offset in S1.
func (c *arm64Compiler) stackCheck(pc int, bpfBase uint8, off, n, hi int32) {
	if n > stackSize {
		c.slowIf(aAL, pc)
		return
	}
	base := arm64Regs[bpfBase&15%11]
	if bpfBase == 10 {
		// 32-bit add: the offset plus off, wrapped to 32 bits (below the
		// stack's start: far above the limit).
		c.addOff(aS1, base, off, a64W)
		c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(stackSize-n))) // cmp x9, #limit
		c.slowIf(aHI, pc)
		c.ldr(aS2, aCtx, offStackBuf)
		return
	}
	c.addOff(aS1, base, off, 0)
	c.bfm(a64Ubfm, aS2, aS1, 32, 63)                         // lsr x10, x9, #32
	c.w(a64Imm12(a64SubsImm, aZR, aS2, uint32(regionStack))) // cmp x10, #stack
	other := c.branch(aNE)
	c.rrr(a64Orr&^a64W, aS1, aZR, aS1) // the offset: low 32 bits
	c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(stackSize-n)))
	c.slowIf(aHI, pc)
	c.ldr(aS2, aCtx, offStackBuf)
	c.generic = append(c.generic, a64Generic{from: other.pos, resume: len(c.b), pc: pc, n: n, hi: hi})
	c.jumpsFixOther(other)
}

// addOff sets d to n + off (S3 is scratch for an offset past 12 bits):
// 64-bit, or 32-bit (wrapping, the upper half zeroed) when w32 is a64W.
func (c *arm64Compiler) addOff(d, n uint32, off int32, w32 uint32) {
	switch {
	case off >= 0 && off < 4096:
		c.w(a64Imm12(a64AddImm&^w32, d, n, uint32(off)))
	case off < 0 && off > -4096:
		c.w(a64Imm12(a64SubImm&^w32, d, n, uint32(-off)))
	default:
		c.movImm(aS3, uint64(int64(off)))
		c.rrr(a64Add&^w32, d, n, aS3)
	}
}
