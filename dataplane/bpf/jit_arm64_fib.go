//go:build linux && arm64

package bpf

import "syscall"

// Native bpf_fib_lookup for the arm64 backend: the steps of the amd64 one
// (jit_amd64_fib.go; jit_fib.go gives the snapshot) with its contract: an
// IPv4 lookup (IPv6: jit_arm64_fib6.go) with plen 64 and flags among
// fibNatFlags, the struct checked as storeSlice checks it,
// Runner.fibLookup's result and writes, and the same cases sent to the
// slow path before anything is written. r1-r5 are left as they were: the
// lookup works in X0 (the struct, then the result), X9-X14 and X15 (the
// snapshot; X15 is aMD, which only map-in-map lookups use otherwise), and
// reads the flags in X4 where they are.
//
// The Collection's table pointer is loaded once per lookup with LDAR, the
// acquire that pairs with atomic.Pointer's store in SetFIB (amd64 relies
// on x86's ordering of loads for it): every later load of the table, the
// snapshot and its arrays comes after it, so the lookup sees the table
// SetFIB published, whole.

// Registers of the lookup.
const (
	fibPrm = 0   // the struct's address
	fibNat = aMD // the snapshot
	fibRec = aS6 // the route's record (fib4Rec)
)

// fibExits are the branches to the lookup's ends.
type fibExits struct {
	slow, enodev, fwdDisabled, noNeigh, noSrc, notFwded, miss, frag, ret, done []a64Fixup
}

// fibOffsetsFit reports whether the snapshot's and records' fields are in
// reach of LDUR and STUR's 9-bit offsets, as the code addresses them.
func fibOffsetsFit() bool {
	for _, off := range []int32{offFibRootShift, offFibNIfs, offFibFar, offFibDflt, offFibRoot, offFibNodes,
		offFibRecs, offFibIfs, offFibNeighMask, offFibNeigh, offSlotMAC + 4,
		offRecIfindex, offRecMetric, offRecMTU, offRecGW, offRecSrc, offRecDmac + 4, offRecSmac + 4,
		offRecRet, offRecHow, offRecNeigh,
		offFib6NIfs, offFib6Far, offFib6NStages, offFib6MainFrom, offFib6MainTo, offFib6RouteMask,
		offFib6NeighMask, offFib6HashK, offFib6Stages, offFib6Routes, offFib6Neigh, offFib6Recs, offFib6Ifs,
		offSlot6Hi, offSlot6Lo, offSlot6Tag, offSlot6Val, offSlot6MAC + 4,
		offRec6Ifindex, offRec6Metric, offRec6MTU, offRec6GW + 8, offRec6Src + 8, offRec6Dmac + 4,
		offRec6Smac + 4, offRec6Ret, offRec6How, offRec6Neigh, offRec6SrcOK} {
		if off < 0 || off > 255 {
			return false
		}
	}
	return true
}

// fibLookup emits the call at pc and reports whether it did.
func (c *arm64Compiler) fibLookup(pc int) bool {
	if c.env.coll == nil || !fibOffsetsFit() {
		return false
	}
	const w = ^uint32(a64W)                      // the 32-bit form of an opcode
	c.frameArg(pc)                               // jit_arm64_bytes.go
	c.w(a64Imm12(a64SubsImm&w, aZR, 3, fibSize)) // plen: int32(r3)
	c.slowIf(aNE, pc)
	c.movImm(aS1, uint64(^uint32(fibNatFlags)))
	c.rrr(a64Tst&w, 0, 4, aS1) // flags: uint32(r4)
	c.slowIf(aNE, pc)
	c.checkIn(pc, 2, 0, fibSize, true, regionStack) // the buffer in S2, the offset in S1
	c.rrr(a64Add, fibPrm, aS2, aS1)
	c.ld(a64Ldurb, aS1, fibPrm, fibFamily)
	c.w(a64Imm12(a64SubsImm&w, aZR, aS1, afInet))
	v4 := c.branch(aEQ)
	c.w(a64Imm12(a64SubsImm&w, aZR, aS1, afInet6))
	v6 := c.branch(aEQ)
	// Another family: -EAFNOSUPPORT with nothing written, as fibLookup
	// answers once the checks above have passed, table or none.
	enoaf := -int64(syscall.EAFNOSUPPORT)
	c.movImm(0, uint64(enoaf))
	end := []a64Fixup{c.branch(aAL)}
	c.patch(v6, len(c.b))
	c.fib6Lookup(pc) // jit_arm64_fib6.go
	end = append(end, c.branch(aAL))
	c.patch(v4, len(c.b))
	f := fibExits{}
	// The table (Runner.fibTable: the Runner is bound to the program's
	// collection while its native code runs, jitBoundColl), and its
	// snapshot.
	c.fibSnapshot(&f, offFibNat4)
	c.fibInPort(&f, offFibNIfs, offFibIfs, offFibFar)
	c.fibWalk(&f)
	c.fibAnswer(&f)
	c.fibTail(pc, &f)
	for _, j := range end {
		c.patch(j, len(c.b))
	}
	return true
}

// ld and st: a load (op: LDURB, LDURH, LDUR) or store (STURH, STUR) of
// [n + off], off within LDUR's reach (fibOffsetsFit, the struct's fields).
func (c *arm64Compiler) ld(op, t, n uint32, off int32) { c.w(a64Imm9(op, t, n, off)) }
func (c *arm64Compiler) st(op, t, n uint32, off int32) { c.w(a64Imm9(op, t, n, off)) }

// flagBranch branches on the flag bit (in r4): taken on cond aNE when it
// is set, aEQ when it is clear.
func (c *arm64Compiler) flagBranch(bit int32, cond uint32) a64Fixup {
	c.tstBit(4, bit) // jit_arm64_csum.go
	return c.branch(cond)
}

// fibSnapshot loads the table pointer once with LDAR (no table: ENODEV)
// and, from it, the family's snapshot at nat (none: Go) into fibNat.
func (c *arm64Compiler) fibSnapshot(f *fibExits, nat int32) {
	c.movImm(aS1, uint64(fibTableAddr(c.env.coll)))
	c.w(a64Excl(a64Ldar, 0, aS1, aS1))
	c.cmp(aS1, aZR)
	f.enodev = append(f.enodev, c.branch(aEQ))
	c.ldr(fibNat, aS1, nat)
	c.cmp(fibNat, aZR)
	f.slow = append(f.slow, c.branch(aEQ))
}

// fibInPort is fibStart: params->ifindex must be a port (-ENODEV) with
// the family's forwarding on (FWD_DISABLED). The snapshot's nIfs, ifs and
// far fields are at the offsets given.
func (c *arm64Compiler) fibInPort(f *fibExits, nIfs, ifs, farOff int32) {
	c.ld(a64LdurW, aS1, fibPrm, fibIfindex)
	c.ld(a64LdurW, aS2, fibNat, nIfs)
	c.cmp(aS1, aS2)
	far := c.branch(aHS)
	c.ldr(aS2, fibNat, ifs)
	c.rrr(a64Ldrb, aS1, aS2, aS1)
	c.tstBit(aS1, fibIfUp)
	f.enodev = append(f.enodev, c.branch(aEQ))
	c.tstBit(aS1, fibIfFwd)
	f.fwdDisabled = append(f.fwdDisabled, c.branch(aEQ))
	known := c.branch(aAL)
	c.patch(far, len(c.b))
	c.ld(a64LdurW, aS1, fibNat, farOff)
	c.cmp(aS1, aZR)
	f.slow = append(f.slow, c.branch(aNE))
	f.enodev = append(f.enodev, c.branch(aAL))
	c.patch(known, len(c.b))
}

// fibWalk is lpm4.match on main's trie for params->ipv4_dst, leaving the
// route's record in X14 (a miss branches to f.miss). X9: the address
// (host order), X10: the slots, X11: the shift, X12: the slot.
func (c *arm64Compiler) fibWalk(f *fibExits) {
	const w = ^uint32(a64W)
	c.ld(a64LdurW, aS1, fibPrm, fibDst)
	c.w(a64RR(a64RevW, aS1, aS1))
	c.ldr(aS2, fibNat, offFibRoot)
	c.cmp(aS2, aZR)
	f.miss = append(f.miss, c.branch(aEQ))
	c.ld(a64LdurW, aS3, fibNat, offFibRootShift)
	c.rrr(a64Lsrv&w, aS4, aS1, aS3)
	c.rrr(a64LdrWLsl2, aS4, aS2, aS4)
	c.ldr(aS2, fibNat, offFibNodes)
	loop := len(c.b)
	c.rrr(a64Cmp&w, 0, aS4, aZR)
	leaf := c.branch(aGE)                         // no lpmChild bit
	c.w(a64BFM(a64AndImm&^a64W, aS4, aS4, 0, 30)) // and w12, w12, #lpmChild-1
	c.subImm(aS3, aS3, 8)
	c.rrr(a64Lsrv&w, aS5, aS1, aS3)
	c.bfm(a64UbfmW, aS5, aS5, 0, 7)              // uxtb w13, w13
	c.w(a64RRRShift(a64Orr&w, aS4, aS5, aS4, 8)) // the node's slot
	c.rrr(a64LdrWLsl2, aS4, aS2, aS4)
	c.patch(c.branch(aAL), loop)
	c.patch(leaf, len(c.b))
	c.rrr(a64Cmp&w, 0, aS4, aZR)
	f.miss = append(f.miss, c.branch(aEQ))
	c.ldr(aS2, fibNat, offFibRecs)
	c.subImm(aS4, aS4, 1) // the group
	c.movImm(aS5, uint64(sizeFib4Rec))
	c.w(a64Msub3(a64Madd, fibRec, aS4, aS5, aS2)) // recs + group*size
}

// fibAnswerChecks begins both families' answers for the record in X14
// (its fields ret, how and mtu at those offsets): a reject or local
// route's code (in X9 for fibTail), Go's cases (how past fibRecDirect),
// then checkFIBMTU's FRAG_NEEDED (the path MTU in X11 for fibTail), all
// before anything is written. It leaves how in X9.
func (c *arm64Compiler) fibAnswerChecks(f *fibExits, ret, how, mtu int32) {
	const w = ^uint32(a64W)
	c.ld(a64Ldurb, aS1, fibRec, ret)
	c.cmp(aS1, aZR)
	f.ret = append(f.ret, c.branch(aNE))
	c.ld(a64Ldurb, aS1, fibRec, how)
	c.w(a64Imm12(a64SubsImm&w, aZR, aS1, fibRecDirect))
	f.slow = append(f.slow, c.branch(aHI))
	c.ld(a64Ldurh, aS2, fibPrm, fibTotLen)
	c.ld(a64LdurW, aS3, fibRec, mtu)
	c.cmp(aS2, aS3)
	f.frag = append(f.frag, c.branch(aHI))
}

// fibAnswer is the rest of lookup4 for the route whose record is in X14.
func (c *arm64Compiler) fibAnswer(f *fibExits) {
	c.fibAnswerChecks(f, offRecRet, offRecHow, offRecMTU)
	c.ld(a64LdurW, aS2, fibRec, offRecMetric)
	c.st(a64SturW, aS2, fibPrm, fibMetric)
	c.ld(a64LdurW, aS2, fibRec, offRecIfindex)
	c.st(a64SturW, aS2, fibPrm, fibIfindex)
	noSrc := c.flagBranch(fibLookupSrc, aEQ)
	c.ld(a64LdurW, aS2, fibRec, offRecSrc)
	c.st(a64SturW, aS2, fibPrm, fibSrc)
	c.patch(noSrc, len(c.b))
	c.cmp(aS1, aZR) // how: fibRecGW is 0
	noGW := c.branch(aNE)
	c.ld(a64LdurW, aS2, fibRec, offRecGW)
	c.st(a64SturW, aS2, fibPrm, fibDst)
	c.patch(noGW, len(c.b))
	// fibFinish.
	skip := c.flagBranch(fibLookupSkipNeigh, aNE)
	c.cmp(aS1, aZR)
	direct := c.branch(aNE)
	c.ld(a64Ldurb, aS2, fibRec, offRecNeigh)
	c.cmp(aS2, aZR)
	f.noNeigh = append(f.noNeigh, c.branch(aEQ))
	c.copyMAC(fibRec, offRecDmac, fibDmac)
	smac := c.branch(aAL)
	c.patch(direct, len(c.b))
	c.fibNeigh(f)
	c.copyMAC(aS1, offSlotMAC, fibDmac)
	c.patch(smac, len(c.b))
	c.copyMAC(fibRec, offRecSmac, fibSmac)
	c.patch(skip, len(c.b))
	c.fibSuccess(f, offRecMTU)
}

// fibSuccess ends a lookup that forwards, its writes but these done:
// vlan_proto and vlan_TCI cleared, tot_len the path MTU (the record's
// field at mtu), r0 SUCCESS.
func (c *arm64Compiler) fibSuccess(f *fibExits, mtu int32) {
	c.st(a64SturW, aZR, fibPrm, fibVlanProto) // vlan_proto and vlan_TCI
	c.ld(a64LdurW, aS2, fibRec, mtu)
	c.st(a64Sturh, aS2, fibPrm, fibTotLen)
	c.movImm(0, fibRetSuccess)
	f.done = append(f.done, c.branch(aAL))
}

// copyMAC copies the 6 bytes at [from + off] to the struct's bytes at to;
// X12 is clobbered.
func (c *arm64Compiler) copyMAC(from uint32, off, to int32) {
	c.ld(a64LdurW, aS4, from, off)
	c.st(a64SturW, aS4, fibPrm, to)
	c.ld(a64Ldurh, aS4, from, off+4)
	c.st(a64Sturh, aS4, fibPrm, to+4)
}

// fibNeigh is fibTable.neighbour for the struct's destination on the
// route's port, a probe of the snapshot's neighbour table (fib4Nat.neigh)
// that leaves the slot found in X9 or branches to f.noNeigh. X9: the
// address, then the slot; X10: the key; X11: the index; X13: the slots.
func (c *arm64Compiler) fibNeigh(f *fibExits) {
	const w = ^uint32(a64W)
	c.ld(a64LdurW, aS1, fibPrm, fibDst)
	c.w(a64RR(a64RevW, aS1, aS1)) // the address, host order
	c.ld(a64LdurW, aS2, fibRec, offRecIfindex)
	// fibNeighHash in W11.
	c.movImm(aS3, fibNeighK1)
	c.rrr(a64Mul&w, aS3, aS2, aS3)
	c.rrr(a64Eor&w, aS3, aS3, aS1)
	c.movImm(aS4, fibNeighK2)
	c.rrr(a64Mul&w, aS3, aS3, aS4)
	c.w(a64RRRShift(a64Eor&w|a64LSR, aS3, aS3, aS3, 16))
	c.w(a64RRRShift(a64Orr, aS2, aS1, aS2, 32)) // the key: ifindex<<32 | address
	c.ld(a64LdurW, aS4, fibNat, offFibNeighMask)
	c.rrr(a64And&w, aS3, aS3, aS4)
	c.ldr(aS5, fibNat, offFibNeigh)
	loop := len(c.b)
	c.w(a64RRRShift(a64Add, aS1, aS5, aS3, 4)) // the slot (16 bytes)
	c.ldr(aS4, aS1, 0)
	c.cmp(aS4, aS2)
	found := c.branch(aEQ)
	c.cmp(aS4, aZR)
	f.noNeigh = append(f.noNeigh, c.branch(aEQ))
	c.w(a64Imm12(a64AddImm&w, aS3, aS3, 1))
	c.ld(a64LdurW, aS4, fibNat, offFibNeighMask)
	c.rrr(a64And&w, aS3, aS3, aS4)
	c.patch(c.branch(aAL), loop)
	c.patch(found, len(c.b))
}

// fibTail emits the lookup's ends: the answers in X0, and the way to the
// slow path (Go runs the call from the start: X0, r0, is the call's to
// set).
func (c *arm64Compiler) fibTail(pc int, f *fibExits) {
	here := func(js []a64Fixup) {
		for _, j := range js {
			c.patch(j, len(c.b))
		}
	}
	answer := func(js []a64Fixup, v int64) {
		if len(js) == 0 {
			return
		}
		here(js)
		c.movImm(0, uint64(v))
		f.done = append(f.done, c.branch(aAL))
	}
	here(f.frag)
	c.st(a64Sturh, aS3, fibPrm, fibTotLen) // X11: the path MTU
	c.movImm(0, fibRetFragNeeded)
	f.done = append(f.done, c.branch(aAL))
	here(f.ret)
	c.rrr(a64Orr, 0, aZR, aS1)
	f.done = append(f.done, c.branch(aAL))
	if len(f.miss) > 0 { // IPv4's: table default may answer
		here(f.miss)
		f.notFwded = append(f.notFwded, c.flagBranch(fibLookupDirect, aNE))
		c.ld(a64LdurW, aS1, fibNat, offFibDflt)
		c.cmp(aS1, aZR)
		f.slow = append(f.slow, c.branch(aNE))
	}
	answer(f.notFwded, fibRetNotFwded)
	answer(f.noNeigh, fibRetNoNeigh)
	answer(f.noSrc, fibRetNoSrcAddr)
	answer(f.fwdDisabled, fibRetFwdDisabled)
	answer(f.enodev, -int64(syscall.ENODEV))
	here(f.slow)
	c.slowIf(aAL, pc)
	here(f.done)
}
