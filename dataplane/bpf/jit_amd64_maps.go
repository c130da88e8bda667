//go:build linux && amd64

package bpf

// Native bpf_map_lookup_elem on arrays for the amd64 backend (see jitArray).

// arrayAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of an array map that r1 is loaded with in a straight
// line before it.
func (c *amd64Compiler) arrayAt(pc int) (jitArray, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitArray{}, false
	}
	return c.env.arrayFor(k)
}

// lookupMapAt is the number of the map a bpf_map_lookup_elem call at pc
// looks in, when r1 is loaded with it in a straight line before the call.
func (c *amd64Compiler) lookupMapAt(pc int) (uint32, bool) {
	if !helperOf(c.plain[pc].imm).nativeArray() { // helpers_table.go
		return 0, false
	}
	return mapAt(c.plain, c.targets, pc)
}

// mapChecks would send the call at pc to the slow path unless r1 is
// handle and the Runner's collection is coll (what the compile-time map
// stands for); it emits nothing, as neither can fail (mapChecksProof in
// jit_first.go).
func (c *amd64Compiler) mapChecks(pc int, handle uint64, coll uintptr) {}

func ctxMem(disp int32) xmem { return xmem{base: xCtx, index: -1, disp: disp} }

// cmpMemI compares the qword at m with imm (sign-extended, as CMP does).
func (c *amd64Compiler) cmpMemI(m xmem, imm int32) {
	if fits8(imm) {
		c.rm(false, true, []byte{0x83}, 7, m, false)
		c.byte1(byte(int8(imm)))
		return
	}
	c.rm(false, true, []byte{0x81}, 7, m, false)
	c.imm32(imm)
}

// arrayLookup emits the call at pc as the interpreter runs
// bpf_map_lookup_elem on a (callHelper, mapRef.arrayValue, addRegion):
// r0 = a pointer to the value's region, or 0 when the key is out of range;
// r1-r5 are left as they were. What it does not handle natively (a key
// that fails its load check, a region table with no entry to reuse) goes
// to the slow path, which runs
// the helper in Go from the start: nothing is written before that point.
func (c *amd64Compiler) arrayLookup(pc int, a jitArray, fresh bool) {
	// The map's checks and the key's (jit_amd64_cost.go): 4 bytes at r2;
	// fresh: no code of the call is emitted before this.
	// r0 (RAX) is free, the call overwrites it.
	m := c.arrayKey(pc, a, fresh)
	c.leaving = !a.dyn && lookupFeeds(c.plain, c.targets, pc) // jit_amd64_cost.go
	if c.leaving {
		c.uncheckedCall(pc) // jit_amd64_value.go
	}
	elide := c.elideAt(pc, a) // jit_amd64_elide.go
	defer func() { c.leaving, c.unchk.bufOnly = false, false }()
	c.rm(false, false, []byte{0x8b}, xAX, m, false)
	c.cmpMax(a) // jit_amd64_cost.go
	null := []int{c.jcc(ccAE)}
	if j, ok := c.arraySlot(a); ok { // a CPU out of range finds nothing, as arrayValue
		null = append(null, j)
	}
	if elide {
		c.elideRegion()
	} else {
		c.valueRegion(pc, a)
	}
	done := c.jmp()
	for _, n := range null {
		c.patch(n, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.leaveNull()
	c.patch(done, len(c.b))
	if c.leaving {
		if c.leaves == nil {
			c.leaves = make([]bool, len(c.plain))
		}
		c.leaves[pc] = true
	}
}

// arraySlot turns the key in RAX (below max) into the address of its
// slot: slot cpu*max + key of a per-CPU array, where a CPU out of range
// (negative included, compared unsigned) takes the jump it returns (ok).
// An inner map's slot (a.dyn) reads its figures from the descriptor and
// clobbers S2 too; a map known at compile time leaves S2 alone (the
// update's value pointer lives there).
func (c *amd64Compiler) arraySlot(a jitArray) (badCPU int, ok bool) {
	if a.dyn {
		return c.arraySlotDyn(a)
	}
	if k, ok := a.pcpuBase(); ok { // the Runner's CPU base (jit_first.go)
		c.ldq(xS1, xCtx, offPCPU+8*k)
		c.aluRR(true, 0x85, xS1, xS1)
		badCPU = c.jcc(ccE) // no slots for this CPU
		c.mulI(xAX, a.elem)
		c.aluRR(true, 0x01, xAX, xS1) // RAX = the slot's first byte
		return badCPU, true
	}
	if a.ncpu != 1 {
		c.rm(false, true, []byte{0x8b}, xS1, ctxMem(offCPU), false)
		c.aluRI(true, 7, xS1, int32(a.ncpu))
		badCPU, ok = c.jcc(ccAE), true
		c.mulI(xS1, a.max) // jit_amd64_cost.go
		c.aluRR(true, 0x01, xAX, xS1)
	}
	c.mulI(xAX, a.elem)
	c.movRI(xS1, int64(a.data))
	c.aluRR(true, 0x01, xAX, xS1) // RAX = the slot's first byte
	return badCPU, ok
}

// arraySlotDyn is arraySlot for an inner map, its figures read from the
// descriptor (word).
func (c *amd64Compiler) arraySlotDyn(a jitArray) (badCPU int, ok bool) {
	if a.ncpu != 1 {
		c.rm(false, true, []byte{0x8b}, xS1, ctxMem(offCPU), false)
		c.word(xS2, a.dyn, offMimNCPU, a.ncpu)
		c.aluRR(true, 0x39, xS1, xS2)
		badCPU, ok = c.jcc(ccAE), true
		c.word(xS2, a.dyn, offMimMax, a.max)
		c.rr(false, true, []byte{0x0f, 0xaf}, xS1, xS2, false) // imul
		c.aluRR(true, 0x01, xAX, xS1)
	}
	c.word(xS1, a.dyn, offMimElem, a.elem)
	c.rr(false, true, []byte{0x0f, 0xaf}, xAX, xS1, false)
	c.word(xS1, a.dyn, offMimData, uint64(a.data))
	c.aluRR(true, 0x01, xAX, xS1) // RAX = the slot's first byte
	return badCPU, ok
}

// valueRegion turns the value address in RAX into its tagged pointer as
// addRegion does: the region of the same value (address, length,
// writability) among the last regionSearchBack entries of the table at or
// above regionStatic, else the entry just past the table's end when it
// still describes exactly this value (left by the same lookup in the last
// run: the table's length grows by one), else the slow path (Go appends
// the entry, or reports the table full). Only the scratch registers are
// used: S1 = n, S2 = &table[n] (n*regionSize added to the table's base in
// one instruction, so no BPF register needs spilling).
func (c *amd64Compiler) valueRegion(pc int, a jitArray) {
	c.nregions++ // the only code that grows the table (burstRegions)
	done := -1
	if a.first != 0 {
		done = c.firstRegion(pc, a)
	}
	c.rm(false, true, []byte{0x8b}, xS1, ctxMem(offRegionsLen), false) // n
	c.rr(false, true, []byte{0x69}, xS2, xS1, false)
	c.imm32(regionSize)
	c.rm(false, true, []byte{0x03}, xS2, ctxMem(offRegions), false) // S2 = &table[n]
	size := int32(a.size)
	var found, notFound []int
	for t := int32(1); t <= regionSearchBack; t++ {
		c.aluRI(true, 7, xS1, regionStatic+t-1)
		notFound = append(notFound, c.jcc(ccBE)) // n-t < regionStatic
		e := -t * regionSize
		c.rm(false, true, []byte{0x39}, xAX, xmem{base: xS2, index: -1, disp: e + offRegionBuf}, false)
		next := []int{c.jcc(ccNE)}
		c.cmpMemI(xmem{base: xS2, index: -1, disp: e + offRegionBufLen}, size)
		next = append(next, c.jcc(ccNE))
		c.cmpMemI(xmem{base: xS2, index: -1, disp: e + offRegionWhi}, 0)
		if a.writable {
			next = append(next, c.jcc(ccE))
		} else {
			next = append(next, c.jcc(ccNE))
		}
		c.leaveFound(t, e) // RAX = n-t
		found = append(found, c.jmp())
		for _, j := range next {
			c.patch(j, len(c.b))
		}
	}
	for _, j := range notFound {
		c.patch(j, len(c.b))
	}
	c.aluRI(true, 7, xS1, maxRegions)
	c.slowIf(ccAE, pc)
	c.rm(false, true, []byte{0x3b}, xS1, ctxMem(offRegionsCap), false)
	c.slowIf(ccAE, pc)
	c.sameRegion(pc, 0, a)
	c.leaveAppend() // len = n+1, RAX = n
	for _, j := range found {
		c.patch(j, len(c.b))
	}
	c.shiftI(true, 4, xAX, 32) // the region number, offset 0
	if done >= 0 {
		c.patch(done, len(c.b))
	}
}

// sameRegion sends the call at pc to the slow path unless the entry at
// S2+disp is the value at RAX's whole region, as addRegion appends it.
func (c *amd64Compiler) sameRegion(pc int, disp int32, a jitArray) {
	size := int32(a.size)
	w := int32(0)
	if a.writable {
		w = size
	}
	c.rm(false, true, []byte{0x39}, xAX, xmem{base: xS2, index: -1, disp: disp + offRegionBuf}, false)
	c.slowIf(ccNE, pc)
	for _, f := range []struct {
		disp int32
		v    int32
	}{{offRegionBufLen, size}, {offRegionLo, 0}, {offRegionHi, size}, {offRegionWhi, w}} {
		c.cmpMemI(xmem{base: xS2, index: -1, disp: disp + f.disp}, f.v)
		c.slowIf(ccNE, pc)
	}
}

// firstRegion is valueRegion's way for the run's first new value (a.first
// known): when the table is still at its fixed length a.first, no entry of
// the search window is the value's (jitArray.first), so the entry just
// past the end is reused when it describes the value: proven by the tag
// (jit_first.go) in one compare, else by all its fields, after which the
// tag is set; the region number is a constant, which the value's accesses
// then do not wait for. It returns the jump to the end; another length
// goes on to the search (the code after it).
func (c *amd64Compiler) firstRegion(pc int, a jitArray) (done int) {
	c.cmpMemI(ctxMem(offRegionsLen), a.first)
	other := c.jcc(ccNE)
	tag, tagged := firstTag(a)
	var full int
	if tagged {
		c.movRI(xS1, int64(tag))
		c.aluRR(true, 0x09, xS1, xAX) // S1 = the value's tag
		c.rm(false, true, []byte{0x39}, xS1, ctxMem(offFirst), false)
		full = c.jcc(ccNE)
	}
	hit := len(c.b)
	c.movMemI(ctxMem(offRegionsLen), a.first+1) // len = first+1
	c.leaveFirst(a.first)
	c.movRI(xAX, int64(a.first)<<32)
	done = c.jmp()
	if tagged {
		c.patch(full, len(c.b))
	}
	c.cmpMemI(ctxMem(offRegionsCap), a.first)
	c.slowIf(ccBE, pc) // cap <= first: no entry past the end
	c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offRegions), false)
	c.sameRegion(pc, a.first*regionSize, a)
	if tagged {
		free := uint64(firstTagFree)
		c.movRI(xS2, int64(free))
		c.aluRR(true, 0x85, xS2, xAX)
		c.patch(c.jcc(ccNE), hit) // no tag for such an address
		c.rm(false, true, []byte{0x89}, xS1, ctxMem(offFirst), false)
	}
	c.patch(c.jmp(), hit)
	c.patch(other, len(c.b))
	return done
}
