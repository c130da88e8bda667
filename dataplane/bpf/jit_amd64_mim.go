//go:build linux && amd64

package bpf

// Native map-in-map lookups for the amd64 backend (see jit_mim_unsafe.go):
// the outer lookup of an ARRAY_OF_MAPS, and the inner lookup, which finds
// the inner map's descriptor by the id in its handle and runs the array,
// hash or LPM lookup of the descriptor's shape with the map's figures read
// from it (word).

// mimLookup emits the bpf_map_lookup_elem call at pc natively when r1 is
// loaded with an ARRAY_OF_MAPS in a straight line before it (the outer
// lookup) or with no map at all (an inner lookup, when the collection has
// maps of maps whose inner template has a native lookup), and reports
// whether it did.
func (c *amd64Compiler) mimLookup(pc int) bool {
	return c.env.emitMim(c, c.plain, c.targets, pc) // jit_mim_unsafe.go
}

// word leaves in dst a figure of the map being looked up: v, or (dyn) the
// word at off in the inner map's descriptor.
func (c *amd64Compiler) word(dst uint8, dyn bool, off int32, v uint64) {
	if !dyn {
		c.movRI(dst, int64(v))
		return
	}
	c.ldq(dst, xCtx, offHS+8*hsDesc)
	c.ldq(dst, dst, off)
}

// mimProbe finds the descriptor of the map whose id is in RAX in the
// table at *tab, leaving it in S2; the jumps returned are taken when the
// table has no entry for the id. S1 is clobbered.
func (c *amd64Compiler) mimProbe(tab uintptr) (missing []int) {
	c.movRI(xS2, int64(tab))
	c.ldq(xS2, xS2, 0)
	c.aluRR(true, 0x85, xS2, xS2)
	missing = append(missing, c.jcc(ccE))
	c.aluRR(true, 0x89, xS1, xAX)
	c.shiftI(true, 4, xS1, 4)
	c.rm(false, true, []byte{0x23}, xS1, xmem{base: xS2, index: -1}, false) // and S1, mask<<4
	loop := len(c.b)
	slot := xmem{base: xS2, index: int8(xS1), disp: 16}
	c.rm(false, true, []byte{0x3b}, xAX, slot, false) // cmp RAX, the slot's id
	found := c.jcc(ccE)
	c.cmpMemI(slot, 0)
	missing = append(missing, c.jcc(ccE))
	c.aluRI(true, 0, xS1, 16)
	c.rm(false, true, []byte{0x23}, xS1, xmem{base: xS2, index: -1}, false)
	c.jmpTo(loop)
	c.patch(found, len(c.b))
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: int8(xS1), disp: 24}, false)
	return missing
}

// outerLookup emits the call at pc as innerLookup (load_mapinmap.go) runs
// on o: a key (4 bytes at r2) at or past max_entries, or an empty slot,
// gives 0; an id the collection has a ref for gives its handle. r1-r5 are
// left as they were; anything else goes to the slow path first.
func (c *amd64Compiler) outerLookup(pc int, o jitOuter) {
	c.mapChecks(pc, o.handle, o.coll)
	m := c.checkIn(pc, 2, 0, 4, false, regionStack)
	c.rm(false, false, []byte{0x8b}, xAX, m, false)
	c.aluRI(true, 7, xAX, int32(o.max))
	null := []int{c.jcc(ccAE)}
	c.shiftI(true, 4, xAX, 3)
	c.movRI(xS1, int64(o.data))
	c.rm(false, false, []byte{0x8b}, xAX, xmem{base: xS1, index: int8(xAX)}, false) // the id: one 32-bit load
	null = append(null, c.mimHandle(pc, o.tab)...)
	done := c.jmp()
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.patch(done, len(c.b))
}

// hashFound turns the entry a hash lookup found (RAX) into r0: the value's
// region, or for the slots of a HASH_OF_MAPS the handle of the inner map
// whose id the value holds, read before a last check of the stripe's
// sequence (a writer relinking meanwhile sends the lookup to Go). It
// returns the jumps taken for NULL (an empty slot).
func (c *amd64Compiler) hashFound(pc int, h jitHash) []int {
	if h.mimTab == 0 {
		c.hashValue(pc, h)
		return nil
	}
	c.ldq(xAX, xAX, int32(h.t.ValOff))
	c.rm(false, false, []byte{0x8b}, xAX, xmem{base: xAX, index: -1}, false) // the id
	c.seqRecheck()
	c.slowIf(ccNE, pc)
	return c.mimHandle(pc, h.mimTab)
}

// mimHandle turns the inner map id in EAX into its handle in RAX, as
// innerLookup (load_mapinmap.go) does: 0 (the jumps returned) for an
// empty slot; an id the collection has no ref for yet (not in the table
// at *tab) or one innerHandle cannot name goes to the slow path.
func (c *amd64Compiler) mimHandle(pc int, tab uintptr) (null []int) {
	c.aluRR(false, 0x85, xAX, xAX)
	null = append(null, c.jcc(ccE))
	c.testRI(false, xAX, -1<<31) // an id innerHandle cannot name: Go
	c.slowIf(ccNE, pc)
	c.movRI(xS1, int64(regionMap<<32|innerHandle))
	c.aluRR(true, 0x09, xS1, xAX) // the handle
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsMimID), false)
	hit := c.jcc(ccE) // resolved last: the collection has its ref
	for _, j := range c.mimProbe(tab) {
		c.slows = append(c.slows, jitFixup{j, pc})
	}
	c.stq(xS2, xCtx, offHS+8*hsDesc)
	c.movRI(xS1, int64(regionMap<<32|innerHandle))
	c.aluRR(true, 0x09, xS1, xAX)
	c.stq(xS1, xCtx, offHS+8*hsMimID)
	c.patch(hit, len(c.b))
	c.aluRR(true, 0x89, xAX, xS1)
	return null
}

// innerLookup emits the call at pc for r1 an inner map's handle: the
// descriptor of the id it names, then the lookup of the first of shapes
// the descriptor has. Any other r1, another collection, an id without a
// descriptor or a shape not among them go to the slow path.
func (c *amd64Compiler) innerLookup(pc int, shapes []jitInner) {
	c.movRI(xS1, int64(uintptrOf(c.env.coll)))
	c.rm(false, true, []byte{0x39}, xS1, ctxMem(offColl), false)
	c.slowIf(ccNE, pc)
	c.aluRR(true, 0x89, xAX, xDI)
	c.shiftI(true, 5, xAX, 32)
	c.aluRI(true, 7, xAX, regionMap)
	c.slowIf(ccNE, pc) // NULL (the empty cache's 0) too
	c.rm(false, true, []byte{0x3b}, xDI, hsMem(hsMimID), false)
	hit := c.jcc(ccE) // the handle resolved last
	c.aluRR(false, 0x89, xAX, xDI)
	c.testRI(false, xAX, -1<<31)
	c.slowIf(ccE, pc)                     // a map of the collection: Go
	c.aluRI(false, 4, xAX, innerHandle-1) // the id
	for _, j := range c.mimProbe(mimTableAddr(c.env.coll)) {
		c.slows = append(c.slows, jitFixup{j, pc})
	}
	c.stq(xS2, xCtx, offHS+8*hsDesc)
	c.stq(xDI, xCtx, offHS+8*hsMimID)
	resolved := c.jmp()
	c.patch(hit, len(c.b))
	c.ldq(xS2, xCtx, offHS+8*hsDesc)
	c.patch(resolved, len(c.b))
	var done []int
	for _, in := range shapes {
		c.movRI(xS1, int64(in.shape))
		c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: offMimShape}, false)
		next := c.jcc(ccNE)
		switch in.class {
		case mimArray:
			c.arrayLookup(pc, in.arr, false) // after the probe
		case mimHash:
			c.hashLookup(pc, in.hash)
		default:
			c.lpmLookup(pc, in.lpm)
		}
		done = append(done, c.jmp())
		c.patch(next, len(c.b))
	}
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}
