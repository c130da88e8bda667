//go:build linux && arm64

package bpf

// The arm64 side of the range analysis's hints (jit_range_guess.go), as
// the amd64 backend's (jit_amd64_guess.go): the region guessed for an
// access not proven, and the constant address of a proven access to
// global data through a pointer known exactly. Each leaves the buffer in
// S2 and the offset in S1, as access does.

// guessedCheck is check for an access through a register other than r10
// that the range analysis places on the stack, in a global data region of
// the collection (staticCheck) or in a map value (the full check, inline:
// tableCheck); it reports false for any other access.
func (c *arm64Compiler) guessedCheck(pc int, bpfBase uint8, off, n int32, write bool) bool {
	switch c.env.hintAt(pc).region {
	case regionStack:
		if bpfBase != 10 {
			c.checkIn(pc, bpfBase, off, n, write, regionStack)
			return true
		}
	case hintTable:
		c.addOff(aS1, arm64Regs[bpfBase&15%11], off, 0)
		c.bfm(a64Ubfm, aS2, aS1, 32, 63) // lsr x10, x9, #32
		c.tableCheck(pc, n, limitField(write))
		return true
	}
	rg, limit, ok := c.env.staticGuess(pc, write)
	buf := staticBuf(c.env.coll, rg) // jit_globals_unsafe.go
	if !ok || buf == 0 || n <= 0 || rg >= 4096 {
		return false
	}
	c.staticCheck(pc, bpfBase, off, n, limitField(write), rg, limit, buf)
	return true
}

// staticCheck is checkIn for an access guessed in global data region rg,
// whose entry is the collection's own while the code runs (jitBoundColl):
// the offset compared with the constant limit, the buffer an immediate;
// another region number goes to the full check out of line.
func (c *arm64Compiler) staticCheck(pc int, bpfBase uint8, off, n, hi int32, rg int32, limit uint64, buf uintptr) {
	c.addOff(aS1, arm64Regs[bpfBase&15%11], off, 0)
	c.bfm(a64Ubfm, aS2, aS1, 32, 63)                // lsr x10, x9, #32
	c.w(a64Imm12(a64SubsImm, aZR, aS2, uint32(rg))) // cmp x10, #rg
	other := c.branch(aNE)
	c.rrr(a64Orr&^a64W, aS1, aZR, aS1) // the offset: low 32 bits
	c.w(a64Imm12(a64AddImm, aS4, aS1, uint32(n)))
	c.movImm(aS3, limit)
	c.rrr(a64Subs, aZR, aS4, aS3) // offset+n <= limit
	c.slowIf(aHI, pc)
	c.movImm(aS2, uint64(buf))
	c.generic = append(c.generic, a64Generic{from: other.pos, resume: len(c.b), pc: pc, n: n, hi: hi})
	c.jumpsFixOther(other)
}

// staticAccess emits the proven access at pc to global data region rg
// through register base when the range analysis knows the register's
// value exactly (S2 the buffer's address plus that offset, or the address
// the exact access before it left there; S1 the rest), or when the proven
// access to rg through base before it left the buffer in S2 (staticReuse:
// S1 alone is computed). It reports false for any other proven access.
func (c *arm64Compiler) staticAccess(pc int, base uint8, rg, off int32) bool {
	if rg >= regionStatic && scratchReuse(c.plain, c.targets, pc, base, func(q int) bool {
		_, exact := c.env.exactStatic(q, rg)
		return c.proven[q] == rg && !(exact && staticBuf(c.env.coll, rg) != 0)
	}) {
		c.rrr(a64Orr&^a64W, aS1, aZR, arm64Regs[base&15%11]) // the offset: low 32 bits
		c.addOff(aS1, aS1, off, 0)
		return true
	}
	o, ok := c.env.exactStatic(pc, rg)
	buf := staticBuf(c.env.coll, rg)
	if !ok || buf == 0 {
		return false
	}
	addr := uint64(buf) + uint64(o)
	if held, ok := exactReuse(c.plain, c.targets, pc, c.exact); ok {
		c.exact.pc = pc
		c.movImm(aS1, addr-held+uint64(int64(off)))
		return true
	}
	c.movImm(aS2, addr)
	c.movImm(aS1, uint64(int64(off)))
	c.exact = exactLeft{pc: pc, addr: addr, ok: true}
	return true
}

// tableCheck is the full check of an access of n bytes (hi: the limit's
// field) with the address in S1 and its region number in S2, as the amd64
// backend's: it leaves the offset in S1 and the buffer in S2 (else the
// slow path), for emitGeneric and for an access guessed in a map value.
func (c *arm64Compiler) tableCheck(pc int, n, hi int32) {
	c.ldr(aS3, aCtx, offRegionsLen)
	c.rrr(a64Subs, aZR, aS2, aS3)
	c.slowIf(aHS, pc)
	c.movImm(aS3, uint64(regionSize))
	c.rrr(a64Mul, aS2, aS2, aS3)
	c.ldr(aS3, aCtx, offRegions)
	c.rrr(a64Add, aS2, aS2, aS3)
	c.rrr(a64Orr&^a64W, aS1, aZR, aS1)
	c.ldr(aS3, aS2, offRegionLo)
	c.rrr(a64Subs, aZR, aS1, aS3)
	c.slowIf(aLO, pc)
	c.w(a64Imm12(a64AddImm, aS4, aS1, uint32(n)))
	c.ldr(aS3, aS2, hi)
	c.rrr(a64Subs, aZR, aS4, aS3)
	c.slowIf(aHI, pc)
	c.ldr(aS2, aS2, offRegionBuf)
}
