//go:build linux && amd64

package bpf

// The amd64 side of the range analysis's hints (jit_range_guess.go): the
// region guessed for an access not proven, and the constant address of a
// proven access to global data through a pointer known exactly.

// guessedCheck is check for an access through a register other than r10
// that the range analysis places on the stack (the stack's inline check,
// jit_amd64_stack.go), in a global data region of the collection (the
// region's constant bounds and buffer: staticCheck) or in a map value
// (the full check, inline: tableCheck). ok is false for any other access,
// which check guesses by its base register.
func (c *amd64Compiler) guessedCheck(pc int, bpfBase uint8, off, n int32, write bool) (xmem, bool) {
	switch c.env.hintAt(pc).region {
	case regionStack:
		if bpfBase != 10 {
			return c.checkIn(pc, bpfBase, off, n, write, regionStack), true
		}
	case hintTable:
		c.rm(false, true, []byte{0x8d}, xS1, xmem{base: reg(bpfBase), index: -1, disp: off}, false) // lea
		c.aluRR(true, 0x89, xS2, xS1)
		c.shiftI(true, 5, xS2, 32)
		c.tableCheck(pc, n, limitField(write))
		return xmem{base: xS2, index: xS1, disp: -n}, true
	}
	rg, limit, ok := c.env.staticGuess(pc, write)
	buf := staticBuf(c.env.coll, rg) // jit_globals_unsafe.go
	if !ok || buf == 0 || n <= 0 {
		return xmem{}, false
	}
	return c.staticCheck(pc, bpfBase, off, n, limitField(write), rg, int32(limit), buf), true
}

// staticCheck is checkIn for an access guessed in global data region rg:
// that region's table entry is the collection's own while the code runs
// (jitBoundColl), with lo 0, the limit given and the buffer buf, so the
// check compares the offset with a constant and loads nothing. Another
// region number goes to the full check out of line (jitGeneric), which
// comes back with the same registers.
func (c *amd64Compiler) staticCheck(pc int, bpfBase uint8, off, n, hi int32, rg, limit int32, buf uintptr) xmem {
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: reg(bpfBase), index: -1, disp: off}, false) // lea
	c.aluRR(true, 0x89, xS2, xS1)
	c.shiftI(true, 5, xS2, 32)
	c.aluRI(false, 7, xS2, rg)
	other := c.jcc(ccNE)
	c.aluRR(false, 0x89, xS1, xS1) // the offset: low 32 bits
	c.aluRI(true, 0, xS1, n)
	c.aluRI(true, 7, xS1, limit) // offset+n <= limit
	c.slowIf(ccA, pc)
	c.movRI(xS2, int64(buf))
	c.generic = append(c.generic, jitGeneric{from: other, resume: len(c.b), pc: pc, n: n, hi: hi})
	return xmem{base: xS2, index: xS1, disp: -n}
}

// staticAccess is the operand of the proven access at pc to global data
// region rg through register base, when the range analysis knows the
// register's value exactly: the buffer's address plus that offset as an
// immediate (or, when the exact access before it left its address in S2,
// S2 with the difference as displacement), with no offset register; or,
// when the proven access to rg through base before it left the buffer in
// S2 and the offset in S1 (staticReuse), those. ok is false for any other
// proven access.
func (c *amd64Compiler) staticAccess(pc int, base uint8, rg, off int32) (xmem, bool) {
	if c.staticReuse(pc, base, rg) {
		return xmem{base: xS2, index: xS1, disp: off}, true
	}
	o, ok := c.env.exactStatic(pc, rg)
	buf := staticBuf(c.env.coll, rg)
	if !ok || buf == 0 {
		return xmem{}, false
	}
	addr := uint64(buf) + uint64(o)
	if held, ok := exactReuse(c.plain, c.targets, pc, c.exact); ok {
		if d := int64(addr-held) + int64(off); d == int64(int32(d)) {
			c.exact.pc = pc
			return xmem{base: xS2, index: -1, disp: int32(d)}, true
		}
	}
	c.movRI(xS2, int64(addr))
	c.exact = exactLeft{pc: pc, addr: addr, ok: true}
	return xmem{base: xS2, index: -1, disp: off}, true
}

// staticReuse reports whether the proven access at pc to global data
// region rg through base may use the buffer and offset that the proven
// access to rg through base before it left in S2 and S1 (scratchReuse,
// jit_scratch.go); one that staticAccess addressed exactly left no
// offset.
func (c *amd64Compiler) staticReuse(pc int, base uint8, rg int32) bool {
	return rg >= regionStatic && scratchReuse(c.plain, c.targets, pc, base, func(q int) bool {
		_, exact := c.env.exactStatic(q, rg)
		return c.proven[q] == rg && !(exact && staticBuf(c.env.coll, rg) != 0)
	})
}

// tableCheck is the full check of an access of n bytes (hi: the limit's
// field) with the address in S1 and its region number in S2: the number
// below the table's length, the offset between the entry's lo and limit;
// it leaves the offset plus n in S1 and the buffer in S2 (else the slow
// path). The out-of-line check of a wrong guess (emitGeneric) runs it,
// and so does the inline check of an access guessed in a map value.
func (c *amd64Compiler) tableCheck(pc int, n, hi int32) {
	c.tableBounds(pc, n, hi)
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: -1, disp: offRegionBuf}, false)
}

// tableBounds is tableCheck but for the buffer: it leaves the entry's
// address in S2.
func (c *amd64Compiler) tableBounds(pc int, n, hi int32) {
	c.rm(false, true, []byte{0x3b}, xS2, xmem{base: xCtx, index: -1, disp: offRegionsLen}, false)
	c.slowIf(ccAE, pc)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false)
	c.imm32(regionSize)
	c.rm(false, true, []byte{0x03}, xS2, xmem{base: xCtx, index: -1, disp: offRegions}, false)
	c.aluRR(false, 0x89, xS1, xS1)
	c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: offRegionLo}, false)
	c.slowIf(ccB, pc)
	c.aluRI(true, 0, xS1, n)
	c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: hi}, false)
	c.slowIf(ccA, pc)
}
