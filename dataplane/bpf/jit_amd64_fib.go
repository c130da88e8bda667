//go:build linux && amd64

package bpf

import "syscall"

// Native bpf_fib_lookup for the amd64 backend (jit_fib.go): an IPv4
// lookup (IPv6: jit_amd64_fib6.go) with plen 64 and flags among fibNatFlags, the struct checked as
// storeSlice checks it, from the snapshot of the Collection's table, with
// Runner.fibLookup's result and writes. What it does not answer goes to
// the slow path before anything is written, where Go runs the helper from
// the start: r1 not the context or no frame, another plen or flag, a
// struct failing its check, a table without a snapshot,
// a port past the snapshot's (when there are such), a miss in main with
// IPv4 routes in table default (without DIRECT) and an IPv6 gateway.
// r1-r5 are
// left as they were (saved in jitState while the lookup uses them).

// The scratch slots of the lookup (jitState.hs): r3, r2, the snapshot
// and r5 (which the IPv6 lookup uses).
const (
	fibSlotR3 = iota
	fibSlotR2
	fibSlotNat
	fibSlotR5
)

// fibLookup emits the call at pc and reports whether it did.
func (c *amd64Compiler) fibLookup(pc int) bool {
	if c.env.coll == nil {
		return false
	}
	c.frameArg(pc)
	c.aluRI(false, 7, xDX, fibSize) // plen: int32(r3)
	c.slowIf(ccNE, pc)
	c.testRI(false, xCX, ^int32(fibNatFlags)) // flags: uint32(r4)
	c.slowIf(ccNE, pc)
	m := c.checkIn(pc, 2, 0, fibSize, true, regionStack)
	c.rm(false, true, []byte{0x8d}, xAX, m, false) // lea RAX, the struct
	c.rm(false, false, []byte{0x80}, 7, prmMem(fibFamily), false)
	c.byte1(afInet6)
	v6 := c.jcc(ccE)
	c.rm(false, false, []byte{0x80}, 7, prmMem(fibFamily), false)
	c.byte1(afInet)
	other := c.jcc(ccNE)
	c.fibSave(false)
	f := fibExits{mtuOff: offRecMTU}
	// The table (Runner.fibTable: the Runner is bound to the program's
	// collection while its native code runs, jitBoundColl), and its
	// snapshot.
	c.movRI(xS1, int64(fibTableAddr(c.env.coll)))
	c.ldq(xS1, xS1, 0)
	c.aluRR(true, 0x85, xS1, xS1)
	f.enodev = append(f.enodev, c.jcc(ccE))
	c.ldq(xS1, xS1, offFibNat4)
	c.aluRR(true, 0x85, xS1, xS1)
	f.slow = append(f.slow, c.jcc(ccE))
	c.stq(xS1, xCtx, offHS+8*fibSlotNat)
	c.fibInPort(&f, offFibNIfs, offFibIfs, offFibFar)
	c.fibWalk(&f)
	c.fibAnswer(&f)
	c.fibTail(pc, &f)
	end := c.jmp()
	c.patch(v6, len(c.b))
	c.fib6Lookup(pc)
	done := c.jmp()
	// Another family: -EAFNOSUPPORT with nothing written, as fibLookup
	// answers once the checks above have passed, table or none.
	c.patch(other, len(c.b))
	c.movRI(xAX, -int64(syscall.EAFNOSUPPORT))
	c.patch(end, len(c.b))
	c.patch(done, len(c.b))
	return true
}

// fibExits are the jumps to the lookup's ends; mtuOff is the record's
// path MTU (fib4Rec's or fib6Rec's), r5 whether r5 was saved.
type fibExits struct {
	slow, enodev, fwdDisabled, noNeigh, noSrc, notFwded, miss, frag, ret, done []int
	mtuOff                                                                     int32
	r5                                                                         bool
}

// fibSave saves r2-r4 (and r5) in jitState for fibRestore.
func (c *amd64Compiler) fibSave(r5 bool) {
	c.stq(xCX, xCtx, offSpill)
	c.stq(xDX, xCtx, offHS+8*fibSlotR3)
	c.stq(xSI, xCtx, offHS+8*fibSlotR2)
	if r5 {
		c.stq(xR8, xCtx, offHS+8*fibSlotR5)
	}
}

func prmMem(off int32) xmem { return xmem{base: xAX, index: -1, disp: off} }
func recMem(off int32) xmem { return xmem{base: xDI, index: -1, disp: off} }
func natMem(off int32) xmem { return xmem{base: xS1, index: -1, disp: off} }

// ld32 and st32: 32-bit load and store; ld8z and ld16z zero-extend.
func (c *amd64Compiler) ld32(dst uint8, m xmem) { c.rm(false, false, []byte{0x8b}, dst, m, false) }
func (c *amd64Compiler) st32(src uint8, m xmem) { c.rm(false, false, []byte{0x89}, src, m, false) }
func (c *amd64Compiler) st16(src uint8, m xmem) { c.rm(true, false, []byte{0x89}, src, m, false) }
func (c *amd64Compiler) ld8z(dst uint8, m xmem) {
	c.rm(false, false, []byte{0x0f, 0xb6}, dst, m, false)
}
func (c *amd64Compiler) ld16z(dst uint8, m xmem) {
	c.rm(false, false, []byte{0x0f, 0xb7}, dst, m, false)
}

// flagTest tests the flags' bits in mask (r4, saved in the spill slot).
func (c *amd64Compiler) flagTest(mask uint8) {
	c.rm(false, false, []byte{0xf6}, 0, ctxMem(offSpill), false)
	c.byte1(mask)
}

// fibInPort is fibStart: params->ifindex must be a port (-ENODEV) with
// the family's forwarding on (FWD_DISABLED). The snapshot is in S1, its
// nIfs, ifs and far fields at the offsets given.
func (c *amd64Compiler) fibInPort(f *fibExits, nIfs, ifs, farOff int32) {
	c.ld32(xDX, prmMem(fibIfindex))
	c.rm(false, false, []byte{0x3b}, xDX, natMem(nIfs), false)
	far := c.jcc(ccAE)
	c.ldq(xS2, xS1, ifs)
	c.ld8z(xDX, xmem{base: xS2, index: int8(xDX)})
	c.testRI(false, xDX, fibIfUp)
	f.enodev = append(f.enodev, c.jcc(ccE))
	c.testRI(false, xDX, fibIfFwd)
	f.fwdDisabled = append(f.fwdDisabled, c.jcc(ccE))
	known := c.jmp()
	c.patch(far, len(c.b))
	c.rm(false, false, []byte{0x83}, 7, natMem(farOff), false)
	c.byte1(0)
	f.slow = append(f.slow, c.jcc(ccNE))
	f.enodev = append(f.enodev, c.jmp())
	c.patch(known, len(c.b))
}

// fibWalk is lpm4.match on main's trie for params->ipv4_dst, leaving the
// route's record in RDI (a miss jumps to f.miss). The snapshot is in S1.
func (c *amd64Compiler) fibWalk(f *fibExits) {
	c.ld32(xDX, prmMem(fibDst))
	c.rex(false, 0, 0, xDX, false)
	c.byte1(0x0f, 0xc8|xDX&7) // bswap EDX: the address, host order
	c.ldq(xDI, xS1, offFibRoot)
	c.aluRR(true, 0x85, xDI, xDI)
	f.miss = append(f.miss, c.jcc(ccE))
	c.ld32(xCX, natMem(offFibRootShift))
	c.aluRR(false, 0x89, xS2, xDX)
	c.rr(false, false, []byte{0xd3}, 5, xS2, false) // shr r10d, cl
	c.shiftI(true, 4, xS2, 2)
	c.ld32(xS2, xmem{base: xDI, index: int8(xS2)})
	c.ldq(xDI, xS1, offFibNodes)
	loop := len(c.b)
	c.aluRR(false, 0x85, xS2, xS2)
	leaf := c.jcc(0x9) // jns: no lpmChild bit
	c.aluRI(false, 4, xS2, lpmChild-1)
	c.shiftI(false, 4, xS2, 8)
	c.aluRI(false, 5, xCX, 8)
	c.aluRR(false, 0x89, xS1, xDX)
	c.rr(false, false, []byte{0xd3}, 5, xS1, false)         // shr r9d, cl
	c.rr(false, false, []byte{0x0f, 0xb6}, xS1, xS1, false) // movzx r9d, r9b
	c.aluRR(false, 0x09, xS2, xS1)
	c.shiftI(true, 4, xS2, 2)
	c.ld32(xS2, xmem{base: xDI, index: int8(xS2)})
	c.jmpTo(loop)
	c.patch(leaf, len(c.b))
	c.aluRR(false, 0x85, xS2, xS2)
	f.miss = append(f.miss, c.jcc(ccE))
	c.ldq(xS1, xCtx, offHS+8*fibSlotNat)
	c.ldq(xDI, xS1, offFibRecs)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false) // imul: the group's record
	c.imm32(sizeFib4Rec)
	c.rm(false, true, []byte{0x8d}, xDI, xmem{base: xDI, index: int8(xS2), disp: -sizeFib4Rec}, false)
}

// fibAnswerChecks begins both families' answers for the record in RDI
// (its fields ret, how and mtu at those offsets): a reject or local
// route's code, Go's cases, then checkFIBMTU's FRAG_NEEDED, all before
// anything is written.
func (c *amd64Compiler) fibAnswerChecks(f *fibExits, ret, how, mtu int32) {
	c.ld8z(xS2, recMem(ret))
	c.aluRR(false, 0x85, xS2, xS2)
	f.ret = append(f.ret, c.jcc(ccNE))
	c.ld8z(xS2, recMem(how))
	c.aluRI(false, 7, xS2, fibRecGW)
	gw := c.jcc(ccE)
	c.aluRI(false, 7, xS2, fibRecDirect)
	f.slow = append(f.slow, c.jcc(ccNE))
	c.patch(gw, len(c.b))
	c.ld16z(xS2, prmMem(fibTotLen))
	c.rm(false, false, []byte{0x3b}, xS2, recMem(mtu), false)
	f.frag = append(f.frag, c.jcc(ccA))
}

// fibAnswer is the rest of lookup4 for the route whose record is in RDI.
func (c *amd64Compiler) fibAnswer(f *fibExits) {
	c.fibAnswerChecks(f, offRecRet, offRecHow, offRecMTU)
	c.ld32(xS2, recMem(offRecMetric))
	c.st32(xS2, prmMem(fibMetric))
	c.ld32(xS2, recMem(offRecIfindex))
	c.st32(xS2, prmMem(fibIfindex))
	c.flagTest(fibLookupSrc)
	noSrc := c.jcc(ccE)
	c.ld32(xS2, recMem(offRecSrc))
	c.st32(xS2, prmMem(fibSrc))
	c.patch(noSrc, len(c.b))
	c.rm(false, false, []byte{0x80}, 7, recMem(offRecHow), false)
	c.byte1(fibRecGW)
	noGW := c.jcc(ccNE)
	c.ld32(xS2, recMem(offRecGW))
	c.st32(xS2, prmMem(fibDst))
	c.patch(noGW, len(c.b))
	// fibFinish.
	c.flagTest(fibLookupSkipNeigh)
	skip := c.jcc(ccNE)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRecHow), false)
	c.byte1(fibRecGW)
	direct := c.jcc(ccNE)
	c.rm(false, false, []byte{0x80}, 7, recMem(offRecNeigh), false)
	c.byte1(0)
	f.noNeigh = append(f.noNeigh, c.jcc(ccE))
	c.copyMAC(recMem(offRecDmac), fibDmac)
	smac := c.jmp()
	c.patch(direct, len(c.b))
	c.fibNeigh(f)
	c.copyMAC(xmem{base: xS2, index: -1, disp: offSlotMAC}, fibDmac)
	c.patch(smac, len(c.b))
	c.copyMAC(recMem(offRecSmac), fibSmac)
	c.patch(skip, len(c.b))
	c.fibSuccess(f, recMem(offRecMTU))
}

// fibSuccess ends a lookup that forwards, its writes but these done:
// vlan_proto and vlan_TCI cleared, tot_len the path MTU at mtu, r0
// SUCCESS.
func (c *amd64Compiler) fibSuccess(f *fibExits, mtu xmem) {
	c.rm(false, false, []byte{0xc7}, 0, prmMem(fibVlanProto), false) // vlan_proto and vlan_TCI
	c.imm32(0)
	c.ld32(xS2, mtu)
	c.st16(xS2, prmMem(fibTotLen))
	c.aluRR(false, 0x31, xAX, xAX) // SUCCESS
	f.done = append(f.done, c.jmp())
}

// copyMAC copies the 6 bytes at from to the struct's bytes at off; S1 is
// clobbered.
func (c *amd64Compiler) copyMAC(from xmem, off int32) {
	c.ld32(xS1, from)
	c.st32(xS1, prmMem(off))
	from.disp += 4
	c.ld16z(xS1, from)
	c.st16(xS1, prmMem(off+4))
}

// fibNeigh is fibTable.neighbour for the struct's destination on the
// route's port (RDI: its record), a probe of the snapshot's neighbour
// table (fib4Nat.neigh) that leaves the slot found in S2 or jumps to
// f.noNeigh. RCX, RDX, RSI and S1 are clobbered.
func (c *amd64Compiler) fibNeigh(f *fibExits) {
	c.ld32(xDX, prmMem(fibDst))
	c.rex(false, 0, 0, xDX, false)
	c.byte1(0x0f, 0xc8|xDX&7) // bswap EDX: the address, host order
	c.ld32(xCX, recMem(offRecIfindex))
	// fibNeighHash in ESI.
	c.rm(false, false, []byte{0x69}, xSI, recMem(offRecIfindex), false) // imul esi, [ifindex], K1
	k1, k2 := uint32(fibNeighK1), uint32(fibNeighK2)
	c.imm32(int32(k1))
	c.aluRR(false, 0x31, xSI, xDX)
	c.rr(false, false, []byte{0x69}, xSI, xSI, false)
	c.imm32(int32(k2))
	c.aluRR(false, 0x89, xS1, xSI)
	c.shiftI(false, 5, xS1, 16)
	c.aluRR(false, 0x31, xSI, xS1)
	// The key in RCX.
	c.shiftI(true, 4, xCX, 32)
	c.aluRR(true, 0x09, xCX, xDX)
	c.ldq(xS1, xCtx, offHS+8*fibSlotNat)
	c.rm(false, false, []byte{0x23}, xSI, natMem(offFibNeighMask), false) // and
	c.ldq(xS2, xS1, offFibNeigh)
	loop := len(c.b)
	c.aluRR(false, 0x89, xDX, xSI)
	c.shiftI(true, 4, xDX, 4)
	slot := xmem{base: xS2, index: int8(xDX)}
	c.rm(false, true, []byte{0x3b}, xCX, slot, false) // cmp RCX, the slot's key
	found := c.jcc(ccE)
	c.cmpMemI(slot, 0)
	f.noNeigh = append(f.noNeigh, c.jcc(ccE))
	c.aluRI(false, 0, xSI, 1)
	c.rm(false, false, []byte{0x23}, xSI, natMem(offFibNeighMask), false)
	c.jmpTo(loop)
	c.patch(found, len(c.b))
	c.aluRR(true, 0x01, xS2, xDX)
}

// fibTail emits the lookup's ends: the answers, then r2-r4 restored (r1 is
// the context: frameArg checked it), and the way to the slow path.
func (c *amd64Compiler) fibTail(pc int, f *fibExits) {
	here := func(js []int) {
		for _, j := range js {
			c.patch(j, len(c.b))
		}
	}
	answer := func(js []int, v int64) {
		if len(js) == 0 {
			return
		}
		here(js)
		c.movRI(xAX, v)
		f.done = append(f.done, c.jmp())
	}
	here(f.frag)
	c.ld32(xS2, recMem(f.mtuOff))
	c.st16(xS2, prmMem(fibTotLen))
	c.movRI(xAX, fibRetFragNeeded)
	f.done = append(f.done, c.jmp())
	here(f.ret)
	c.aluRR(false, 0x89, xAX, xS2)
	f.done = append(f.done, c.jmp())
	if len(f.miss) > 0 {
		here(f.miss)
		c.flagTest(fibLookupDirect)
		f.notFwded = append(f.notFwded, c.jcc(ccNE))
		c.ldq(xS1, xCtx, offHS+8*fibSlotNat)
		c.rm(false, false, []byte{0x83}, 7, natMem(offFibDflt), false)
		c.byte1(0)
		f.slow = append(f.slow, c.jcc(ccNE))
	}
	answer(f.notFwded, fibRetNotFwded)
	answer(f.noNeigh, fibRetNoNeigh)
	answer(f.noSrc, fibRetNoSrcAddr)
	answer(f.fwdDisabled, fibRetFwdDisabled)
	answer(f.enodev, -int64(syscall.ENODEV))
	here(f.slow)
	c.fibRestore(f.r5)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	here(f.done)
	c.fibRestore(f.r5)
}

// fibRestore gives r1-r4 (and r5) back their values.
func (c *amd64Compiler) fibRestore(r5 bool) {
	c.ldq(xCX, xCtx, offSpill)
	c.ldq(xDX, xCtx, offHS+8*fibSlotR3)
	c.ldq(xSI, xCtx, offHS+8*fibSlotR2)
	if r5 {
		c.ldq(xR8, xCtx, offHS+8*fibSlotR5)
	}
	c.movRI(xDI, int64(regionCtx<<32))
}
