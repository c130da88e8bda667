//go:build linux && arm64

package bpf

// Native bpf_redirect, bpf_redirect_map on devmaps, cpumaps and xskmaps,
// bpf_get_prandom_u32 and bpf_get_smp_processor_id for the arm64 backend:
// the steps of the amd64 ones (jit_amd64_helpers.go) in X0 and the scratch
// registers X9-X14, with the interpreter's results (helpers.go) and r1-r5
// left as they were. The redirect is recorded as numbers in the slot
// jitState.rdo points at (jit_redirect.go: rds[0] in a run entered from
// Go, which Go turns into Runner.redirect when the code returns; the
// frame's own slot in a native burst, fillRedirects). A constant key or
// flags (constIn) is checked, and looked up, at load. A broadcast
// (BPF_F_BROADCAST, devmaps only) is recorded as redirectMap records it,
// even for a key with no entry (ifindex 0); the dataplane reads its flags.

// redirectHelper emits the call at pc natively when it is one of these
// and reports whether it did.
func (c *arm64Compiler) redirectHelper(pc int) bool {
	switch int32(c.plain[pc].imm) {
	case helperRedirect:
		c.redirectIfindex(pc)
	case helperRedirectMap:
		rc, ok := c.env.redirectAt(c.plain, c.targets, pc) // jit_redirect_targets.go
		if !ok {
			return false
		}
		c.redirectMap(pc, rc)
	case helperGetPrandomU32:
		c.prandom()
	case helperGetSmpProcessor:
		c.movImm(aS1, uint64(offCPU))
		c.ldrW(0, aCtx, aS1) // uint32(r.cpu)
	default:
		return false
	}
	return true
}

// mov32 is MOV Wd, Wn: X d = uint32(X n).
func (c *arm64Compiler) mov32(d, n uint32) { c.rrr(a64Orr&^a64W, d, aZR, n) }

// rdSlot leaves in X11 (S3) the address of the record the helpers write:
// the Runner + rds + jitState.rdo (X12 and X13 clobbered).
func (c *arm64Compiler) rdSlot() {
	c.ldr(aS3, aCtx, offRdo)
	c.rrr(a64Add, aS3, aS3, aCtx)
	c.movImm(aS4, uint64(offRds))
	c.rrr(a64Add, aS3, aS3, aS4)
}

// rdStore stores W t into the record's 32-bit word at off (rdSlot).
func (c *arm64Compiler) rdStore(t uint32, off int32) {
	c.w(a64Imm12(a64StrWImm, t, aS3, uint32(off/4)))
}

// rdStoreImm stores v into the record's word at off (through X12).
func (c *arm64Compiler) rdStoreImm(v uint32, off int32) {
	if v == 0 {
		c.rdStore(aZR, off)
		return
	}
	c.movImm(aS4, uint64(v))
	c.rdStore(aS4, off)
}

// ldrWAt is LDR Wt, [Xn + off] (X14 holds a far offset).
func (c *arm64Compiler) ldrWAt(t, n uint32, off uintptr) {
	if off%4 == 0 && off/4 < 4096 {
		c.w(a64Imm12(a64LdrWImm, t, n, uint32(off/4)))
		return
	}
	c.movImm(aS6, uint64(off))
	c.ldrW(t, n, aS6)
}

// redirectIfindex is bpf_redirect: flags (r2) other than 0 give
// XDP_ABORTED and record nothing; else the target is r1's low 32 bits and
// r0 is XDP_REDIRECT.
func (c *arm64Compiler) redirectIfindex(pc int) {
	flags, known := constIn(c.plain, c.targets, pc, 2)
	if known && flags != 0 {
		c.movImm(0, 0)
		return
	}
	var abort a64Fixup
	if !known {
		c.cmp(2, aZR)
		abort = c.branch(aNE)
	}
	c.rdSlot()
	c.rdStoreImm(rdTag(RedirectIfindex, 0, 0), rdOffTag)
	c.rdStore(1, rdOffIfindex) // uint32(r1)
	c.rdStore(aZR, rdOffKey)
	c.movImm(0, uint64(ActionRedirect))
	if known {
		return
	}
	done := c.branch(aAL)
	c.patch(abort, len(c.b))
	c.movImm(0, 0)
	c.patch(done, len(c.b))
}

// redirectMap is bpf_redirect_map through rc's map: flags (r3) outside
// what the map type takes give XDP_ABORTED and record nothing; a key (r2's
// low 32 bits) with no entry clears the redirect and returns the flags'
// action bits, unless they ask for a broadcast; else the redirect is
// recorded (a devmap's with the entry's ifindex, 0 for a broadcast to a
// key with no entry) and r0 is XDP_REDIRECT.
func (c *arm64Compiler) redirectMap(pc int, rc jitRedirectCall) {
	if rc.flagsK && rc.flags&^rc.allowed != 0 {
		c.movImm(0, 0)
		return
	}
	var abort []a64Fixup
	if !rc.flagsK {
		c.movImm(aS2, ^rc.allowed)
		c.rrr(a64Tst, 0, 3, aS2)
		abort = append(abort, c.branch(aNE))
	}
	var done []a64Fixup
	none, hit := c.redirectSlot(rc)
	if hit {
		c.rdRecord(rc, rc.kind == RedirectDevMap)
		done = append(done, c.branch(aAL))
	}
	for _, f := range none {
		c.patch(f, len(c.b))
	}
	if rc.allowed&flagBroadcast != 0 && (!rc.flagsK || rc.flags&flagBroadcast != 0) {
		// A broadcast redirects even with no entry at the key, as
		// redirectMap records it: the map, key and flags, ifindex 0.
		if rc.flagsK {
			c.rdRecord(rc, false)
			c.rdEnd(done, abort)
			return
		}
		c.tstBit(3, flagBroadcast)
		empty := c.branch(aEQ)
		c.rdRecord(rc, false)
		done = append(done, c.branch(aAL))
		c.patch(empty, len(c.b))
	}
	c.rdSlot() // the empty Redirect, every field
	c.rdStoreImm(rdTag(RedirectNone, 0, 0), rdOffTag)
	c.rdStore(aZR, rdOffIfindex)
	c.rdStore(aZR, rdOffKey)
	if rc.flagsK {
		c.movImm(0, rc.flags&flagsActionMask)
	} else {
		c.movImm(aS4, flagsActionMask)
		c.rrr(a64And, 0, 3, aS4) // r0 = flags & XDP action bits
	}
	c.rdEnd(done, abort)
}

// rdRecord writes the record of a redirect through rc's map and sets r0
// to XDP_REDIRECT: the tag with the flags (a constant's in hitTag, else
// r3's low byte), the entry's ifindex (the entry in X10: redirectSlot)
// when ifindex is set, else 0, and the key.
func (c *arm64Compiler) rdRecord(rc jitRedirectCall, ifindex bool) {
	c.rdSlot()
	c.movImm(aS4, uint64(rc.hitTag()))
	if !rc.flagsK {
		c.w(a64RRRShift(a64Orr, aS4, aS4, 3, 8)) // flags (below 256) in byte 1
	}
	c.rdStore(aS4, rdOffTag)
	if ifindex {
		c.ldrWAt(aS4, aS2, rc.slots.ValueOff) // the entry's ifindex
		c.rdStore(aS4, rdOffIfindex)
	} else {
		c.rdStore(aZR, rdOffIfindex)
	}
	if rc.keyK {
		c.rdStoreImm(uint32(rc.key), rdOffKey)
	} else {
		c.rdStore(2, rdOffKey) // uint32(r2)
	}
	c.movImm(0, uint64(ActionRedirect))
}

// rdEnd ends redirectMap: the XDP_ABORTED of flags refused (abort, if
// any) and the branches done patched to the end.
func (c *arm64Compiler) rdEnd(done, abort []a64Fixup) {
	if len(abort) > 0 {
		done = append(done, c.branch(aAL))
		c.patch(abort[0], len(c.b))
		c.movImm(0, 0)
	}
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// redirectSlot leaves in X10 (S2) the entry rc's key names, branching to
// the fixups none when the key is past the map or its slot empty; hit is
// false when the key is a constant past the map (no code: no entry ever).
func (c *arm64Compiler) redirectSlot(rc jitRedirectCall) (none []a64Fixup, hit bool) {
	n := uint64(rc.slots.N)
	switch {
	case rc.slots.Chained:
		return c.redirectChain(rc), true
	case rc.keyK && uint64(uint32(rc.key)) >= n:
		return nil, false
	case rc.keyK:
		c.movImm(aS2, uint64(rc.slots.Base+8*uintptr(uint32(rc.key))))
		c.ldr(aS2, aS2, 0)
	default:
		c.mov32(aS1, 2) // key = uint32(r2)
		c.movImm(aS2, n)
		c.cmp(aS1, aS2)
		none = append(none, c.branch(aHS))
		c.movImm(aS2, uint64(rc.slots.Base))
		c.w(a64RRR(a64LdrXLsl3, aS2, aS2, aS1)) // the entry: slots[key]
	}
	c.cmp(aS2, aZR)
	return append(none, c.branch(aEQ)), true
}

// redirectChain leaves in X10 (S2) the entry of rc's devmap_hash for the
// key (r2's low 32 bits), the first of its bucket's chain with that key,
// as DevMapHash.find walks it (maps.SlotTable), branching to the fixups
// none when there is none. Each load's address depends on the last one's
// result, which orders them as the writer's release store published the
// entries (the same as redirectSlot's plain load of a slot).
func (c *arm64Compiler) redirectChain(rc jitRedirectCall) (none []a64Fixup) {
	t := rc.slots
	c.mov32(aS1, 2) // key = uint32(r2)
	if rc.keyK {
		c.movImm(aS2, uint64(t.Base+8*uintptr(uint32(rc.key)&(t.N-1))))
		c.ldr(aS2, aS2, 0)
	} else {
		c.movImm(aS2, uint64(t.N-1))
		c.rrr(a64And, aS5, aS1, aS2) // its bucket
		c.movImm(aS2, uint64(t.Base))
		c.w(a64RRR(a64LdrXLsl3, aS2, aS2, aS5))
	}
	loop := len(c.b)
	c.cmp(aS2, aZR)
	none = append(none, c.branch(aEQ))
	c.ldrWAt(aS5, aS2, t.KeyOff)
	c.cmp(aS5, aS1)
	hit := c.branch(aEQ)
	c.ldr(aS2, aS2, int32(t.NextOff))
	c.patch(c.branch(aAL), loop)
	c.patch(hit, len(c.b))
	return none
}

// prandom is bpf_get_prandom_u32 as callHelper runs it: the Runner's
// xorshift64* state advanced, the high half of its product's low 64 bits
// returned.
func (c *arm64Compiler) prandom() {
	c.ldr(0, aCtx, offRNG)
	c.w(a64RRRShift(a64Eor|a64LSR, 0, 0, 0, 12)) // x ^= x >> 12
	c.w(a64RRRShift(a64Eor, 0, 0, 0, 25))        // x ^= x << 25
	c.w(a64RRRShift(a64Eor|a64LSR, 0, 0, 0, 27)) // x ^= x >> 27
	c.str(0, aCtx, offRNG)
	c.movImm(aS1, 0x2545F4914F6CDD1D)
	c.mul(0, 0, aS1)
	c.bfm(a64Ubfm, 0, 0, 32, 63) // LSR #32
}
