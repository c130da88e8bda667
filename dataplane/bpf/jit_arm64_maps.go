//go:build linux && arm64

package bpf

import "math/bits"

// Native bpf_map_lookup_elem on arrays for the arm64 backend: the same
// steps as the amd64 one (jit_amd64_maps.go), in X0 (r0, which the call
// overwrites) and the scratch registers X9-X12; r1-r5 are left alone.

// arrayAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of an array map that r1 is loaded with in a straight
// line before it.
func (c *arm64Compiler) arrayAt(pc int) (jitArray, bool) {
	if !helperOf(c.plain[pc].imm).nativeArray() { // helpers_table.go
		return jitArray{}, false
	}
	k, ok := mapAt(c.plain, c.targets, pc)
	if !ok {
		return jitArray{}, false
	}
	return c.env.arrayFor(k)
}

func (c *arm64Compiler) cmp(n, m uint32) { c.rrr(a64Cmp, 0, n, m) }

// ldrW is LDR Wt, [Xn, Xm] (32-bit load, register offset).
func (c *arm64Compiler) ldrW(t, n, m uint32) { c.w(a64RRR(a64LdrW, t, n, m)) }

// subImm is SUB Xd, Xn, #imm (imm below 4096).
func (c *arm64Compiler) subImm(d, n, imm uint32) { c.w(a64Imm12(a64SubImm, d, n, imm)) }

func (c *arm64Compiler) mul(d, n, m uint32) { c.w(a64RRR(a64Mul, d, n, m)) }

// mulK multiplies X d by v, a map's figure known at compile time:
// nothing for 1, LSL for a power of two, else MUL through X t.
func (c *arm64Compiler) mulK(d uint32, v uint64, t uint32) {
	switch {
	case v == 1:
	case v != 0 && v&(v-1) == 0:
		s := uint32(bits.TrailingZeros64(v))
		c.bfm(a64Ubfm, d, d, (64-s)&63, 63-s) // lsl
	default:
		c.movImm(t, v)
		c.mul(d, d, t)
	}
}

// cmpField compares the qword at [base+off] with X m.
func (c *arm64Compiler) cmpField(base uint32, off int32, m uint32) {
	c.ldr(aS3, base, off)
	c.cmp(aS3, m)
}

// arrayLookup emits the call at pc as the interpreter runs
// bpf_map_lookup_elem on a; see the amd64 version for the contract. fresh
// says the call's code starts here (the scratch registers are as the
// instruction before left them: arrayKey), not after a map of maps' probe.
func (c *arm64Compiler) arrayLookup(pc int, a jitArray, fresh bool) {
	if !a.dyn {
		c.mapChecks(pc, a.handle, a.coll) // nothing (jit_first.go)
	}
	c.unchk.bufOnly = !a.dyn && c.unchk.decide(c.plain, c.targets, pc) // jit_value.go
	// No region at all (jit_arm64_elide.go):
	elide := c.elideAt(pc, a)
	defer func() { c.unchk.bufOnly = false }()
	c.arrayKey(pc, fresh)
	c.ldrW(0, aS2, aS1) // the key
	if a.dyn {
		c.word(aS3, a.dyn, offMimMax, a.max)
		c.cmp(0, aS3)
	} else {
		c.cmpImm(0, a.max) // jit_arm64_tail.go
	}
	null := []a64Fixup{c.branch(aHS)}
	if f, ok := c.arraySlot(a); ok {
		null = append(null, f)
	}
	if elide {
		c.elideRegion()
	} else {
		c.valueRegion(pc, a)
	}
	done := c.branch(aAL)
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
	c.patch(done, len(c.b))
}

// arrayKey leaves in S2 and S1 the buffer and offset of the 4-byte key
// at r2 of the lookup at pc, checked as loadSlice checks it (checkIn),
// with no check when r2 is r10 plus a constant in the frame
// (stackKeyAccess), and with stackBase taken from S2 when the stack
// access before the call left it there (stackHeld) and nothing of the
// call is emitted before this (fresh).
func (c *arm64Compiler) arrayKey(pc int, fresh bool) {
	if off, ok := stackKeyOff(c.plain, c.targets, pc, 2); ok && fresh && stackProven(10, off, 4) && c.stackHeld(pc) {
		c.w(a64Imm12(a64SubImm, aS1, arm64Regs[10], uint32(-off))) // off < 0
		return
	}
	c.checkIn(pc, 2, 0, 4, false, regionStack)
}

// arraySlot is the amd64 arraySlot: the key in X0 becomes its slot's
// address; a per-CPU array's CPU out of range takes the branch returned.
func (c *arm64Compiler) arraySlot(a jitArray) (badCPU a64Fixup, ok bool) {
	if k, ok := a.pcpuBase(); ok { // the Runner's CPU base (jit_first.go)
		c.ldr(aS3, aCtx, offPCPU+8*k)
		c.cmp(aS3, aZR)
		badCPU = c.branch(aEQ) // no slots for this CPU
		c.mulK(0, a.elem, aS4)
		c.rrr(a64Add, 0, 0, aS3) // X0 = the slot's first byte
		return badCPU, true
	}
	if a.ncpu != 1 {
		c.ldr(aS3, aCtx, offCPU)
		c.word(aS4, a.dyn, offMimNCPU, a.ncpu)
		c.cmp(aS3, aS4) // unsigned: a negative CPU is out of range too
		badCPU, ok = c.branch(aHS), true
		c.word(aS4, a.dyn, offMimMax, a.max)
		c.mul(aS3, aS3, aS4)
		c.rrr(a64Add, 0, 0, aS3)
	}
	if a.dyn {
		c.word(aS3, a.dyn, offMimElem, a.elem)
		c.mul(0, 0, aS3)
	} else {
		c.mulK(0, a.elem, aS3)
	}
	c.word(aS3, a.dyn, offMimData, uint64(a.data))
	c.rrr(a64Add, 0, 0, aS3) // X0 = the slot's first byte
	return badCPU, ok
}

// valueRegion turns the value address in X0 into its tagged pointer as
// addRegion does (see the amd64 version): X9 = n, X10 = &table[n], X12 =
// the value's size.
func (c *arm64Compiler) valueRegion(pc int, a jitArray) {
	c.nregions++ // the only code that grows the table (burstRegions)
	c.movImm(aS4, a.size)
	var done []a64Fixup
	if a.first != 0 {
		done = append(done, c.firstRegion(pc, a))
	}
	c.ldr(aS2, aCtx, offRegions)
	c.ldr(aS1, aCtx, offRegionsLen)
	c.movImm(aS3, uint64(regionSize))
	c.w(a64Msub3(a64Madd, aS2, aS1, aS3, aS2)) // x10 = x9*size + x10
	var found, notFound []a64Fixup
	for t := int32(1); t <= regionSearchBack; t++ {
		c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(regionStatic+t-1))) // cmp x9, #k
		notFound = append(notFound, c.branch(aLS))                    // n-t < regionStatic
		e := -t * regionSize
		c.cmpField(aS2, e+offRegionBuf, 0)
		next := []a64Fixup{c.branch(aNE)}
		c.cmpField(aS2, e+offRegionBufLen, aS4)
		next = append(next, c.branch(aNE))
		c.cmpField(aS2, e+offRegionWhi, aZR)
		if a.writable {
			next = append(next, c.branch(aEQ))
		} else {
			next = append(next, c.branch(aNE))
		}
		c.leaveBuf(aS2)             // the table's end is no longer needed
		c.subImm(0, aS1, uint32(t)) // x0 = n - t
		found = append(found, c.branch(aAL))
		for _, f := range next {
			c.patch(f, len(c.b))
		}
	}
	for _, f := range notFound {
		c.patch(f, len(c.b))
	}
	c.movImm(aS3, maxRegions)
	c.cmp(aS1, aS3)
	c.slowIf(aHS, pc)
	c.cmpField(aCtx, offRegionsCap, aS1)
	c.slowIf(aLS, pc) // cap <= n
	c.sameRegion(pc, a)
	c.w(a64Imm12(a64AddImm, aS3, aS1, 1)) // x11 = n + 1
	c.str(aS3, aCtx, offRegionsLen)
	c.leaveBuf(aS2)
	c.rrr(a64Orr, 0, aZR, aS1) // x0 = n
	for _, f := range found {
		c.patch(f, len(c.b))
	}
	c.bfm(a64Ubfm, 0, 0, 32, 31) // lsl x0, x0, #32
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// sameRegion sends the call at pc to the slow path unless the entry at
// X10 is the value at X0's whole region, as addRegion appends it (X12 =
// the value's size).
func (c *arm64Compiler) sameRegion(pc int, a jitArray) {
	c.cmpField(aS2, offRegionBuf, 0)
	c.slowIf(aNE, pc)
	w := uint64(0)
	if a.writable {
		w = a.size
	}
	c.movImm(aS5, w)
	for _, f := range []struct {
		off int32
		m   uint32
	}{{offRegionBufLen, aS4}, {offRegionLo, aZR}, {offRegionHi, aS4}, {offRegionWhi, aS5}} {
		c.cmpField(aS2, f.off, f.m)
		c.slowIf(aNE, pc)
	}
}

// firstRegion is the amd64 firstRegion: a table still at its fixed length
// a.first reuses the entry past its end for the value, proven by the tag
// (jit_first.go) or else by all its fields (then the tag is set), without
// the search, and the region number is a constant. It returns the branch
// to the end; another length goes on to the search. X12 = the value's
// size (valueRegion).
func (c *arm64Compiler) firstRegion(pc int, a jitArray) (done a64Fixup) {
	c.ldr(aS1, aCtx, offRegionsLen)
	c.movImm(aS3, uint64(a.first))
	c.cmp(aS1, aS3)
	other := c.branch(aNE)
	tag, tagged := firstTag(a)
	var full a64Fixup
	if tagged {
		c.movImm(aS1, tag)
		c.rrr(a64Orr, aS1, aS1, 0) // x9 = the value's tag
		c.ldr(aS3, aCtx, offFirst)
		c.cmp(aS3, aS1)
		full = c.branch(aNE)
	}
	hit := len(c.b)
	c.movImm(aS3, uint64(a.first+1))
	c.str(aS3, aCtx, offRegionsLen)
	c.leaveBuf(aS2)
	c.movImm(0, uint64(a.first)<<32)
	done = c.branch(aAL)
	if tagged {
		c.patch(full, len(c.b))
	}
	c.movImm(aS2, uint64(a.first))
	c.cmpField(aCtx, offRegionsCap, aS2)
	c.slowIf(aLS, pc) // cap <= first: no entry past the end
	c.ldr(aS2, aCtx, offRegions)
	c.movImm(aS3, uint64(a.first*regionSize))
	c.rrr(a64Add, aS2, aS2, aS3) // x10 = &table[first]
	c.sameRegion(pc, a)
	if tagged {
		c.movImm(aS2, firstTagFree)
		c.rrr(a64Tst, 0, 0, aS2)
		c.patch(c.branch(aNE), hit) // no tag for such an address
		c.str(aS1, aCtx, offFirst)
	}
	c.patch(c.branch(aAL), hit)
	c.patch(other, len(c.b))
	return done
}

// nativeHelpersArch says the backend compiles the helpers
// TestJITNativeHelpers lists natively.
const nativeHelpersArch = true
