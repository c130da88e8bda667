//go:build linux && amd64

package bpf

// Native IPv6 bpf_fib_lookup for the amd64 backend (jit_fib6.go): after
// fibLookup's checks (plen 64, flags among fibNatFlags, the struct checked
// as storeSlice checks it, the family AF_INET6), lookup6's result and
// writes from the table's IPv6 snapshot. The slow path, where Go runs the
// helper from the start, takes what the snapshot does not answer before
// anything is written: an IPv4-mapped address (netip's predicates judge
// it as IPv4), a port past the snapshot's (when there are
// such), and a route with no path MTU. r1-r5 are left as they were.

// fib6Lookup emits the IPv6 lookup; RAX holds the struct's address.
func (c *amd64Compiler) fib6Lookup(pc int) {
	c.fibSave(true)
	f := fibExits{mtuOff: offRec6MTU, r5: true}
	// rt6_need_strict (lookup6): before the device, with or without a table.
	c.fib6Strict(fibDst, &f)
	c.fib6Strict(fibSrc, &f)
	c.movRI(xS1, int64(fibTableAddr(c.env.coll)))
	c.ldq(xS1, xS1, 0)
	c.aluRR(true, 0x85, xS1, xS1)
	f.enodev = append(f.enodev, c.jcc(ccE))
	c.ldq(xS1, xS1, offFibNat6)
	c.aluRR(true, 0x85, xS1, xS1)
	f.slow = append(f.slow, c.jcc(ccE))
	c.stq(xS1, xCtx, offHS+8*fibSlotNat)
	c.fibInPort(&f, offFib6NIfs, offFib6Ifs, offFib6Far)
	c.fib6Walk(&f)
	c.fib6Answer(&f)
	c.fibTail(pc, &f)
}

// fib6Strict is needStrict6 for the address at off: multicast (ff00::/8),
// link-local (fe80::/10) and loopback (::1) are NOT_FWDED; IPv4-mapped
// addresses (::ffff:0:0/96), which netip's predicates judge as IPv4, go to
// Go. RDX and S2 are clobbered.
func (c *amd64Compiler) fib6Strict(off int32, f *fibExits) {
	c.ld8z(xDX, prmMem(off))
	c.aluRI(false, 7, xDX, 0xff)
	f.notFwded = append(f.notFwded, c.jcc(ccE))
	c.ld16z(xDX, prmMem(off)) // the first two bytes, little-endian
	c.aluRI(false, 4, xDX, 0xc0ff)
	c.aluRI(false, 7, xDX, 0x80fe)
	f.notFwded = append(f.notFwded, c.jcc(ccE))
	c.ld32(xDX, prmMem(off))
	c.aluRR(false, 0x85, xDX, xDX)
	var done []int
	done = append(done, c.jcc(ccNE))
	c.ldq(xDX, xAX, off) // in ::/32: the first half must be 0
	c.aluRR(true, 0x85, xDX, xDX)
	done = append(done, c.jcc(ccNE))
	c.ldq(xDX, xAX, off+8)
	c.movRI(xS2, 1<<56) // ::1, little-endian
	c.aluRR(true, 0x39, xDX, xS2)
	f.notFwded = append(f.notFwded, c.jcc(ccE))
	c.aluRI(false, 7, xDX, -0x10000) // bytes 8-11 0, 0, 0xff, 0xff
	f.slow = append(f.slow, c.jcc(ccE))
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// fib6Walk is route for params->ipv6_dst: the snapshot's stages from tag
// 1 (DIRECT: main's), each probing the prefix table for the destination
// masked, the first found giving the record, left in RDI; none is
// NOT_FWDED. The snapshot is in S1 and stays there.
func (c *amd64Compiler) fib6Walk(f *fibExits) {
	c.flagTest(fibLookupDirect)
	direct := c.jcc(ccNE)
	c.movRI(xSI, 1)
	c.ld32(xDI, natMem(offFib6NStages))
	c.aluRI(false, 0, xDI, 1)
	test := c.jmp()
	c.patch(direct, len(c.b))
	c.ld32(xSI, natMem(offFib6MainFrom))
	c.ld32(xDI, natMem(offFib6MainTo))
	next := len(c.b)
	c.patch(test, next)
	c.aluRR(false, 0x39, xSI, xDI) // cmp esi, edi
	f.notFwded = append(f.notFwded, c.jcc(ccAE))
	// RCX: &stages[tag], the masks at -16 and -8.
	c.ldq(xCX, xS1, offFib6Stages)
	c.aluRR(false, 0x89, xDX, xSI)
	c.shiftI(true, 4, xDX, 4)
	c.aluRR(true, 0x01, xCX, xDX)
	c.ldq(xDX, xAX, fibDst)
	c.rm(false, true, []byte{0x23}, xDX, xmem{base: xCX, index: -1, disp: -16}, false)
	c.ldq(xR8, xAX, fibDst+8)
	c.rm(false, true, []byte{0x23}, xR8, xmem{base: xCX, index: -1, disp: -8}, false)
	miss := c.fib6Probe(offFib6Routes, offFib6RouteMask)
	c.ld32(xDX, xmem{base: xCX, index: -1, disp: offSlot6Val})
	c.rr(false, true, []byte{0x69}, xDX, xDX, false) // imul: the prefix's record
	c.imm32(sizeFib6Rec)
	c.ldq(xDI, xS1, offFib6Recs)
	c.aluRR(true, 0x01, xDI, xDX)
	found := c.jmp()
	c.patch(miss, len(c.b))
	c.aluRI(false, 0, xSI, 1)
	c.jmpTo(next)
	c.patch(found, len(c.b))
}

// fib6Probe looks up the key RDX, R8 (fib6Words) with tag ESI in the
// snapshot's (S1) table of slots at slots, mask at mask: found, it falls
// through with the slot's address in RCX; the jump it returns is taken
// on a miss. R10 is clobbered.
func (c *amd64Compiler) fib6Probe(slots, mask int32) int {
	c.aluRR(true, 0x89, xS2, xDX)
	c.aluRR(true, 0x31, xS2, xSI)
	c.rm(false, true, []byte{0x0f, 0xaf}, xS2, natMem(offFib6HashK), false) // imul
	c.aluRR(true, 0x31, xS2, xR8)
	c.rm(false, true, []byte{0x0f, 0xaf}, xS2, natMem(offFib6HashK), false)
	c.shiftI(true, 5, xS2, 32)
	loop := len(c.b)
	c.rm(false, false, []byte{0x23}, xS2, natMem(mask), false) // and
	c.aluRR(true, 0x89, xCX, xS2)
	c.shiftI(true, 4, xCX, 5)
	c.rm(false, true, []byte{0x03}, xCX, natMem(slots), false) // add
	slot := func(off int32) xmem { return xmem{base: xCX, index: -1, disp: off} }
	c.rm(false, true, []byte{0x3b}, xDX, slot(offSlot6Hi), false)
	other1 := c.jcc(ccNE)
	c.rm(false, true, []byte{0x3b}, xR8, slot(offSlot6Lo), false)
	other2 := c.jcc(ccNE)
	c.rm(false, false, []byte{0x3b}, xSI, slot(offSlot6Tag), false)
	found := c.jcc(ccE)
	c.patch(other1, len(c.b))
	c.patch(other2, len(c.b))
	c.rm(false, false, []byte{0x83}, 7, slot(offSlot6Tag), false) // cmp dword, 0
	c.byte1(0)
	miss := c.jcc(ccE)
	c.aluRI(false, 0, xS2, 1)
	c.jmpTo(loop)
	c.patch(found, len(c.b))
	return miss
}

// fib6Answer is the rest of lookup6 for the route whose record is in RDI.
func (c *amd64Compiler) fib6Answer(f *fibExits) {
	c.fibAnswerChecks(f, offRec6Ret, offRec6How, offRec6MTU)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRec6How), false)
	c.byte1(fibRecGW)
	noGW := c.jcc(ccNE)
	c.copy16(recMem(offRec6GW), fibDst)
	c.patch(noGW, len(c.b))
	c.ld32(xS2, recMem(offRec6Metric))
	c.st32(xS2, prmMem(fibMetric))
	c.ld32(xS2, recMem(offRec6Ifindex))
	c.st32(xS2, prmMem(fibIfindex))
	c.flagTest(fibLookupSrc)
	noSrc := c.jcc(ccE)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRec6SrcOK), false)
	c.byte1(0)
	f.noSrc = append(f.noSrc, c.jcc(ccE))
	c.copy16(recMem(offRec6Src), fibSrc)
	c.patch(noSrc, len(c.b))
	// fibFinish.
	c.flagTest(fibLookupSkipNeigh)
	skip := c.jcc(ccNE)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRec6How), false)
	c.byte1(fibRecGW)
	direct := c.jcc(ccNE)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRec6Neigh), false)
	c.byte1(0)
	f.noNeigh = append(f.noNeigh, c.jcc(ccE))
	c.copyMAC(recMem(offRec6Dmac), fibDmac)
	smac := c.jmp()
	c.patch(direct, len(c.b))
	// fibTable.neighbour: the destination on the route's port.
	c.ld32(xSI, recMem(offRec6Ifindex))
	c.ldq(xDX, xAX, fibDst)
	c.ldq(xR8, xAX, fibDst+8)
	c.ldq(xS1, xCtx, offHS+8*fibSlotNat)
	f.noNeigh = append(f.noNeigh, c.fib6Probe(offFib6Neigh, offFib6NeighMask))
	c.copyMAC(xmem{base: xCX, index: -1, disp: offSlot6MAC}, fibDmac)
	c.patch(smac, len(c.b))
	c.copyMAC(recMem(offRec6Smac), fibSmac)
	c.patch(skip, len(c.b))
	c.fibSuccess(f, recMem(offRec6MTU))
}

// copy16 copies the 16 bytes at from to the struct's bytes at off; S2 is
// clobbered.
func (c *amd64Compiler) copy16(from xmem, off int32) {
	for i := int32(0); i < 16; i += 8 {
		c.rm(false, true, []byte{0x8b}, xS2, from, false)
		c.rm(false, true, []byte{0x89}, xS2, prmMem(off+i), false)
		from.disp += 8
	}
}
