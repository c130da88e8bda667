//go:build linux && arm64

package bpf

// Native map-in-map lookups for the arm64 backend: the steps of the amd64
// ones (jit_amd64_mim.go), the inner map's descriptor kept in X15 (aMD),
// which no other native code uses and the trampolines, ABI0 functions,
// need not preserve. The table's address is loaded with a plain LDR: the
// loads of its entries and of the descriptor go through it (an address
// dependency orders them after the load, and Go's atomic store that
// published the table is a release).

// aMD holds the inner map's descriptor during an inner lookup.
const aMD = 15

// mimLookup: see the amd64 version.
func (c *arm64Compiler) mimLookup(pc int) bool {
	return c.env.emitMim(c, c.plain, c.targets, pc) // jit_mim_unsafe.go
}

// word leaves in d a figure of the map being looked up: v, or (dyn) the
// word at off in the descriptor in X15.
func (c *arm64Compiler) word(d uint32, dyn bool, off int32, v uint64) {
	if !dyn {
		c.movImm(d, v)
		return
	}
	c.ldr(d, aMD, off)
}

// mimProbe finds the descriptor of the map whose id is in X0 in the table
// at *tab, leaving it in X15; the branches returned are taken when the
// table has no entry for it. X9-X12 and X14 are clobbered.
func (c *arm64Compiler) mimProbe(tab uintptr) (missing []a64Fixup) {
	c.movImm(aS1, uint64(tab))
	c.ldr(aS1, aS1, 0)
	c.cmp(aS1, aZR)
	missing = append(missing, c.branch(aEQ))
	c.bfm(a64Ubfm, aS2, 0, 60, 59) // lsl x10, x0, #4
	c.ldr(aS3, aS1, 0)             // mask<<4
	c.rrr(a64And, aS2, aS2, aS3)
	loop := len(c.b)
	c.rrr(a64Add, aS4, aS1, aS2)
	c.ldr(aS6, aS4, 16)
	c.cmp(aS6, 0)
	found := c.branch(aEQ)
	c.cmp(aS6, aZR)
	missing = append(missing, c.branch(aEQ))
	c.w(a64Imm12(a64AddImm, aS2, aS2, 16))
	c.rrr(a64And, aS2, aS2, aS3)
	c.patch(c.branch(aAL), loop)
	c.patch(found, len(c.b))
	c.ldr(aMD, aS4, 24)
	return missing
}

// outerLookup: see the amd64 version.
func (c *arm64Compiler) outerLookup(pc int, o jitOuter) {
	c.mapChecks(pc, o.handle, o.coll)
	c.checkIn(pc, 2, 0, 4, false, regionStack)
	c.ldrW(0, aS2, aS1) // the key
	c.movImm(aS3, o.max)
	c.cmp(0, aS3)
	null := []a64Fixup{c.branch(aHS)}
	c.bfm(a64Ubfm, aS4, 0, 61, 60) // lsl x12, x0, #3
	c.movImm(aS3, uint64(o.data))
	c.ldrW(0, aS3, aS4) // the id: one 32-bit load
	null = append(null, c.mimHandle(pc, o.tab)...)
	done := c.branch(aAL)
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
	c.patch(done, len(c.b))
}

// hashFound: see the amd64 version (seqRecheck's barrier orders the id's
// load before the last read of the sequence).
func (c *arm64Compiler) hashFound(pc int, h jitHash) []a64Fixup {
	if h.mimTab == 0 {
		c.hashValue(pc, h)
		return nil
	}
	c.ldr(0, 0, int32(h.t.ValOff))
	c.w(a64Imm12(a64LdrWImm, 0, 0, 0)) // the id
	c.seqRecheck()
	c.slowIf(aNE, pc)
	return c.mimHandle(pc, h.mimTab)
}

// mimHandle: see the amd64 version (the id in W0, the handle in X0).
func (c *arm64Compiler) mimHandle(pc int, tab uintptr) (null []a64Fixup) {
	c.cmp(0, aZR)
	null = append(null, c.branch(aEQ))
	c.bfm(a64Ubfm, aS4, 0, 31, 63) // lsr x12, x0, #31: an id innerHandle cannot name
	c.cmp(aS4, aZR)
	c.slowIf(aNE, pc)
	c.movImm(aMD, regionMap<<32|innerHandle)
	c.rrr(a64Orr, aMD, aMD, 0) // the handle (X15 until the probe)
	c.ldr(aS4, aCtx, offHS+8*hsMimID)
	c.cmp(aMD, aS4)
	hit := c.branch(aEQ) // resolved last: the collection has its ref
	for _, f := range c.mimProbe(tab) {
		f.target = pc
		c.slows = append(c.slows, f)
	}
	c.str(aMD, aCtx, offHS+8*hsDesc)
	c.movImm(aMD, regionMap<<32|innerHandle)
	c.rrr(a64Orr, aMD, aMD, 0)
	c.str(aMD, aCtx, offHS+8*hsMimID)
	c.patch(hit, len(c.b))
	c.rrr(a64Orr, 0, aZR, aMD)
	return null
}

// innerLookup: see the amd64 version.
func (c *arm64Compiler) innerLookup(pc int, shapes []jitInner) {
	c.movImm(aS1, uint64(uintptrOf(c.env.coll)))
	c.cmpField(aCtx, offColl, aS1)
	c.slowIf(aNE, pc)
	c.bfm(a64Ubfm, aS1, 1, 32, 63) // lsr x9, x1, #32
	c.movImm(aS2, regionMap)
	c.cmp(aS1, aS2)
	c.slowIf(aNE, pc) // NULL (the empty cache's 0) too
	c.ldr(aS1, aCtx, offHS+8*hsMimID)
	c.cmp(1, aS1)
	hit := c.branch(aEQ)           // the handle resolved last
	c.bfm(a64Ubfm, aS1, 1, 31, 31) // bit 31: innerHandle
	c.cmp(aS1, aZR)
	c.slowIf(aEQ, pc)           // a map of the collection: Go
	c.bfm(a64Ubfm, 0, 1, 0, 30) // x0 = the id (bits 0-30)
	for _, f := range c.mimProbe(mimTableAddr(c.env.coll)) {
		f.target = pc
		c.slows = append(c.slows, f)
	}
	c.str(aMD, aCtx, offHS+8*hsDesc)
	c.str(1, aCtx, offHS+8*hsMimID)
	resolved := c.branch(aAL)
	c.patch(hit, len(c.b))
	c.ldr(aMD, aCtx, offHS+8*hsDesc)
	c.patch(resolved, len(c.b))
	var done []a64Fixup
	for _, in := range shapes {
		c.movImm(aS1, in.shape)
		c.ldr(aS2, aMD, offMimShape)
		c.cmp(aS1, aS2)
		next := c.branch(aNE)
		switch in.class {
		case mimArray:
			c.arrayLookup(pc, in.arr, false) // after the probe
		case mimHash:
			c.hashLookup(pc, in.hash)
		default:
			c.lpmLookup(pc, in.lpm)
		}
		done = append(done, c.branch(aAL))
		c.patch(next, len(c.b))
	}
	c.slowIf(aAL, pc)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}
