//go:build linux && amd64

package bpf

// valueAccess is the operand of the access at pc when it goes through the
// result of a native array lookup within the value's bounds (jit_value.go):
// the region number checked (the lookup's: at least regionStatic, below
// the table's length), the entry's limit checked against off+n, and the
// buffer loaded; anything else goes to the slow path. ok is false when the
// access is not such a one (check then emits the usual check).
func (c *amd64Compiler) valueAccess(pc int, bpfBase uint8, off, n int32, write bool) (xmem, bool) {
	hi, reuse, ok := valuePlan(c.plain, c.targets, &c.valued, c.arrayAt, pc, bpfBase, off, n, write)
	if !ok {
		return c.valueFlowAccess(pc, bpfBase, off, n, write)
	}
	if c.unchecked(pc, bpfBase, reuse) { // S2 holds the buffer (jit_value.go)
		return xmem{base: xS2, index: -1, disp: off}, true
	}
	if reuse || c.leavesAt(pc) { // S1 and S2 hold the entry and the buffer
		c.cmpMemI(xmem{base: xS1, index: -1, disp: hi}, off+n)
		c.slowIf(ccB, pc)
		return xmem{base: xS2, index: -1, disp: off}, true
	}
	if c.unchk.stale(c.plain, c.targets, pc, bpfBase) {
		c.valueBuf(bpfBase)
		return xmem{base: xS2, index: -1, disp: off}, true
	}
	c.aluRR(true, 0x89, xS1, reg(bpfBase))
	c.shiftI(true, 5, xS1, 32) // the region number
	c.aluRI(true, 7, xS1, regionStatic)
	c.slowIf(ccB, pc) // NULL, or not a lookup's
	c.tableEntry(pc)  // S1 = &table[number] (jit_amd64_bytes.go)
	c.cmpMemI(xmem{base: xS1, index: -1, disp: hi}, off+n)
	c.slowIf(ccB, pc)
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS1, index: -1, disp: offRegionBuf}, false)
	return xmem{base: xS2, index: -1, disp: off}, true
}

// uncheckedCall decides, for the native lookup at call about to be emitted
// with c.leaving set, whether the access it feeds is unchecked (then its
// ways out leave only the value's address and its stub proves more).
func (c *amd64Compiler) uncheckedCall(call int) {
	c.unchk.bufOnly = c.unchk.decide(c.plain, c.targets, call)
}

// unchecked is jitUnchecked.access for the access at pc.
func (c *amd64Compiler) unchecked(pc int, base uint8, reuse bool) bool {
	return c.unchk.access(c.plain, c.targets, c.valued, pc, base, reuse)
}

// valueBuf leaves in S1 the region table entry whose number bpfBase holds
// and in S2 its buffer, with no check (jitUnchecked.stale says why the
// entry is the value's).
func (c *amd64Compiler) valueBuf(bpfBase uint8) {
	c.aluRR(true, 0x89, xS1, reg(bpfBase))
	c.shiftI(true, 5, xS1, 32)                       // the region number
	c.rr(false, true, []byte{0x69}, xS1, xS1, false) // imul: the entry's offset
	c.imm32(regionSize)
	c.rm(false, true, []byte{0x03}, xS1, ctxMem(offRegions), false)
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS1, index: -1, disp: offRegionBuf}, false)
}

// valueFlowAccess is valueAccess for an access through a register that
// holds a native array lookup's non-NULL result on every path but not in
// a straight line from it (valueFlow, jit_value_flow.go), within the
// value's bounds: the entry its number names and the buffer found with no
// compare (valueBuf), or reused from the access before it through the
// same pointer (valueReuse), and the entry's limit checked.
func (c *amd64Compiler) valueFlowAccess(pc int, bpfBase uint8, off, n int32, write bool) (xmem, bool) {
	if c.vflow == nil {
		f := valueFlow(c.plain, c.env.funcs, func(q int) bool { _, ok := c.arrayAt(q); return ok })
		c.vflow = &f
	}
	call, ok := valueFlowCall(*c.vflow, pc, bpfBase)
	if !ok {
		return xmem{}, false
	}
	if a, ok := c.arrayAt(call); !ok || !valueIn(a, off, n, write) {
		return xmem{}, false
	}
	mark(&c.valued, len(c.plain), pc)
	reuse := valueReuse(c.plain, c.targets, c.valued, pc, bpfBase)
	if c.unchecked(pc, bpfBase, reuse) { // the access before it was unchecked: S2 holds the buffer
		return xmem{base: xS2, index: -1, disp: off}, true
	}
	if !reuse {
		c.valueBuf(bpfBase)
	}
	c.cmpMemI(xmem{base: xS1, index: -1, disp: limitField(write)}, off+n)
	c.slowIf(ccB, pc)
	return xmem{base: xS2, index: -1, disp: off}, true
}
