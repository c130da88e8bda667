//go:build linux && arm64

package bpf

// valueAccess leaves in S2 the buffer and in S1 the offset of the access
// at pc when it goes through the result of a native array lookup within
// the value's bounds, checked as the amd64 backend's (jit_value.go,
// jit_amd64_value.go); ok is false when the access is not such a one.
func (c *arm64Compiler) valueAccess(pc int, bpfBase uint8, off, n int32, write bool) bool {
	hi, reuse, ok := valuePlan(c.plain, c.targets, &c.valued, c.arrayAt, pc, bpfBase, off, n, write)
	if !ok {
		return false
	}
	if reuse { // S4 still holds the entry, S2 the buffer
		c.ldr(aS3, aS4, hi)
		c.movImm(aS1, uint64(off+n))
		c.rrr(a64Subs, aZR, aS3, aS1)
		c.slowIf(aLO, pc)
		c.movImm(aS1, uint64(off))
		return true
	}
	c.bfm(a64Ubfm, aS1, arm64Regs[bpfBase&15%11], 32, 63) // the region number
	c.w(a64Imm12(a64SubsImm, aZR, aS1, regionStatic))
	c.slowIf(aLO, pc) // NULL, or not a lookup's
	c.ldr(aS3, aCtx, offRegionsLen)
	c.rrr(a64Subs, aZR, aS1, aS3)
	c.slowIf(aHS, pc)
	c.movImm(aS3, uint64(regionSize))
	c.rrr(a64Mul, aS1, aS1, aS3)
	c.ldr(aS3, aCtx, offRegions)
	c.rrr(a64Add, aS1, aS1, aS3) // S1 = &table[number]
	c.ldr(aS3, aS1, hi)
	c.movImm(aS4, uint64(off+n))
	c.rrr(a64Subs, aZR, aS3, aS4)
	c.slowIf(aLO, pc)
	c.ldr(aS2, aS1, offRegionBuf)
	c.rrr(a64Orr, aS4, aZR, aS1) // the entry, for valueReuse
	c.movImm(aS1, uint64(off))
	return true
}
