//go:build linux && amd64

package bpf

// Native bpf_redirect and bpf_redirect_map (devmap, cpumap, xskmap) of the
// amd64 backend, with the interpreter's results (hRedirect, redirectMap in
// helpers.go) and r1-r5 left as they were. They record the redirect as
// numbers in the slot jitState.rdo points at (jit_redirect.go: rds[0] in a
// run entered from Go, the frame's own slot in a native burst), which Go
// turns into Runner.redirect or the burst's Redirects. A constant key or
// flags (constIn) is checked, and looked up, at load. A broadcast
// (BPF_F_BROADCAST, devmaps only) is recorded as redirectMap records it,
// even for a key with no entry (ifindex 0); the dataplane reads its flags.

// rdMem is the 32-bit word at off in the record the helpers write:
// [Runner + S1 + rds + off], S1 holding jitState.rdo (rdSlot).
func rdMem(off int32) xmem { return xmem{base: xCtx, index: xS1, disp: offRds + off} }

// rdSlot loads jitState.rdo into S1 for rdMem.
func (c *amd64Compiler) rdSlot() { c.ldq(xS1, xCtx, offRdo) }

// movMem32I stores imm into the 32-bit word at m.
func (c *amd64Compiler) movMem32I(m xmem, imm uint32) {
	c.rm(false, false, []byte{0xc7}, 0, m, false)
	c.imm32(int32(imm))
}

// rdTagNoIfindex stores a record's tag and a zero ifindex (the two words
// at rdOffTag): one 64-bit store when the tag is below 2^31, whose
// immediate the CPU sign-extends with a zero high word, else two.
func (c *amd64Compiler) rdTagNoIfindex(tag uint32) {
	if tag < 1<<31 {
		c.rm(false, true, []byte{0xc7}, 0, rdMem(rdOffTag), false)
		c.imm32(int32(tag))
		return
	}
	c.movMem32I(rdMem(rdOffTag), tag)
	c.movMem32I(rdMem(rdOffIfindex), 0)
}

// ldqScaled8 is MOV dst, [base + index*8] (base neither RBP nor R13).
func (c *amd64Compiler) ldqScaled8(dst, base, index uint8) {
	c.rex(true, dst, index, base, false)
	c.byte1(0x8b, 0<<6|(dst&7)<<3|4, 3<<6|(index&7)<<3|base&7)
}

// redirectIfindex is bpf_redirect: flags (r2) other than 0 give
// XDP_ABORTED and record nothing; else the target is r1's low 32 bits and
// r0 is XDP_REDIRECT.
func (c *amd64Compiler) redirectIfindex(pc int) {
	flags, known := constIn(c.plain, c.targets, pc, 2)
	if known && flags != 0 {
		c.aluRR(false, 0x31, xAX, xAX)
		return
	}
	abort := -1
	if !known {
		c.aluRR(true, 0x85, xSI, xSI)
		abort = c.jcc(ccNE)
	}
	c.rdSlot()
	c.movMem32I(rdMem(rdOffTag), rdTag(RedirectIfindex, 0, 0))
	c.rm(false, false, []byte{0x89}, xDI, rdMem(rdOffIfindex), false) // uint32(r1)
	c.movMem32I(rdMem(rdOffKey), 0)
	c.movRI(xAX, int64(ActionRedirect))
	if abort < 0 {
		return
	}
	done := c.jmp()
	c.patch(abort, len(c.b))
	c.aluRR(false, 0x31, xAX, xAX)
	c.patch(done, len(c.b))
}

// redirectMap is bpf_redirect_map through rc's map: flags (r3) outside
// what the map type takes give XDP_ABORTED and record nothing; a key (r2's
// low 32 bits) with no entry clears the redirect and returns the flags'
// action bits, unless they ask for a broadcast; else the redirect is
// recorded (a devmap's with the entry's ifindex, 0 for a broadcast to a
// key with no entry) and r0 is XDP_REDIRECT.
func (c *amd64Compiler) redirectMap(pc int, rc jitRedirectCall) {
	if rc.flagsK && rc.flags&^rc.allowed != 0 {
		c.aluRR(false, 0x31, xAX, xAX)
		return
	}
	abort := -1
	if !rc.flagsK {
		c.testRI(true, xDX, int32(^rc.allowed))
		abort = c.jcc(ccNE)
	}
	var done []int
	none, hit := c.redirectSlot(rc)
	if hit {
		c.rdSlot()
		if rc.kind == RedirectDevMap {
			c.movMem32I(rdMem(rdOffTag), rc.hitTag())
			c.rm(false, false, []byte{0x8b}, xAX, xmem{base: xS2, index: -1, disp: int32(rc.slots.ValueOff)}, false)
			c.rm(false, false, []byte{0x89}, xAX, rdMem(rdOffIfindex), false)
		} else {
			c.rdTagNoIfindex(rc.hitTag())
		}
		c.rdFlagsKey(rc)
		done = append(done, c.jmp())
	}
	for _, j := range none {
		c.patch(j, len(c.b))
	}
	if rc.allowed&flagBroadcast != 0 && (!rc.flagsK || rc.flags&flagBroadcast != 0) {
		// A broadcast redirects even with no entry at the key, as
		// redirectMap records it: the map, key and flags, ifindex 0.
		empty := -1
		if !rc.flagsK {
			c.testRI(true, xDX, flagBroadcast)
			empty = c.jcc(ccE)
		}
		c.rdSlot()
		c.rdTagNoIfindex(rc.hitTag())
		c.rdFlagsKey(rc)
		if empty < 0 {
			c.rdEnd(done, abort)
			return
		}
		done = append(done, c.jmp())
		c.patch(empty, len(c.b))
	}
	c.rdSlot() // the empty Redirect, every field
	c.rdTagNoIfindex(rdTag(RedirectNone, 0, 0))
	c.movMem32I(rdMem(rdOffKey), 0)
	if rc.flagsK {
		c.movRI(xAX, int64(rc.flags&flagsActionMask))
	} else {
		c.aluRR(false, 0x89, xAX, xDX)
		c.aluRI(false, 4, xAX, flagsActionMask)
	}
	c.rdEnd(done, abort)
}

// rdEnd ends redirectMap: the XDP_ABORTED of flags refused (abort, if
// any, >= 0) and the jumps done patched to the end.
func (c *amd64Compiler) rdEnd(done []int, abort int) {
	if abort >= 0 {
		done = append(done, c.jmp())
		c.patch(abort, len(c.b))
		c.aluRR(false, 0x31, xAX, xAX)
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// rdFlagsKey completes a record redirectMap makes (the tag stored, S1 the
// slot): the flags' low byte when they are not a constant (hitTag holds
// a constant's), the key, and r0 = XDP_REDIRECT.
func (c *amd64Compiler) rdFlagsKey(rc jitRedirectCall) {
	if !rc.flagsK {
		c.rm(false, false, []byte{0x88}, xDX, rdMem(rdOffTag+1), true) // flags' low byte
	}
	if rc.keyK {
		c.movMem32I(rdMem(rdOffKey), uint32(rc.key))
	} else {
		c.rm(false, false, []byte{0x89}, xSI, rdMem(rdOffKey), false) // uint32(r2)
	}
	c.movRI(xAX, int64(ActionRedirect))
}

// redirectSlot leaves in S2 the entry rc's key names, jumping to the
// fixups none when the key is past the map or its slot empty; hit is false
// when the key is a constant past the map (no code: no entry ever).
func (c *amd64Compiler) redirectSlot(rc jitRedirectCall) (none []int, hit bool) {
	n := uint64(rc.slots.N)
	switch {
	case rc.slots.Chained:
		return c.redirectChain(rc), true
	case rc.keyK && uint64(uint32(rc.key)) >= n:
		return nil, false
	case rc.keyK:
		c.movRI(xS2, int64(rc.slots.Base+8*uintptr(uint32(rc.key))))
		c.ldq(xS2, xS2, 0)
	default:
		c.aluRR(false, 0x89, xAX, xSI) // key = uint32(r2)
		c.aluRI(false, 7, xAX, int32(n))
		none = append(none, c.jcc(ccAE))
		c.movRI(xS2, int64(rc.slots.Base))
		c.ldqScaled8(xS2, xS2, xAX)
	}
	c.aluRR(true, 0x85, xS2, xS2)
	return append(none, c.jcc(ccE)), true
}

// redirectChain leaves in S2 the entry of rc's devmap_hash for the key
// (r2's low 32 bits), the first of its bucket's chain with that key, as
// DevMapHash.find walks it (maps.SlotTable), jumping to the fixups none
// when there is none. The chain is finite: entries are immutable, and
// each was published before the one that links to it.
func (c *amd64Compiler) redirectChain(rc jitRedirectCall) (none []int) {
	t := rc.slots
	if rc.keyK {
		c.movRI(xS2, int64(t.Base+8*uintptr(uint32(rc.key)&(t.N-1))))
		c.ldq(xS2, xS2, 0)
	} else {
		c.aluRR(false, 0x89, xAX, xSI)       // key = uint32(r2)
		c.aluRI(false, 4, xAX, int32(t.N-1)) // its bucket
		c.movRI(xS2, int64(t.Base))
		c.ldqScaled8(xS2, xS2, xAX)
	}
	loop := len(c.b)
	c.aluRR(true, 0x85, xS2, xS2)
	none = append(none, c.jcc(ccE))
	c.rm(false, false, []byte{0x39}, xSI, xmem{base: xS2, index: -1, disp: int32(t.KeyOff)}, false) // entry key == uint32(r2)?
	hit := c.jcc(ccE)
	c.ldq(xS2, xS2, int32(t.NextOff))
	c.patch(c.jmp(), loop)
	c.patch(hit, len(c.b))
	return none
}
