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
	if c.unchk.access(c.plain, c.targets, c.valued, pc, bpfBase, reuse) { // S2 holds the buffer
		c.dispNext(off)
		return true
	}
	if reuse { // S4 still holds the entry, S2 the buffer
		c.ldr(aS3, aS4, hi)
		c.movImm(aS1, uint64(off+n))
		c.rrr(a64Subs, aZR, aS3, aS1)
		c.slowIf(aLO, pc)
		c.dispNext(off)
		return true
	}
	c.bfm(a64Ubfm, aS1, arm64Regs[bpfBase&15%11], 32, 63) // the region number
	c.w(a64Imm12(a64SubsImm, aZR, aS1, regionStatic))
	c.slowIf(aLO, pc) // NULL, or not a lookup's
	c.tableEntry(pc)  // S1 = &table[number] (jit_arm64_bytes.go)
	c.ldr(aS3, aS1, hi)
	c.movImm(aS4, uint64(off+n))
	c.rrr(a64Subs, aZR, aS3, aS4)
	c.slowIf(aLO, pc)
	c.ldr(aS2, aS1, offRegionBuf)
	c.rrr(a64Orr, aS4, aZR, aS1) // the entry, for valueReuse
	c.dispNext(off)
	return true
}

// dispNext makes the load or store that asked for the access (emitLoad,
// emitStore) address [S2 + off]: one instruction with a scaled immediate
// offset where off fits it (memOp), instead of S1 = off and [S2, S1].
func (c *arm64Compiler) dispNext(off int32) { c.disp, c.hasDisp = off, true }

// a64LoadImms and a64StoreImms are the unsigned-offset forms of the loads (sign-extending
// ones at size+8) and stores of each size, as a64Loads and a64Stores.
var (
	a64LoadImms  = map[uint8]uint32{1: a64LdrbImm, 2: a64LdrhImm, 4: a64LdrWImm, 8: a64LdrXImm, 9: a64LdrsbImm, 10: a64LdrshImm, 12: a64LdrswImm}
	a64StoreImms = map[uint8]uint32{1: a64StrbImm, 2: a64StrhImm, 4: a64StrWImm, 8: a64StrXImm}
)

// memOp emits the load or store of n bytes (k: a64Loads' key, or the size
// for a store) of t at the operand access left: [b, S1], or [b + disp]
// when dispNext asked for it (the immediate form when disp is a multiple
// of n below 4096*n, else S1 = disp first).
func (c *arm64Compiler) memOp(store bool, k uint8, n int32, t, b uint32) {
	reg, imm := a64Loads[k], a64LoadImms[k]
	if store {
		reg, imm = a64Stores[k], a64StoreImms[k]
	}
	if !c.hasDisp {
		c.w(a64RRR(reg, t, b, aS1))
		return
	}
	c.hasDisp = false
	if d := c.disp; d >= 0 && d%n == 0 && d/n < 4096 {
		c.w(a64Imm12(imm, t, b, uint32(d/n)))
		return
	}
	c.movImm(aS1, uint64(c.disp))
	c.w(a64RRR(reg, t, b, aS1))
}

// leaveBuf leaves the value's address (X0) in X10 (S2) for an unchecked
// access after the lookup being emitted (jit_value.go); d must be S2.
func (c *arm64Compiler) leaveBuf(d uint32) {
	if c.unchk.bufOnly {
		c.rrr(a64Orr, d, aZR, 0)
	}
}

// leaveStubs emits, for each lookup whose first value access is
// unchecked, the stub Go re-enters at after running the call in the slow
// path, and moves the next instruction's entry to it: NULL goes on (the
// access is not reached); a pointer at offset 0 of an entry at or above
// regionStatic, below the table's length, with lo 0 and hi (and whi, for
// a writable value) at least the value's size leaves its buffer in S2
// and goes on; anything else leaves the rest of the run to Go from that
// instruction. Called by finish once the jumps to instruction starts are
// resolved (none goes to such an entry: it is no jump target).
func (c *arm64Compiler) leaveStubs(entry []uint32) {
	for call, ok := range c.unchk.calls {
		if !ok || call+1 >= len(entry) {
			continue
		}
		a, _ := c.arrayAt(call)
		at := len(c.b)
		c.cmp(0, aZR)
		c.patch(c.branch(aEQ), int(entry[call+1])) // NULL
		c.bfm(a64Ubfm, aS3, 0, 32, 31)             // the offset, shifted up
		c.cmp(aS3, aZR)
		c.slowIf(aNE, call+1)
		c.bfm(a64Ubfm, aS1, 0, 32, 63) // the region number
		c.w(a64Imm12(a64SubsImm, aZR, aS1, regionStatic))
		c.slowIf(aLO, call+1)
		c.tableEntry(call + 1) // S1 = &table[number]
		c.cmpField(aS1, offRegionLo, aZR)
		c.slowIf(aNE, call+1)
		c.movImm(aS4, a.size)
		c.cmpField(aS1, offRegionHi, aS4)
		c.slowIf(aLO, call+1)
		if a.writable {
			c.cmpField(aS1, offRegionWhi, aS4)
			c.slowIf(aLO, call+1)
		}
		c.ldr(aS2, aS1, offRegionBuf)
		c.patch(c.branch(aAL), int(entry[call+1]))
		entry[call+1] = uint32(at)
	}
}
