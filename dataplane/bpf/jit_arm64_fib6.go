//go:build linux && arm64

package bpf

// Native IPv6 bpf_fib_lookup for the arm64 backend: the steps of the amd64
// one (jit_amd64_fib6.go; jit_fib6.go gives the snapshot) after
// fibLookup's checks, with its contract: lookup6's result and writes, in
// its order, from the table's IPv6 snapshot; multicast, link-local and
// loopback addresses NOT_FWDED before the table is read; an IPv4-mapped
// address, a port past the snapshot's (when there are such) and a route
// with no path MTU sent to the slow path before anything is written.
// r1-r5 are left as they were: it works in X0 (the struct, then the
// result), X9-X15 (X14 the record, X15 the snapshot, as for IPv4) and
// the scratch slot jitState.hs[fib6Scratch], which holds the walk's last
// stage, then the record while the neighbour probe needs X14. The table pointer is loaded once,
// with LDAR, as for IPv4 (jit_arm64_fib.go).

// Registers of the IPv6 walk and probes: the tag (a stage, or a
// neighbour's ifindex), the key (a destination in fib6Words form,
// masked by the stage for a prefix), the probe's index and its slot.
const (
	fibTag  = aS1
	fibTmp  = aS2
	fibHi   = aS3
	fibLo   = aS4
	fibIdx  = aS5
	fibSlot = aS6 // the record's register: the walk's result
)

// fib6Scratch is the slot of jitState.hs the lookup keeps a word in
// (hsHash's: the hash lookups use it only within their own call).
const fib6Scratch = 0

// fib6Lookup emits the IPv6 lookup; X0 holds the struct's address.
func (c *arm64Compiler) fib6Lookup(pc int) {
	f := fibExits{}
	// rt6_need_strict (lookup6): before the device, with or without a table.
	c.fib6Strict(fibDst, &f)
	c.fib6Strict(fibSrc, &f)
	c.fibSnapshot(&f, offFibNat6)
	c.fibInPort(&f, offFib6NIfs, offFib6Ifs, offFib6Far)
	c.fib6Walk(&f)
	c.fib6Answer(&f)
	c.fibTail(pc, &f)
}

// fib6Strict is needStrict6 for the address at off: multicast (ff00::/8),
// link-local (fe80::/10) and loopback (::1) are NOT_FWDED; IPv4-mapped
// addresses (::ffff:0:0/96), which netip's predicates judge as IPv4, go to
// Go. X9 and X10 are clobbered.
func (c *arm64Compiler) fib6Strict(off int32, f *fibExits) {
	const w = ^uint32(a64W)
	c.ld(a64Ldurb, aS1, fibPrm, off)
	c.w(a64Imm12(a64SubsImm&w, aZR, aS1, 0xff))
	f.notFwded = append(f.notFwded, c.branch(aEQ))
	c.ld(a64Ldurh, aS1, fibPrm, off)
	c.w(a64RR(a64Rev16W, aS1, aS1))  // the first two bytes, big-endian
	c.bfm(a64UbfmW, aS1, aS1, 6, 15) // their top 10 bits
	c.w(a64Imm12(a64SubsImm&w, aZR, aS1, 0xfe80>>6))
	f.notFwded = append(f.notFwded, c.branch(aEQ))
	c.ld(a64LdurX, aS1, fibPrm, off) // in ::/64: the first half 0
	c.cmp(aS1, aZR)
	done := c.branch(aNE)
	c.ld(a64LdurX, aS1, fibPrm, off+8)
	c.movImm(aS2, 1<<56) // ::1, little-endian
	c.cmp(aS1, aS2)
	f.notFwded = append(f.notFwded, c.branch(aEQ))
	c.movImm(aS2, 0xffff0000) // bytes 8-11 0, 0, 0xff, 0xff
	c.rrr(a64Cmp&w, 0, aS1, aS2)
	f.slow = append(f.slow, c.branch(aEQ))
	c.patch(done, len(c.b))
}

// fib6Walk is route for params->ipv6_dst: the snapshot's stages from tag
// 1 (DIRECT: main's), each probing the prefix table for the destination
// masked, the first found giving the record, left in X14; none is
// NOT_FWDED. The stage to stop at waits in the scratch slot.
func (c *arm64Compiler) fib6Walk(f *fibExits) {
	const w = ^uint32(a64W)
	direct := c.flagBranch(fibLookupDirect, aNE)
	c.movImm(fibTag, 1)
	c.ld(a64LdurW, fibTmp, fibNat, offFib6NStages)
	c.w(a64Imm12(a64AddImm&w, fibTmp, fibTmp, 1))
	first := c.branch(aAL)
	c.patch(direct, len(c.b))
	c.ld(a64LdurW, fibTag, fibNat, offFib6MainFrom)
	c.ld(a64LdurW, fibTmp, fibNat, offFib6MainTo)
	c.patch(first, len(c.b))
	c.str(fibTmp, aCtx, offHS+8*fib6Scratch)
	loop := len(c.b)
	c.rrr(a64Cmp&w, 0, fibTag, fibTmp)
	f.notFwded = append(f.notFwded, c.branch(aHS))
	// &stages[tag], the masks at -16 and -8 (16-byte stages).
	c.ldr(fibTmp, fibNat, offFib6Stages)
	c.w(a64RRRShift(a64Add, fibTmp, fibTmp, fibTag, 4))
	for i, key := range []uint32{fibHi, fibLo} {
		c.ld(a64LdurX, key, fibPrm, fibDst+8*int32(i))
		c.ld(a64LdurX, fibIdx, fibTmp, -16+8*int32(i))
		c.rrr(a64And, key, key, fibIdx)
	}
	miss := c.fib6Probe(offFib6Routes, offFib6RouteMask)
	c.ld(a64LdurW, fibIdx, fibSlot, offSlot6Val)
	c.movImm(fibTmp, uint64(sizeFib6Rec))
	c.ldr(fibRec, fibNat, offFib6Recs)
	c.w(a64Msub3(a64Madd, fibRec, fibIdx, fibTmp, fibRec)) // recs + val*size
	found := c.branch(aAL)
	c.patch(miss, len(c.b))
	c.w(a64Imm12(a64AddImm&w, fibTag, fibTag, 1))
	c.ldr(fibTmp, aCtx, offHS+8*fib6Scratch)
	c.patch(c.branch(aAL), loop)
	c.patch(found, len(c.b))
}

// fib6Probe looks up the key X11, X12 (fib6Words) with tag W9 in the
// snapshot's table of slots at slots, mask at mask (fib6Hash, then the
// slots after it): found, it falls through with the slot's address in
// X14; the branch it returns is taken on a miss. X10 and X13 are
// clobbered.
func (c *arm64Compiler) fib6Probe(slots, mask int32) a64Fixup {
	const w = ^uint32(a64W)
	c.ldr(fibTmp, fibNat, offFib6HashK)
	c.rrr(a64Eor, fibIdx, fibHi, fibTag)
	c.rrr(a64Mul, fibIdx, fibIdx, fibTmp)
	c.rrr(a64Eor, fibIdx, fibIdx, fibLo)
	c.rrr(a64Mul, fibIdx, fibIdx, fibTmp)
	c.bfm(a64Ubfm, fibIdx, fibIdx, 32, 63) // lsr #32
	loop := len(c.b)
	c.ld(a64LdurW, fibTmp, fibNat, mask)
	c.rrr(a64And&w, fibIdx, fibIdx, fibTmp)
	c.ldr(fibSlot, fibNat, slots)
	c.w(a64RRRShift(a64Add, fibSlot, fibSlot, fibIdx, 5)) // 32-byte slots
	c.ld(a64LdurX, fibTmp, fibSlot, offSlot6Hi)
	c.cmp(fibTmp, fibHi)
	other1 := c.branch(aNE)
	c.ld(a64LdurX, fibTmp, fibSlot, offSlot6Lo)
	c.cmp(fibTmp, fibLo)
	other2 := c.branch(aNE)
	c.ld(a64LdurW, fibTmp, fibSlot, offSlot6Tag)
	c.rrr(a64Cmp&w, 0, fibTmp, fibTag)
	found := c.branch(aEQ)
	c.patch(other1, len(c.b))
	c.patch(other2, len(c.b))
	c.ld(a64LdurW, fibTmp, fibSlot, offSlot6Tag)
	c.rrr(a64Cmp&w, 0, fibTmp, aZR)
	miss := c.branch(aEQ)
	c.w(a64Imm12(a64AddImm&w, fibIdx, fibIdx, 1))
	c.patch(c.branch(aAL), loop)
	c.patch(found, len(c.b))
	return miss
}

// fib6Answer is the rest of lookup6 for the route whose record is in X14.
func (c *arm64Compiler) fib6Answer(f *fibExits) {
	c.fibAnswerChecks(f, offRec6Ret, offRec6How, offRec6MTU) // how in X9
	c.cmp(aS1, aZR)                                          // fibRecGW is 0
	noGW := c.branch(aNE)
	c.copy16(fibRec, offRec6GW, fibDst)
	c.patch(noGW, len(c.b))
	c.ld(a64LdurW, aS2, fibRec, offRec6Metric)
	c.st(a64SturW, aS2, fibPrm, fibMetric)
	c.ld(a64LdurW, aS2, fibRec, offRec6Ifindex)
	c.st(a64SturW, aS2, fibPrm, fibIfindex)
	noSrc := c.flagBranch(fibLookupSrc, aEQ)
	c.ld(a64Ldurb, aS2, fibRec, offRec6SrcOK)
	c.cmp(aS2, aZR)
	f.noSrc = append(f.noSrc, c.branch(aEQ))
	c.copy16(fibRec, offRec6Src, fibSrc)
	c.patch(noSrc, len(c.b))
	// fibFinish.
	skip := c.flagBranch(fibLookupSkipNeigh, aNE)
	c.cmp(aS1, aZR)
	direct := c.branch(aNE)
	c.ld(a64Ldurb, aS2, fibRec, offRec6Neigh)
	c.cmp(aS2, aZR)
	f.noNeigh = append(f.noNeigh, c.branch(aEQ))
	c.copyMAC(fibRec, offRec6Dmac, fibDmac)
	smac := c.branch(aAL)
	c.patch(direct, len(c.b))
	// fibTable.neighbour: the destination on the route's port. The probe
	// leaves the slot in X14, so the record waits in the scratch slot.
	c.str(fibRec, aCtx, offHS+8*fib6Scratch)
	c.ld(a64LdurW, fibTag, fibRec, offRec6Ifindex)
	c.ld(a64LdurX, fibHi, fibPrm, fibDst)
	c.ld(a64LdurX, fibLo, fibPrm, fibDst+8)
	f.noNeigh = append(f.noNeigh, c.fib6Probe(offFib6Neigh, offFib6NeighMask))
	c.copyMAC(fibSlot, offSlot6MAC, fibDmac)
	c.ldr(fibRec, aCtx, offHS+8*fib6Scratch)
	c.patch(smac, len(c.b))
	c.copyMAC(fibRec, offRec6Smac, fibSmac)
	c.patch(skip, len(c.b))
	c.fibSuccess(f, offRec6MTU)
}

// copy16 copies the 16 bytes at [from + off] to the struct's bytes at to;
// X10 is clobbered.
func (c *arm64Compiler) copy16(from uint32, off, to int32) {
	for i := int32(0); i < 16; i += 8 {
		c.ld(a64LdurX, aS2, from, off+i)
		c.st(a64SturX, aS2, fibPrm, to+i)
	}
}
