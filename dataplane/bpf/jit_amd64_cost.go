//go:build linux && amd64

package bpf

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// arrayKey emits arrayLookup's check of the key (none of r1: mapChecks)
// and returns the key's operand. A key at a constant offset from r10 that stackProven accepts
// (stackKeyOff) is addressed with no region check; any other is checked
// as loadSlice checks it (checkIn), failing to the slow path.
func (c *amd64Compiler) arrayKey(pc int, a jitArray, fresh bool) xmem {
	if !a.dyn {
		c.mapChecks(pc, a.handle, a.coll)
	}
	if off, ok := stackKeyOff(c.plain, c.targets, pc, 2); ok {
		if fresh && stackProven(10, off, 4) && c.stackHeld(pc) {
			// The key's store left stackBase in S2 (xdp-filter's key =
			// port; lookup(&key)), and nothing of the call is emitted
			// yet: as arm64's arrayKey.
			return xmem{base: xS2, index: int8(reg(10)), disp: off}
		}
		if m, ok := c.stackAccess(10, off, 4); ok {
			return m
		}
	}
	return c.checkIn(pc, 2, 0, 4, false, regionStack)
}

// The first access to an array's value after its native lookup
// (lookupFeeds) uses the region table entry and buffer that the lookup
// leaves in the scratch registers, S1 = &table[number] and S2 = the
// value's first byte, as valueAccess's reuse does after an access, and so
// checks only its own limit (the entry's hi, or whi, against off+n). Every
// way out of the lookup leaves them: the three ways to the value's region
// (leaveFirst, leaveFound, leaveAppend), NULL (S1 = &table[0], the
// regionNone entry, whose hi and whi are 0: any access through it fails
// its check and goes to the slow path, which faults as the interpreter),
// and an exit to Go (a slow path at the call), after which Go re-enters at
// the next instruction's entry: that entry is moved to a stub (leaveStubs)
// that finds them from r0 as valueAccess's full check does, or points S1
// at table[0] when r0 is not a lookup's pointer at offset 0 of an entry at
// or above regionStatic with lo 0. Between the call and the access the
// code keeps the scratch registers (keepsScratch) and nothing enters from
// elsewhere (no jump target), so they are the lookup's there.

// leaveFirst is firstRegion's: the entry table[first], the value at RAX.
func (c *amd64Compiler) leaveFirst(first int32) {
	if !c.leaving {
		return
	}
	if !c.unchk.bufOnly { // an unchecked access needs no entry
		c.ldq(xS1, xCtx, offRegions)
		c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xS1, index: -1, disp: first * regionSize}, false)
	}
	c.aluRR(true, 0x89, xS2, xAX)
}

// leaveFound sets RAX to n-t, the number of the entry at S2+e found in
// valueRegion's search (S1 = n), and leaves it and its buffer.
func (c *amd64Compiler) leaveFound(t, e int32) {
	c.rm(false, true, []byte{0x8d}, xAX, xmem{base: xS1, index: -1, disp: -t}, false) // n-t
	if !c.leaving {
		return
	}
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xS2, index: -1, disp: e}, false)
	c.ldq(xS2, xS1, offRegionBuf)
}

// leaveAppend is the end of valueRegion's way through the entry just past
// the table's end (S1 = n, S2 = &table[n], checked): the length n+1, RAX =
// n, and the entry and its buffer left.
func (c *amd64Compiler) leaveAppend() {
	if !c.leaving {
		c.rm(false, true, []byte{0x8d}, xS2, xmem{base: xS1, index: -1, disp: 1}, false)
		c.rm(false, true, []byte{0x89}, xS2, ctxMem(offRegionsLen), false) // len = n+1
		c.aluRR(true, 0x89, xAX, xS1)
		return
	}
	c.rm(false, true, []byte{0x8d}, xAX, xmem{base: xS1, index: -1, disp: 1}, false)
	c.rm(false, true, []byte{0x89}, xAX, ctxMem(offRegionsLen), false) // len = n+1
	c.aluRR(true, 0x89, xAX, xS1)
	c.aluRR(true, 0x89, xS1, xS2)
	c.ldq(xS2, xS1, offRegionBuf)
}

// leaveNull is the NULL way's: S1 = &table[0].
func (c *amd64Compiler) leaveNull() {
	if c.leaving {
		c.ldq(xS1, xCtx, offRegions)
	}
}

// leaveStubs emits, for each call whose lookup leaves the scratch
// registers (c.leaves), the stub Go re-enters at after running the call
// in the slow path, and moves the next instruction's entry to it. Called
// by finish once the jumps to instruction starts are resolved (none goes
// to such an entry: it is no jump target).
func (c *amd64Compiler) leaveStubs(entry []uint32) {
	for call, ok := range c.leaves {
		if !ok || call+1 >= len(entry) {
			continue
		}
		at := len(c.b)
		var bad []int
		c.aluRR(true, 0x89, xS1, xAX)
		c.aluRR(false, 0x85, xAX, xAX) // offset 0
		bad = append(bad, c.jcc(ccNE))
		c.shiftI(true, 5, xS1, 32) // the region number
		c.aluRI(true, 7, xS1, regionStatic)
		bad = append(bad, c.jcc(ccB))
		c.rm(false, true, []byte{0x3b}, xS1, ctxMem(offRegionsLen), false)
		bad = append(bad, c.jcc(ccAE))
		c.rr(false, true, []byte{0x69}, xS1, xS1, false)
		c.imm32(regionSize)
		c.rm(false, true, []byte{0x03}, xS1, ctxMem(offRegions), false) // S1 = &table[number]
		c.cmpMemI(xmem{base: xS1, index: -1, disp: offRegionLo}, 0)
		bad = append(bad, c.jcc(ccNE))
		unchecked := c.unchk.calls != nil && c.unchk.calls[call]
		if unchecked { // the entry covers the whole value (jit_value.go)
			bad = append(bad, c.wholeValue(call)...)
		}
		c.ldq(xS2, xS1, offRegionBuf)
		c.patch(c.jmp(), int(entry[call+1]))
		for _, j := range bad {
			c.patch(j, len(c.b))
		}
		c.ldq(xS1, xCtx, offRegions) // table[0]: every access fails its check
		if unchecked {               // NULL goes on (the access is not reached), else Go
			c.aluRR(true, 0x85, xAX, xAX)
			c.slowIf(ccNE, call+1)
		}
		c.patch(c.jmp(), int(entry[call+1]))
		entry[call+1] = uint32(at)
	}
}

// leavesAt reports whether the access at pc may use what a lookup left
// (lookupFresh over c.leaves).
func (c *amd64Compiler) leavesAt(pc int) bool {
	return lookupFresh(c.plain, c.targets, pc, func(call int) bool { return c.leaves != nil && c.leaves[call] })
}

// jitResume is a load at pc that uses what the load before it left in the
// scratch registers, its code ending at after: Go re-enters pc through a
// stub that emits the full load and goes on at after (leaveStubs).
type jitResume struct{ pc, after int }

// ctxReuse emits the context load at pc into dst from the frame and the
// tag that the context load right before it left in S1 and S2
// (ctxAfterCtx; ctxFull proved the frame there), and reports whether it
// did. The frame's nil check and the tag's 10-byte move are left out.
func (c *amd64Compiler) ctxReuse(pc int, dst uint8, off int32) bool {
	if !ctxAfterCtx(c.plain, c.targets, pc) {
		return false
	}
	c.rm(false, true, []byte{0x8b}, dst, xmem{base: xS1, index: -1, disp: off}, false)
	c.aluRR(true, 0x09, dst, xS2)
	c.ctxResumes = append(c.ctxResumes, jitResume{pc: pc, after: len(c.b)})
	return true
}

// ctxStubs emits the re-entry stub of each context load ctxReuse or
// ctxField compiled with the frame the load before it left: the full
// load (ctxFull, or the frame and the field), then on to the code after it.
func (c *amd64Compiler) ctxStubs(entry []uint32) {
	for _, r := range c.ctxResumes {
		at := len(c.b)
		dst, _ := regs(c.plain[r.pc])
		if f := ctxScalarAt(c.ctxFields, r.pc); f != 0 {
			c.frame(r.pc)
			c.ldField(dst, f)
		} else {
			c.ctxFull(r.pc, dst, ctxFieldOff(c.plain[r.pc].op))
		}
		c.patch(c.jmp(), r.after)
		entry[r.pc] = uint32(at)
	}
}

// ctxField emits the load of the context's scalar field at xdp_md offset
// f (ctxScalarLoads) into dst: a 32-bit load of the Frame's field, which
// zero-extends it as the interpreter's slowLoad does. Right after another
// context load (ctxAfterCtx) the frame that load left in S1 is used, and
// Go re-enters through a stub that loads it again (ctxStubs).
func (c *amd64Compiler) ctxField(pc int, dst uint8, f int32) {
	if !ctxAfterCtx(c.plain, c.targets, pc) {
		c.frame(pc)
		c.ldField(dst, f)
		return
	}
	c.ldField(dst, f)
	c.ctxResumes = append(c.ctxResumes, jitResume{pc: pc, after: len(c.b)})
}

// ldField loads the Frame's field for xdp_md offset f from the frame at S1.
func (c *amd64Compiler) ldField(dst uint8, f int32) {
	c.rm(false, false, []byte{0x8b}, dst, xmem{base: xS1, index: -1, disp: frameFieldOff(f)}, false)
}

// cmpMax compares the key in RAX (zero-extended) with a's max_entries: an
// immediate for a map known at compile time whose figure fits one (it is
// positive, so the sign extension of CMP leaves it as it is), else as
// word reads it.
func (c *amd64Compiler) cmpMax(a jitArray) {
	if !a.dyn && a.max <= math.MaxInt32 {
		c.aluRI(true, 7, xAX, int32(a.max))
		return
	}
	c.word(xS1, a.dyn, offMimMax, a.max)
	c.aluRR(true, 0x39, xAX, xS1)
}

// mulI multiplies r by v (a map's figure known at compile time, below
// 2^31 as the loader bounds them): nothing for 1, a shift for a power of
// two, else IMUL.
func (c *amd64Compiler) mulI(r uint8, v uint64) {
	switch {
	case v == 1:
	case v != 0 && v&(v-1) == 0:
		c.shiftI(true, 4, r, uint8(bits.TrailingZeros64(v)))
	default:
		c.rr(false, true, []byte{0x69}, r, r, false)
		c.imm32(int32(v))
	}
}

// atomicAccess is the operand of the atomic operation at pc on n bytes at
// reg(base)+off, a store as the interpreter checks it: through an array
// lookup's result within the value (valueAccess, whose entry the lookup
// may have left: lookupFeeds counts only loads and stores, so an atomic
// right after the lookup takes the full value check), else the usual check.
func (c *amd64Compiler) atomicAccess(pc int, base uint8, off, n int32) xmem {
	if m, ok := c.valueAccess(pc, base, off, n, true); ok {
		return m
	}
	return c.check(pc, base, off, n, true)
}

// wholeValue emits the stub's proof, for the lookup at call whose access
// is unchecked, that the entry at S1 covers the whole value: hi and, for a
// writable value, whi at least its size; it returns the jumps taken when
// not.
func (c *amd64Compiler) wholeValue(call int) []int {
	a, _ := c.arrayAt(call)
	size := int32(a.size)
	c.cmpMemI(xmem{base: xS1, index: -1, disp: offRegionHi}, size)
	bad := []int{c.jcc(ccB)}
	if a.writable {
		c.cmpMemI(xmem{base: xS1, index: -1, disp: offRegionWhi}, size)
		bad = append(bad, c.jcc(ccB))
	}
	return bad
}

// threadJumps points each jump and conditional jump that patch resolved
// (JMP rel32, E9, or Jcc rel32, 0F 8x) and that lands on an unconditional
// JMP rel32 at the final target of that chain, which the code reaches
// anyway and a JMP does nothing else on the way: a lookup's way out
// through its done jump to the code after the null case is one jump
// instead of two. Every target is an instruction's start, where E9 can
// only be JMP. Other displacements (LEA of a return address, whose value
// Go compares) are left alone.
func (a *x86asm) threadJumps() {
	for _, pos := range a.patched {
		jump := pos >= 1 && a.b[pos-1] == 0xe9 || pos >= 2 && a.b[pos-2] == 0x0f && a.b[pos-1]&0xf0 == 0x80
		if !jump {
			continue
		}
		t := pos + 4 + int(int32(binary.LittleEndian.Uint32(a.b[pos:])))
		to := t
		for hops := 0; hops < 8 && to >= 0 && to+5 <= len(a.b) && a.b[to] == 0xe9; hops++ {
			to += 5 + int(int32(binary.LittleEndian.Uint32(a.b[to+1:])))
		}
		if to != t {
			binary.LittleEndian.PutUint32(a.b[pos:], uint32(int32(to-(pos+4))))
		}
	}
}
